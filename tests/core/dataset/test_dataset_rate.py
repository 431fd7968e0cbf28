"""The dataset is written at the project's engine's rate, from working copies that keep the recording's own rate.

A recording holds a 15 kHz partial (the top of a voice's sibilants lives up there). XTTS v2 trains at 22 050 Hz and
can hear nothing above 11 kHz; F5-TTS trains at 24 kHz and must get the band up to 12 kHz the recording has, and
so on for an engine at 44.1 kHz. A project imported by the old importer (22 050 Hz working copies) gets its copies
made again from the originals, once, when an engine needs more.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile as sf

from alltalk_gui.core.audio import decode as audio
from alltalk_gui.core.dataset.export import export_dataset
from alltalk_gui.core.dataset.info import INFO_FILE, format_rate, mismatch, read_info
from alltalk_gui.core.engine_api.engine import get_engine
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.project.importer import import_files
from alltalk_gui.core.transcript.segments import SegmentList
from tests.core.transcript.test_segments_support import segment, voice_like

TONE_HZ = 11_500  # above XTTS's 11,025 Hz band edge, inside F5's 12 kHz


def recording(rate: int, seconds: float = 8.0) -> np.ndarray:
    """A voice-like tone with a steady partial at :data:`TONE_HZ` and one at 15 kHz, at ``rate``."""
    t = np.arange(int(seconds * rate)) / rate
    return (voice_like(seconds, rate) + 0.03 * np.sin(2 * np.pi * TONE_HZ * t)
            + 0.03 * np.sin(2 * np.pi * 15_000 * t)).astype(np.float32)


def band_level(samples: np.ndarray, rate: int, hz: float) -> float:
    """The strongest bin within 100 Hz of ``hz``, in dB below the strongest bin of all (the voice's fundamental); a
    Hann window keeps the clip's cut edges from smearing the tones over the whole spectrum."""
    spectrum = np.abs(np.fft.rfft(samples.astype(np.float64) * np.hanning(samples.size)))
    freqs = np.fft.rfftfreq(samples.size, 1 / rate)
    near = spectrum[(freqs > hz - 100) & (freqs < hz + 100)]
    if near.size == 0:
        return -np.inf  # above the Nyquist frequency: not there at all
    return float(20 * np.log10(near.max() / spectrum.max()))


def project_with(tmp_path, rate: int, engine: str) -> VoiceProject:
    source = tmp_path / f"take at {rate}.wav"
    sf.write(source, recording(rate), rate, subtype="PCM_24")
    project = VoiceProject.create(tmp_path / "voice", language="en")
    project.choose_engine(engine)
    assert import_files(project, [source]).rejected == []
    SegmentList.create(project, [segment("c00001", project.sources[0].id, 500, 3500, "The first clip of my voice."),
                                 segment("c00002", project.sources[0].id, 4000, 7500, "A second clip follows it.")])
    return project


@pytest.mark.parametrize("rate", [44_100, 48_000])
def test_an_f5_dataset_is_written_at_24khz_with_the_recordings_top_band(tmp_path, rate):
    project = project_with(tmp_path, rate, "f5")
    assert sf.info(project.path(project.sources[0].audio_file)).samplerate == rate  # the working copy kept it
    report = export_dataset(project)
    assert report.sample_rate == 24_000
    clip, clip_rate = sf.read(project.dataset_dir / "wavs" / "c00001.wav", dtype="float32")
    assert clip_rate == 24_000 and clip.size == 3 * 24_000
    assert band_level(clip, clip_rate, TONE_HZ) > -30  # content above 11 kHz, as the recording has it
    assert band_level(clip, clip_rate, 15_000) == -np.inf  # above F5's band: filtered, not folded (24 - 15 = 9 kHz)
    assert band_level(clip, clip_rate, 9_000) < -80
    assert read_info(project.dataset_dir).to_dict() == {"engine": "f5", "sample_rate": 24_000}
    assert mismatch(project.dataset_dir, get_engine("f5")) is None


def test_an_xtts_dataset_is_written_at_22050hz(tmp_path):
    project = project_with(tmp_path, 48_000, "xtts")
    report = export_dataset(project)
    clip, clip_rate = sf.read(project.dataset_dir / "wavs" / "c00001.wav", dtype="float32")
    assert report.sample_rate == clip_rate == 22_050 and clip.size == int(3 * 22_050)
    assert band_level(clip, clip_rate, 10_000) < -80 and band_level(clip, clip_rate, TONE_HZ) == -np.inf
    assert json.loads((project.dataset_dir / INFO_FILE).read_text()) == {"engine": "xtts", "sample_rate": 22_050}
    f5 = get_engine("f5")
    assert mismatch(project.dataset_dir, f5) == ("The dataset was written at 22,050 Hz; F5-TTS v1 trains at 24 kHz. "
                                                 "Export it again to write it at that rate from the recordings.")


def test_an_old_projects_22050hz_working_copy_is_made_again_from_the_original_for_f5(tmp_path):
    """The importer before working copies kept their rate: a 22 050 Hz copy of a 48 kHz original. An F5 export makes
    the copy again from the original, once, on the same timeline; an XTTS export has no reason to."""
    project = project_with(tmp_path, 48_000, "xtts")
    source = project.sources[0]
    original, rate = sf.read(project.path(source.file), dtype="float32")
    old_copy = audio.normalise(audio.resample(original, rate, 22_050), 22_050)
    audio.write_wav(project.path(source.audio_file), old_copy, 22_050)  # what the old importer wrote

    assert export_dataset(project).remade == 0  # XTTS gains nothing from a new copy: the old one stays
    assert sf.info(project.path(source.audio_file)).samplerate == 22_050

    project.choose_engine("f5")
    done = []
    report = export_dataset(project, progress=lambda *step: done.append(step))
    assert report.remade == 1 and report.notes == []
    assert done == [(1, 3), (2, 3), (3, 3)]  # the remade copy, then the two clips
    assert sf.info(project.path(source.audio_file)).samplerate == 48_000
    clip, clip_rate = sf.read(project.dataset_dir / "wavs" / "c00001.wav", dtype="float32")
    assert clip_rate == 24_000 and band_level(clip, clip_rate, TONE_HZ) > -30
    # The same span of the voice, at the same level: the clip lines up with the old copy's (resampled) clip.
    old_clip = audio.resample(old_copy[int(0.5 * 22_050):int(3.5 * 22_050)], 22_050, 24_000)
    n = min(old_clip.size, clip.size)
    assert np.corrcoef(old_clip[:n], clip[:n])[0, 1] > 0.95
    assert export_dataset(project).remade == 0  # once


def test_a_copy_whose_original_cannot_be_read_is_kept_as_it_is(tmp_path):
    project = project_with(tmp_path, 48_000, "xtts")
    source = project.sources[0]
    original, rate = sf.read(project.path(source.file), dtype="float32")
    audio.write_wav(project.path(source.audio_file), audio.resample(original, rate, 22_050), 22_050)
    project.path(source.file).write_bytes(b"not audio any more")
    project.choose_engine("f5")
    report = export_dataset(project)
    assert report.remade == 0 and report.notes == []  # an unreadable original has no rate: nothing to gain
    assert sf.info(project.dataset_dir / "wavs" / "c00001.wav").samplerate == 24_000


def test_rates_read_as_people_write_them():
    assert [format_rate(r) for r in (22_050, 24_000, 44_100, 16_000)] == ["22,050 Hz", "24 kHz", "44.1 kHz", "16 kHz"]


def test_a_dataset_without_info_is_described_by_its_first_wav(tmp_path):
    folder = tmp_path / "dataset"
    (folder / "wavs").mkdir(parents=True)
    sf.write(folder / "wavs" / "a.wav", np.zeros(2205, np.float32), 22_050)
    info = read_info(folder)
    assert (info.engine, info.sample_rate) == (None, 22_050)
    assert mismatch(folder, get_engine("xtts")) is None
    assert "24 kHz" in mismatch(folder, get_engine("f5"))
    (folder / INFO_FILE).write_text("{not json")
    assert read_info(folder).engine is None
    assert read_info(tmp_path / "nothing") is None
