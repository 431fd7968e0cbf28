"""Issue 18 item 2: decoding is bounded by what a header may claim, and happens block by block with the mixdown
done as it goes; a file that fails in any way is refused alone and the batch goes on."""

from __future__ import annotations

import struct
import tracemalloc

import numpy as np
import pytest
import soundfile as sf

from alltalk_gui.core.audio import blocks
from alltalk_gui.core.audio.analysis import frame_levels_dbfs
from alltalk_gui.core.audio import decode as audio
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.project.importer import import_files


def _flac_claiming(path, rate, channels, claimed_s):
    """A FLAC of a few ms of silence whose STREAMINFO says it lasts ``claimed_s`` seconds (a forged header)."""
    sf.write(path, np.zeros((rate // 100, channels), np.float32), rate, format="FLAC", subtype="PCM_16")
    data = bytearray(path.read_bytes())
    assert data[:4] == b"fLaC" and data[4] & 0x7F == 0  # STREAMINFO is the first block
    # STREAMINFO bytes 10..17 (after the 8-byte header): 20 bits rate, 3 bits channels-1, 5 bits bits-1, 36 bits
    # total samples. Keep the first 28 bits, replace the sample count.
    packed = struct.unpack(">Q", data[18:26])[0]
    packed = (packed & ~((1 << 36) - 1)) | int(claimed_s * rate)
    data[18:26] = struct.pack(">Q", packed)
    path.write_bytes(bytes(data))
    return path


def _voice(path, seconds=2.0, rate=44100, channels=2):
    t = np.arange(int(seconds * rate)) / rate
    x = 0.3 * np.sin(2 * np.pi * 180 * t) * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t))
    sf.write(path, np.stack([x * (1 - 0.1 * c) for c in range(channels)], axis=1).astype(np.float32), rate)
    return path


def test_a_small_flac_claiming_gigabytes_is_refused_and_the_good_file_of_the_batch_is_imported(tmp_path):
    bomb = _flac_claiming(tmp_path / "bomb.flac", 655_350, 8, 600)
    info = sf.info(bomb)
    # The accident as reported: a file of a few kB whose header asks for 11.7 GiB once decoded.
    assert bomb.stat().st_size < 100_000 and info.frames == 600 * 655_350 and info.channels == 8
    assert info.frames * info.channels * 4 / 1024**3 == pytest.approx(11.7, abs=0.05)
    good = _voice(tmp_path / "good.wav")
    project = VoiceProject.create(tmp_path / "p")

    report = import_files(project, [bomb, good])

    assert [s.name for s in report.imported] == ["good.wav"]
    assert len(report.rejected) == 1 and "bomb.flac states a sample rate of 655,350 Hz" in report.rejected[0].reason
    files = sorted(p.relative_to(project.root).as_posix() for p in project.root.rglob("*") if p.is_file())
    assert files == ["audio/" + report.imported[0].id + ".wav", "project.json", "project.json.bak",
                     "sources/good.wav"]
    assert [s.name for s in VoiceProject.open(project.root).sources] == ["good.wav"]


def test_rate_times_channels_times_length_is_capped(tmp_path):
    big = _flac_claiming(tmp_path / "big.flac", 384_000, 8, 180)  # within the rate and channel limits
    with pytest.raises(audio.AudioError, match=r"would need 2\.1 GiB of memory to decode .*the limit is 2 GiB"):
        audio.probe(big)
    with pytest.raises(audio.AudioError, match="would need"):
        audio.load(big)


def test_more_than_32_channels_is_refused(tmp_path):
    wide = tmp_path / "wide.wav"
    sf.write(wide, np.zeros((100, 33), np.float32), 8000)
    with pytest.raises(audio.AudioError, match="states 33 channels; the limit is 32"):
        audio.probe(wide)


def test_the_working_copy_is_mixed_down_block_by_block_without_the_multichannel_array(tmp_path):
    rate, channels, seconds = 44100, 8, 20.0
    path = _voice(tmp_path / "eight.wav", seconds, rate, channels)
    whole = seconds * rate * channels * 4
    tracemalloc.start()
    try:
        info, analysis = audio.make_working_copy(path, tmp_path / "work.wav")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # The whole 8-channel array would be 28 MB; the mono mix is 3.5 MB, plus resampling and normalising.
    assert peak < 0.5 * whole, f"peak {peak / 1e6:.1f} MB"
    # The numbers are those of the whole-array analysis; the thumbnail is the same curve.
    x, sr = audio.load(path)
    expected = audio.analyse(x, sr)
    for key in ("duration_s", "peak_dbfs", "clipped_fraction", "silence_fraction", "speech_level_dbfs",
                "noise_floor_dbfs", "snr_db", "steady"):
        assert analysis[key] == pytest.approx(expected[key], abs=0.011), key
    assert len(analysis["envelope"]) == len(expected["envelope"]) == 120
    assert np.allclose(analysis["envelope"], expected["envelope"], atol=0.02)
    work, work_rate = sf.read(tmp_path / "work.wav", dtype="float32")
    assert work_rate == rate and work.ndim == 1  # the recording's own rate
    reference = audio.normalise(audio.to_mono(x), sr)
    assert np.allclose(work, reference, atol=2 / 32768)


def test_the_block_analyser_matches_the_whole_array_analysis_on_clipped_stereo():
    rng = np.random.default_rng(1)
    x = np.clip(rng.normal(0, 0.5, (50_000, 2)).astype(np.float32), -1, 1)
    analyser = blocks.BlockAnalyser(16000, 2)
    for start in range(0, x.shape[0], 777):  # block edges that fall inside 30 ms frames
        analyser.add(x[start:start + 777])
    got, expected = analyser.result(), audio.analyse(x, 16000)
    for key in expected:
        if key != "envelope":
            assert got[key] == pytest.approx(expected[key], abs=1e-6), key
    assert np.array_equal(analyser.frame_levels_dbfs().round(6), frame_levels_dbfs(x, 16000).round(6))


def test_a_mix_that_outgrows_its_header_stops_before_taking_the_memory():
    mix = blocks.MonoMix(expected_frames=100, limit_frames=1000)
    mix.add(np.zeros((900, 2), np.float32))
    with pytest.raises(blocks.TooLong):
        mix.add(np.zeros((200, 2), np.float32))
    assert mix.buf.shape[0] <= 1000


@pytest.mark.parametrize("failure", [MemoryError(), ValueError("decoder bug")])
def test_any_failure_on_one_file_leaves_nothing_and_the_batch_moves_on(tmp_path, monkeypatch, failure):
    first, second = _voice(tmp_path / "first.wav"), _voice(tmp_path / "second.wav", seconds=3.0)
    project = VoiceProject.create(tmp_path / "p")
    real = audio.make_working_copy

    def failing(source, target):
        if source.name == "first.wav":
            target.write_bytes(b"half")  # as if killed midway through the working copy
            raise failure
        return real(source, target)

    monkeypatch.setattr(audio, "make_working_copy", failing)
    report = import_files(project, [first, second])
    assert [s.name for s in report.imported] == ["second.wav"]
    assert "first.wav" in report.rejected[0].reason and "Nothing was changed" in report.rejected[0].reason
    assert sorted(p.name for p in project.sources_dir.iterdir()) == ["second.wav"]
    assert len(list(project.audio_dir.iterdir())) == 1
