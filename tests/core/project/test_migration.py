"""A project folder in the format of November 2026 (before the engine shaped its data) opens, exports and trains as
before, and is migrated once.

The folder is built the way the app of that time left it: project.json at schema 1 with the engine in
``settings['engine']`` or nowhere, 48 kHz originals in ``sources/`` with 22 050 Hz working copies in ``audio/``,
segments.json with its flags and an edit, and a dataset exported at 22 050 Hz without ``dataset_info.json``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from alltalk_gui.core.audio import decode as audio
from alltalk_gui.core.dataset.engine_switch import dataset_note, rewrite_dataset, switch_engine
from alltalk_gui.core.dataset.export import export_dataset
from alltalk_gui.core.dataset.metadata import EVAL_CSV, TRAIN_CSV, MetadataRow, write_metadata
from alltalk_gui.core.project.folder import BACKUP_FILE, VoiceProject
from alltalk_gui.core.project.lock import ProjectLock
from alltalk_gui.core.transcript.segments import Segment, SegmentList
from alltalk_gui.testing.speech import espeak_available
from tests.core.transcript.test_segments_support import SENTENCES, spoken_sentences

pytestmark = pytest.mark.skipif(not espeak_available(), reason="espeak-ng is not installed")

ORIGINAL_RATE, OLD_WORKING_RATE = 48_000, 22_050


def old_project(root: Path, tmp: Path, settings: dict) -> dict:
    """Write a project as the app of November 2026 did; returns what the test compares against."""
    speech, bounds = spoken_sentences(tmp / "espeak", SENTENCES[:5])
    original = audio.resample(speech, OLD_WORKING_RATE, ORIGINAL_RATE)  # a 48 kHz recording
    t = np.arange(original.size) / ORIGINAL_RATE
    original = (original + 0.01 * np.sin(2 * np.pi * 11_500 * t)).astype(np.float32)  # content above 11 kHz
    (root / "sources").mkdir(parents=True)
    (root / "audio").mkdir()
    sf.write(root / "sources" / "reading.wav", original, ORIGINAL_RATE, subtype="PCM_24")
    # The old importer: mono -> 22 050 Hz -> one gain to -20 dBFS speech -> 16-bit.
    working = audio.normalise(audio.resample(original, ORIGINAL_RATE, OLD_WORKING_RATE), OLD_WORKING_RATE)
    audio.write_wav(root / "audio" / "a1b2c3d4e5f6.wav", working, OLD_WORKING_RATE)
    project_json = {
        "schema_version": 1, "name": "Old voice", "language": "en", "created": "2026-11-02T09:00:00+00:00",
        "settings": settings,
        "sources": [{"id": "a1b2c3d4e5f6", "name": "reading.wav", "file": "sources/reading.wav",
                     "audio_file": "audio/a1b2c3d4e5f6.wav", "sha256": "a1b2c3d4e5f6" + "0" * 52,
                     "size_bytes": (root / "sources" / "reading.wav").stat().st_size,
                     "imported_at": "2026-11-02T09:01:00+00:00", "original_path": "/home/me/reading.wav",
                     "analysis": {"duration_s": original.size / ORIGINAL_RATE, "sample_rate": ORIGINAL_RATE,
                                  "channels": 1, "codec": "pcm_s24le", "bit_depth": 24, "container": "wav"},
                     "verdict": "ok", "reasons": []}]}
    (root / "project.json").write_text(json.dumps(project_json, indent=2), encoding="utf-8")
    clips = [Segment(f"c{i + 1:05d}", "a1b2c3d4e5f6", int(start * 1000) - 150, int(end * 1000) + 150, text)
             for i, ((start, end), text) in enumerate(zip(bounds, SENTENCES[:5]))]
    clips[1] = Segment(clips[1].id, clips[1].source_id, clips[1].start_ms, clips[1].end_ms,
                       "Please remember to bring your umbrella tomorrow.")  # an edit the user made
    # segments.json as that version wrote it: flags judged by XTTS v2, its checked_with without an engine.
    (root / "segments.json").write_text(json.dumps({
        "schema_version": 1, "settings": {"language": "en", "min_s": 2.0, "max_s": 11.0},
        "transcription": {"backend": "faster-whisper", "model": "small", "language": "en"},
        "next_number": 6, "checked_with": {"language": "en", "min_ms": 2000, "max_ms": 11000, "vocab": None},
        "segments": [c.to_dict() for c in clips]}, indent=1), encoding="utf-8")
    # The dataset that version exported: the clips cut from the 22 050 Hz copy, split 4 + 1, no dataset_info.json.
    wavs = root / "dataset" / "wavs"
    wavs.mkdir(parents=True)
    for clip in clips:
        audio.write_wav(wavs / f"{clip.id}.wav", working[clip.start_ms * OLD_WORKING_RATE // 1000:
                                                         clip.end_ms * OLD_WORKING_RATE // 1000], OLD_WORKING_RATE)
    rows = {c.id: MetadataRow(f"wavs/{c.id}.wav", c.text, "Old_voice") for c in clips}
    train_ids, eval_ids = export_split(clips)
    write_metadata(root / "dataset" / TRAIN_CSV, [rows[i] for i in train_ids])
    write_metadata(root / "dataset" / EVAL_CSV, [rows[i] for i in eval_ids])
    return {"project.json": project_json, "clips": clips,
            "dataset": {p.relative_to(root).as_posix(): p.read_bytes() for p in (root / "dataset").rglob("*")
                        if p.is_file()}}


def export_split(clips: list[Segment]) -> tuple[list[str], list[str]]:
    from alltalk_gui.core.dataset.export import DEFAULT_EVAL_SPLIT, split_train_eval

    return split_train_eval([c.id for c in clips], DEFAULT_EVAL_SPLIT, 0)


@pytest.fixture(scope="module")
def old(tmp_path_factory) -> tuple[Path, dict]:
    """One old XTTS project (no engine named), kept pristine: each test works on a copy."""
    base = tmp_path_factory.mktemp("old")
    return base / "voice", old_project(base / "voice", base, {"theme": "dark"})


def copy_of(old: tuple[Path, dict], tmp_path: Path) -> tuple[Path, dict]:
    root, made = old
    shutil.copytree(root, tmp_path / "voice")
    return tmp_path / "voice", made


def test_it_opens_as_xtts_and_is_migrated_once_by_its_writer(old, tmp_path):
    root, made = copy_of(old, tmp_path)
    project = VoiceProject.open(root)  # a reader: nothing is written
    assert (project.engine, project.settings, project.migrated_from) == ("xtts", {"theme": "dark"}, 1)
    assert json.loads((root / "project.json").read_text()) == made["project.json"]
    with ProjectLock.acquire(root, "alltalk-gui dataset"):
        project = VoiceProject.open(root)
    saved = json.loads((root / "project.json").read_text())
    assert (saved["schema_version"], saved["engine"], saved["settings"]) == (2, "xtts", {"theme": "dark"})
    assert saved["sources"] == made["project.json"]["sources"]  # nothing else changed
    assert json.loads((root / BACKUP_FILE).read_text()) == made["project.json"]  # the old file, kept once
    clips = SegmentList.open(project)
    assert [c.text for c in clips] == [c.text for c in made["clips"]]  # the edit is there
    assert dataset_note(project) is None  # a 22 050 Hz dataset is what XTTS v2 trains on


def test_it_exports_as_before(old, tmp_path):
    """The same working copies, the same engine: the dataset written today is byte for byte the old one."""
    root, made = copy_of(old, tmp_path)
    project = VoiceProject.open(root)
    clips = SegmentList.open(project)
    assert not clips.is_checked_with_current_checker()  # judged by an older version: checked again once
    report = export_dataset(project)
    assert (report.sample_rate, report.remade, report.refused) == (22_050, 0, [])
    written = {p.relative_to(root).as_posix(): p.read_bytes() for p in (root / "dataset").rglob("*") if p.is_file()}
    assert json.loads(written.pop("dataset/dataset_info.json")) == {"engine": "xtts", "sample_rate": 22_050}
    assert written == made["dataset"]
    assert sf.info(project.path(project.sources[0].audio_file)).samplerate == OLD_WORKING_RATE  # not touched


def test_it_trains_as_before(old, tmp_path, tiny):
    """Training on the dataset exported today takes the same steps with the same losses as on the old one."""
    from alltalk_gui.core.training.events import Done, Step
    from alltalk_gui.core.training.loop import train
    from tests.core.training.tiny_training import fast_config

    root, _made = copy_of(old, tmp_path)
    before = tmp_path / "before"
    shutil.copytree(root, before)  # the old dataset, trained on as it was
    export_dataset(VoiceProject.open(root))

    def losses(project: Path) -> list[float]:
        events = list(train(fast_config(project, tiny, "r", batch_size=2, epochs=1)))
        assert isinstance(events[-1], Done) and events[-1].reason == "finished"
        return [e.loss for e in events if isinstance(e, Step)]

    old_losses = losses(before)
    assert len(old_losses) == 2 and losses(root) == old_losses


def test_an_old_f5_project_gets_its_dataset_at_24khz_from_the_originals(tmp_path):
    """An old project that chose F5-TTS (settings['engine']) trained on 22 050 Hz clips; it is told so, and one
    switch to the engine it has (``alltalk-gui engine DIR f5``) writes the dataset again at 24 kHz from the 48 kHz
    originals, with the content above 11 kHz, and every clip where it was."""
    root = tmp_path / "voice"
    made = old_project(root, tmp_path, {"engine": "f5"})
    project = VoiceProject.open(root)
    assert project.engine == "f5"
    assert "written at 22,050 Hz; F5-TTS v1 trains at 24 kHz" in dataset_note(project)
    clips = SegmentList.open(project)
    change = switch_engine(project, "f5", clips)
    assert not change.changes_anything and change.rewrite
    assert change.messages() == ["The project already trains with F5-TTS v1.",
                                 "The dataset will be written again at 24 kHz (it was 22,050 Hz), from the recordings."]
    report = rewrite_dataset(project, clips)
    assert (report.remade, report.sample_rate, report.refused) == (1, 24_000, [])
    assert sf.info(root / "audio" / "a1b2c3d4e5f6.wav").samplerate == ORIGINAL_RATE  # made again, once
    assert dataset_note(project) is None
    clip, rate = sf.read(root / "dataset" / "wavs" / "c00002.wav", dtype="float32")
    spectrum = np.abs(np.fft.rfft(clip * np.hanning(clip.size)))
    freqs = np.fft.rfftfreq(clip.size, 1 / rate)
    assert spectrum[(freqs > 11_400) & (freqs < 11_600)].max() > 100 * np.median(spectrum[freqs > 11_000])
    edited = made["clips"][1]
    assert clip.size == pytest.approx((edited.end_ms - edited.start_ms) * 24, abs=1)  # the same span, at 24 kHz
    assert [c.text for c in SegmentList.open(project)] == [c.text for c in made["clips"]]
