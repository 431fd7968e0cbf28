"""Tests for alltalk_gui.core.audio.decode: every import format, known-answer analysis, judgement, normalisation, bad inputs,
and the working copy. All audio is generated here (tests/audio_fixtures.py, espeak-ng for speech)."""

from __future__ import annotations

import hashlib
import json
import re
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from alltalk_gui.core.audio import decode as audio
from alltalk_gui.core.audio.decode import AudioError, AudioInfo
from alltalk_gui.core.audio.analysis import speech_level_dbfs
from alltalk_gui.testing.speech import espeak_available, synthesize
from tests import audio_fixtures as fx

needs_espeak = pytest.mark.skipif(not espeak_available(), reason="espeak-ng is not installed")

SENTENCE = "Please call Stella. Ask her to bring these things with her from the store."


@pytest.fixture(scope="module")
def speech(tmp_path_factory) -> np.ndarray:
    """About four seconds of espeak-ng speech, mono float32 at 22 050 Hz."""
    if not espeak_available():
        pytest.skip("espeak-ng is not installed")
    path = synthesize(SENTENCE, tmp_path_factory.mktemp("speech") / "speech.wav")
    x, sr = sf.read(str(path), dtype="float32")
    assert sr == 22050
    return x


def rms_dbfs(x: np.ndarray) -> float:
    return 10 * np.log10(np.mean(np.square(x.astype(np.float64))))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def info(sample_rate: int = 44100, duration_s: float = 60.0) -> AudioInfo:
    return AudioInfo(duration_s=duration_s, sample_rate=sample_rate, channels=1, codec="pcm_s16", bit_depth=16,
                     container="wav")


# ------------------------------------------------------------------------------------------------ constants

def test_constants_and_extensions():
    assert audio.MAX_WORKING_SAMPLE_RATE == 48000 and audio.WHISPER_SAMPLE_RATE == 16000
    assert [audio.working_rate(r) for r in (8000, 22050, 44100, 48000, 96000, 192000)] == \
        [8000, 22050, 44100, 48000, 48000, 48000]
    assert audio.MAX_DURATION_S == 7200
    for ext in (".wav", ".flac", ".ogg", ".opus", ".mp3", ".m4a", ".aac", ".wma", ".aiff", ".aif",
                ".mp4", ".mkv", ".mov", ".webm", ".avi", ".amr", ".3gp", ".3ga", ".m4b", ".caf", ".mka", ".aifc",
                ".m4v"):
        assert ext in audio.SUPPORTED_EXTENSIONS
    assert all(e.startswith(".") and e == e.lower() for e in audio.SUPPORTED_EXTENSIONS)


def test_format_duration_reads_like_a_person_would_say_it():
    assert audio.format_duration(2 * 3600 + 14 * 60) == "2 h 14 min"
    assert audio.format_duration(7200) == "2 h"
    assert audio.format_duration(200) == "3 min 20 s"
    assert audio.format_duration(45) == "45 s"
    assert audio.format_duration(3) == "3.0 s"


def test_audio_module_imports_neither_torch_nor_qt():
    code = ("import sys, alltalk_gui.core.audio.decode; "
            "bad = [m for m in ('torch', 'PySide6', 'pyqtgraph') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


# ---------------------------------------------------------------------------------------------- every format

def _stereo(x: np.ndarray) -> np.ndarray:
    # Two different channels, so a swapped or dropped channel would show.
    return np.stack([x, 0.5 * x], axis=1)


def _up(x: np.ndarray, sr: int) -> np.ndarray:
    import soxr
    return soxr.resample(x, 22050, sr).astype(np.float32)


# name, extension, how to write, sample rate, channels, codec, container, bit depth, duration tolerance (s)
FORMATS = [
    ("wav_pcm16", ".wav", ("sf", "PCM_16", None), 44100, 2, "pcm_s16", "wav", 16, 0.001),
    ("wav_pcm24", ".wav", ("sf", "PCM_24", None), 48000, 1, "pcm_s24", "wav", 24, 0.001),
    ("wav_float", ".wav", ("sf", "FLOAT", None), 22050, 1, "pcm_f32", "wav", 32, 0.001),
    ("flac", ".flac", ("sf", "PCM_24", None), 44100, 2, "flac", "flac", 24, 0.001),
    ("ogg_vorbis", ".ogg", ("sf", "VORBIS", None), 44100, 2, "vorbis", "ogg", None, 0.05),
    ("opus", ".opus", ("sf", "OPUS", "OGG"), 48000, 1, "opus", "ogg", None, 0.05),
    ("aiff", ".aiff", ("sf", "PCM_16", None), 44100, 1, "pcm_s16", "aiff", 16, 0.001),
    ("mp3_libsndfile", ".mp3", ("sf", "MPEG_LAYER_III", "MP3"), 44100, 1, "mp3", "mp3", None, 0.06),
    ("mp3_lame", ".mp3", ("av", "libmp3lame", "mp3", None), 22050, 1, "mp3", "mp3", None, 0.06),
    ("m4a_aac", ".m4a", ("av", "aac", "ipod", None), 44100, 2, "aac", "m4a", None, 0.06),
    ("aac_adts", ".aac", ("av", "aac", "adts", None), 44100, 1, "aac", "aac", None, 0.15),
    ("wma", ".wma", ("av", "wmav2", "asf", None), 44100, 2, "wmav2", "asf", None, 0.06),
    ("mp4_video", ".mp4", ("av", "aac", "mp4", "mpeg4"), 44100, 2, "aac", "mp4", None, 0.06),
    ("mkv_video", ".mkv", ("av", "libopus", "matroska", "mpeg4"), 48000, 2, "opus", "matroska", None, 0.06),
    ("webm_video", ".webm", ("av", "libopus", "webm", "libvpx"), 48000, 1, "opus", "webm", None, 0.06),
    ("mov_video", ".mov", ("av", "aac", "mov", "mpeg4"), 44100, 1, "aac", "mov", None, 0.06),
    ("avi_video", ".avi", ("av", "libmp3lame", "avi", "mpeg4"), 44100, 2, "mp3", "avi", None, 0.06),
    # Phones' voice recorders, audiobooks, Apple's and Matroska's audio files.
    ("amr_phone", ".amr", ("av", "libopencore_amrnb", "amr", None), 8000, 1, "amr_nb", "amr", None, 0.06),
    ("3gp_amr", ".3gp", ("av", "libopencore_amrnb", "3gp", None), 8000, 1, "amr_nb", "3gp", None, 0.06),
    ("3ga_aac", ".3ga", ("av", "aac", "3gp", None), 44100, 1, "aac", "3ga", None, 0.06),
    ("m4b_audiobook", ".m4b", ("av", "aac", "ipod", None), 44100, 2, "aac", "m4b", None, 0.06),
    ("caf_alac", ".caf", ("av", "alac", "caf", None), 44100, 1, "alac", "caf", None, 0.06),
    ("mka_flac", ".mka", ("av", "flac", "matroska", None), 48000, 2, "flac", "matroska", None, 0.06),
    ("m4v_video", ".m4v", ("av", "aac", "mp4", "mpeg4"), 44100, 2, "aac", "m4v", None, 0.06),
]


@needs_espeak
@pytest.mark.parametrize("case", FORMATS, ids=[c[0] for c in FORMATS])
def test_every_format_probes_and_loads(case, speech, tmp_path):
    name, ext, how, sr, channels, codec, container, bits, tol = case
    mono = speech if sr == 22050 else _up(speech, sr)
    x = _stereo(mono) if channels == 2 else mono
    path = tmp_path / f"{name}{ext}"
    if how[0] == "sf":
        fx.write_sf(path, x, sr, subtype=how[1], fmt=how[2])
    else:
        fx.write_pyav(path, x, sr, codec=how[1], container_format=how[2], video=how[3],
                      bit_rate={"wmav2": 128000, "libopencore_amrnb": 12200}.get(how[1]))
    expected_s = len(mono) / sr

    got = audio.probe(path)
    assert (got.sample_rate, got.channels, got.codec, got.container, got.bit_depth) == \
        (sr, channels, codec, container, bits)
    assert got.duration_s == pytest.approx(expected_s, abs=tol)

    y, ysr = audio.load(path)
    assert ysr == sr and y.dtype == np.float32 and y.ndim == 2 and y.shape[1] == channels
    assert y.shape[0] / ysr == pytest.approx(expected_s, abs=tol)
    assert np.abs(y).max() <= 1.0
    # The content survived: lossy codecs keep the level of speech within a dB, channel order is kept.
    assert rms_dbfs(y[:, 0]) == pytest.approx(rms_dbfs(mono), abs=1.0)
    if channels == 2:
        assert rms_dbfs(y[:, 0]) - rms_dbfs(y[:, 1]) == pytest.approx(20 * np.log10(2), abs=0.5)


def test_pcm24_loads_bit_exact(tmp_path):
    x = fx.sine(997, 0.5, 48000, peak_dbfs=-3.0)
    path = fx.write_sf(tmp_path / "exact.wav", x, 48000, subtype="PCM_24")
    y, _ = audio.load(path)
    assert np.max(np.abs(y - x)) < 2.0 ** -22


def test_float_wav_over_full_scale_is_clipped_and_nan_removed(tmp_path):
    x = np.array([0.5, 1.7, -2.0, np.nan, np.inf, -0.25] * 2000, dtype=np.float32)
    path = fx.write_sf(tmp_path / "hot.wav", x, 22050, subtype="FLOAT")
    y, _ = audio.load(path)
    assert np.all(np.isfinite(y)) and np.abs(y).max() == 1.0
    assert y[:6, 0].tolist() == [0.5, 1.0, -1.0, 0.0, 1.0, -0.25]


def test_non_ascii_path_works_through_both_decoders(tmp_path, speech):
    folder = tmp_path / "Stimmen – 声"
    folder.mkdir()
    wav = fx.write_sf(folder / "Grüße_日本語 voice.wav", speech, 22050, subtype="PCM_16")
    m4a = fx.write_pyav(folder / "Grüße_日本語 voice.m4a", speech, 22050, codec="aac", container_format="ipod")
    for path in (wav, m4a):
        assert audio.probe(path).sample_rate == 22050
        y, sr = audio.load(path)
        assert y.shape[0] / sr == pytest.approx(len(speech) / 22050, abs=0.06)
        target = folder / f"Grüße_日本語 voice {path.suffix[1:]} working.wav"
        audio.make_working_copy(path, target)
        assert sf.info(str(target)).samplerate == 22050


# ------------------------------------------------------------------------------------------------ bad inputs

TEXT = b"Session notes: take 3 was the best one, use that for the voice.\n" * 40


def _flac_claiming(path: Path, total_samples: int) -> Path:
    """Patch the total-samples field of a FLAC file's STREAMINFO block (bits 108-143 of its data)."""
    data = bytearray(path.read_bytes())
    assert data[:4] == b"fLaC"
    at = 4 + 4 + 10  # "fLaC", block header, then min/max block and frame sizes
    (word,) = struct.unpack(">Q", data[at:at + 8])
    word = (word & ~((1 << 36) - 1)) | total_samples
    data[at:at + 8] = struct.pack(">Q", word)
    path.write_bytes(bytes(data))
    return path


def _bad_inputs(tmp: Path) -> list[tuple[str, Path, str]]:
    """(id, path, pattern the message must match). Every message must also name the file."""
    cases = []
    (tmp / "empty.wav").write_bytes(b"")
    cases.append(("zero_bytes", tmp / "empty.wav", r"^empty\.wav is empty \(0 bytes\)"))
    for ext in (".wav", ".mp3", ".m4a", ".mp4"):
        p = tmp / f"notes{ext}"
        p.write_bytes(TEXT)
        pattern = rf"^notes\{ext} is not an audio file PyAV or libsndfile can read \(.+\)"
        cases.append((f"text_as_{ext[1:]}", p, pattern))
    good = fx.write_sf(tmp / "good.wav", fx.sine(440, 1.0, 22050), 22050, subtype="PCM_16")
    (tmp / "header_cut.wav").write_bytes(good.read_bytes()[:30])
    cases.append(("truncated_header", tmp / "header_cut.wav", r"^header_cut\.wav is not an audio file"))
    flac = fx.write_sf(tmp / "garbled.flac", fx.sine(440, 3.0, 44100, channels=2), 44100)
    data = bytearray(flac.read_bytes())
    rng = np.random.default_rng(0)
    data[2000:-100] = rng.integers(0, 256, len(data) - 2100, dtype=np.uint8).tobytes()
    flac.write_bytes(bytes(data))
    cases.append(("garbled_flac", flac, r"^garbled\.flac is damaged: only .* of its 3\.0 s could be decoded"))
    mp3 = fx.write_pyav(tmp / "cut.mp3", fx.sine(440, 3.0, 44100), 44100, codec="libmp3lame",
                        container_format="mp3")
    mp3.write_bytes(mp3.read_bytes()[: mp3.stat().st_size // 3])
    cases.append(("truncated_mp3", mp3, r"^cut\.mp3 is damaged: only 1\.0 s of its 3\.0 s could be decoded"))
    m4a = fx.write_pyav(tmp / "cut.m4a", fx.sine(440, 3.0, 44100), 44100, codec="aac", container_format="ipod")
    m4a.write_bytes(m4a.read_bytes()[: m4a.stat().st_size // 2])  # its index (moov) is at the end: now gone
    cases.append(("truncated_m4a", m4a, r"^cut\.m4a is not an audio file PyAV or libsndfile can read"))
    sf.write(str(tmp / "nothing.wav"), np.zeros((0, 1), dtype=np.float32), 22050)
    cases.append(("zero_samples", tmp / "nothing.wav", r"^nothing\.wav has no audio \(0 samples\)"))
    fx.write_video_only(tmp / "screen.mp4")
    cases.append(("video_without_audio", tmp / "screen.mp4", r"^screen\.mp4 has no audio track \(only video\)"))
    cases.append(("missing", tmp / "gone.wav", r"^gone\.wav does not exist"))
    long = fx.write_sf(tmp / "marathon.flac", fx.sine(440, 1.0, 8000), 8000, subtype="PCM_16")
    _flac_claiming(long, (2 * 3600 + 14 * 60) * 8000)
    cases.append(("header_claims_2h14", long, r"^marathon\.flac is 2 h 14 min long; the limit is 2 h\b"))
    return cases


BAD_IDS = ["zero_bytes", "text_as_wav", "text_as_mp3", "text_as_m4a", "text_as_mp4", "truncated_header",
           "garbled_flac", "truncated_mp3", "truncated_m4a", "zero_samples", "video_without_audio", "missing",
           "header_claims_2h14"]


@pytest.fixture(scope="module")
def bad_inputs(tmp_path_factory) -> dict[str, tuple[Path, str]]:
    cases = {cid: (path, pattern) for cid, path, pattern in _bad_inputs(tmp_path_factory.mktemp("bad"))}
    assert set(cases) == set(BAD_IDS)
    return cases


@pytest.mark.parametrize("case_id", BAD_IDS)
def test_bad_input_raises_audio_error_naming_the_file(case_id, bad_inputs, tmp_path):
    path, pattern = bad_inputs[case_id]
    before = path.read_bytes() if path.exists() else None
    with pytest.raises(AudioError) as load_error:
        audio.load(path)
    message = str(load_error.value)
    assert re.search(pattern, message), message
    assert path.name in message
    with pytest.raises(AudioError):
        audio.make_working_copy(path, tmp_path / "working.wav")
    assert not (tmp_path / "working.wav").exists()
    assert (path.read_bytes() if path.exists() else None) == before
    # probe is header-only: a file that only fails while decoding may pass it, everything else must not.
    if case_id not in ("garbled_flac", "truncated_mp3"):
        with pytest.raises(AudioError, match=re.escape(path.name)):
            audio.probe(path)


def test_text_named_mp3_is_refused_quietly(tmp_path, capfd):
    # libsndfile's mpg123 would print "Note: Illegal Audio-MPEG-Header" lines straight to the CLI's stderr.
    path = tmp_path / "notes.mp3"
    path.write_bytes(TEXT)
    with pytest.raises(AudioError, match="not an audio file"):
        audio.load(path)
    assert capfd.readouterr().err == ""


def test_over_the_limit_is_refused_before_decoding(tmp_path, monkeypatch):
    wav = fx.write_sf(tmp_path / "talk.wav", fx.sine(440, 3.0, 22050), 22050, subtype="PCM_16")
    mp4 = fx.write_pyav(tmp_path / "talk.mp4", fx.sine(440, 3.0, 44100), 44100, codec="aac",
                        container_format="mp4", video="mpeg4")
    monkeypatch.setattr(audio, "MAX_DURATION_S", 2)

    def must_not_decode(*args, **kwargs):
        raise AssertionError("decoded a file that is over the limit")

    monkeypatch.setattr(audio.sf, "read", must_not_decode)
    monkeypatch.setattr(audio, "_decode_pyav", must_not_decode)
    for path in (wav, mp4):
        with pytest.raises(AudioError, match=rf"^{path.name} is 3\.0 s long; the limit is 2\.0 s"):
            audio.load(path)
        with pytest.raises(AudioError, match="limit"):
            audio.probe(path)


def test_pyav_decoding_grows_its_buffer_when_the_stated_length_is_short(tmp_path):
    x = fx.sine(440, 3.0, 44100, channels=2)
    path = fx.write_pyav(tmp_path / "grow.m4a", x, 44100, codec="aac", container_format="ipod")
    full, sr = audio.load(path)
    grown, sr2 = audio._decode_pyav(path, None, expected_s=0.0)
    assert sr2 == sr and np.array_equal(grown, full)


def test_file_cut_short_by_a_little_is_accepted(tmp_path):
    # A PCM file cut mid-data (a recorder that lost power) still holds good audio up to the cut.
    wav = fx.write_sf(tmp_path / "cut.wav", fx.sine(440, 2.0, 22050), 22050, subtype="PCM_16")
    data = wav.read_bytes()
    wav.write_bytes(data[: 44 + 22050 * 2])
    y, sr = audio.load(wav)
    assert y.shape[0] == 22050 and sr == 22050


# ------------------------------------------------------------------------------------ known-answer analysis

SR = 22050


def test_sine_at_minus_6_dbfs():
    x = fx.sine(440, 3.0, SR, peak_dbfs=-6.0)
    a = audio.analyse(x, SR)
    assert a["peak_dbfs"] == pytest.approx(-6.0, abs=0.1)
    assert a["clipped_fraction"] == 0.0 and a["silence_fraction"] == 0.0
    assert a["speech_level_dbfs"] == pytest.approx(-9.0, abs=0.1)  # a sine's RMS is 3 dB under its peak
    assert a["steady"] is True
    verdict, reasons = audio.judge(a, info(duration_s=a["duration_s"]))
    assert verdict == "warning"
    assert reasons == ["no pauses found: the background noise cannot be measured (is this speech?)", "short (3 s)"]


def test_analysis_is_plain_json():
    s, m = fx.speech_like(5.0, SR)
    a = audio.analyse(fx.add_noise(s, m, 30), SR)
    assert json.loads(json.dumps(a, allow_nan=False)) == a
    assert set(a) >= {"duration_s", "peak_dbfs", "clipped_fraction", "silence_fraction", "speech_level_dbfs",
                      "noise_floor_dbfs", "snr_db", "envelope"}
    assert all(isinstance(a[k], float) for k in a if k not in ("envelope", "steady"))


@pytest.mark.parametrize("drive_db", [2.0, 6.0])
def test_clipped_sine_reports_the_clipped_share(drive_db):
    amplitude = 10 ** (drive_db / 20)
    x = np.clip(fx.sine(440, 3.0, SR, peak_dbfs=drive_db), -1.0, 1.0)
    # The share of a sine's period above 1/A: 1 - (2/pi) * arcsin(1/A). Sampling makes it approximate.
    expected = 1 - 2 / np.pi * np.arcsin(1 / amplitude)
    a = audio.analyse(x, SR)
    assert a["clipped_fraction"] == pytest.approx(expected, abs=0.01)
    assert a["peak_dbfs"] == pytest.approx(0.0, abs=0.01)
    _, reasons = audio.judge(a, info())
    assert f"clipped {expected * 100:.0f} % of samples" in reasons


def test_a_few_clipped_samples_are_not_a_problem_but_two_percent_is():
    s, m = fx.speech_like(20.0, SR, level_dbfs=-18, seed=3)
    x = fx.add_noise(s, m, 40)
    x[::2000] = 1.0  # 0.05 %
    a = audio.analyse(x, SR)
    assert audio.judge(a, info()) == ("ok", [])
    x[: int(0.021 * len(x))] = 1.0
    a = audio.analyse(x, SR)
    _, reasons = audio.judge(a, info())
    assert any(re.fullmatch(r"clipped 2\.1 % of samples", r) for r in reasons), reasons


def test_half_silence():
    x = fx.sine(440, 4.0, SR, peak_dbfs=-12.0)
    x[len(x) // 2:] = 0.0
    a = audio.analyse(x, SR)
    assert a["silence_fraction"] == pytest.approx(0.5, abs=0.02)
    assert a["speech_level_dbfs"] == pytest.approx(-15.0, abs=0.2)
    assert a["envelope"][0] == pytest.approx(10 ** (-12 / 20), abs=0.01) and a["envelope"][-1] == 0.0
    assert not any(r.startswith("mostly silence") for r in audio.judge(a, info())[1])


def test_mostly_silence():
    s, m = fx.speech_like(4.0, SR, seed=5)
    x = np.concatenate([s, np.zeros(16 * SR, dtype=np.float32)])
    a = audio.analyse(fx.add_noise(x, np.concatenate([m, np.zeros(16 * SR, bool)]), 40), SR)
    verdict, reasons = audio.judge(a, info())
    assert verdict == "warning"
    assert any(re.fullmatch(r"mostly silence \(8\d %\)", r) for r in reasons), reasons


@pytest.mark.parametrize("snr_db, verdict_reason", [
    (40, None),
    (20, r"noisy \(SNR 2\d dB\)|noisy \(SNR 1[7-9] dB\)"),
    (10, r"very noisy \(SNR (7|8|9|1[0-3]) dB\)"),
])
def test_snr_of_speech_like_bursts_with_white_noise(snr_db, verdict_reason):
    s, m = fx.speech_like(20.0, SR, level_dbfs=-20, seed=snr_db)
    a = audio.analyse(fx.add_noise(s, m, snr_db, seed=snr_db + 1), SR)
    assert a["snr_db"] == pytest.approx(snr_db, abs=3.0)
    assert a["noise_floor_dbfs"] == pytest.approx(-20 - snr_db, abs=1.5)
    assert a["speech_level_dbfs"] == pytest.approx(-20, abs=1.5)
    # The pauses are found as pauses, noisy or not.
    assert a["silence_fraction"] == pytest.approx(1 - m.mean(), abs=0.08)
    verdict, reasons = audio.judge(a, info())
    if verdict_reason is None:
        assert (verdict, reasons) == ("ok", [])
    else:
        assert verdict == "warning" and len(reasons) == 1 and re.fullmatch(verdict_reason, reasons[0]), reasons


@needs_espeak
@pytest.mark.parametrize("snr_db", [30, 20, 10])
def test_snr_of_real_speech_with_white_noise(snr_db, speech):
    # Real speech has quiet sounds that sink under the noise, so the estimate runs a little high near 10 dB.
    level = speech_level_dbfs(speech, SR)
    noise = np.random.default_rng(snr_db).standard_normal(len(speech))
    noise *= 10 ** ((level - snr_db) / 20) / np.sqrt(np.mean(noise ** 2))
    a = audio.analyse((speech + noise).astype(np.float32), SR)
    assert a["snr_db"] == pytest.approx(snr_db, abs=3.0)


@needs_espeak
def test_clean_speech_is_ok(speech):
    a = audio.analyse(np.tile(speech, 4), SR)
    assert a["snr_db"] > 60 and 0.05 < a["silence_fraction"] < 0.5
    assert audio.judge(a, info(22050)) == ("ok", [])


def test_very_quiet_speech():
    s, m = fx.speech_like(20.0, SR, level_dbfs=-45)
    a = audio.analyse(fx.add_noise(s, m, 40), SR)
    assert a["speech_level_dbfs"] == pytest.approx(-45, abs=0.5)
    assert audio.judge(a, info()) == ("warning", ["very quiet (speech at -45 dBFS)"])


def test_low_sample_rate_and_short():
    sr = 8000
    s, m = fx.speech_like(12.0, sr, seed=2)
    a = audio.analyse(fx.add_noise(s, m, 40), sr)
    verdict, reasons = audio.judge(a, info(sample_rate=sr))
    assert verdict == "warning"
    assert reasons == ["low sample rate (8 kHz): voice will sound muffled", "short (12 s)"]
    assert "low sample rate (11.03 kHz): voice will sound muffled" in audio.judge(a, info(11025))[1]


@pytest.mark.parametrize("signal, reason", [
    (np.zeros(3 * SR, dtype=np.float32), "silent: all samples are zero"),
    ((np.random.default_rng(0).standard_normal(3 * SR) * 1e-4).astype(np.float32), "silent: no signal above -60 dBFS"),
    (fx.sine(200, 0.5, SR)[:, 0], "too short to use (0.5 s)"),
])
def test_unusable(signal, reason):
    a = audio.analyse(signal, SR)
    assert json.dumps(a, allow_nan=False)
    assert audio.judge(a, info()) == ("unusable", [reason])


def test_stereo_levels_are_pooled_not_cancelled():
    s, m = fx.speech_like(10.0, SR)
    mono = fx.add_noise(s, m, 30)
    a1 = audio.analyse(mono, SR)
    a2 = audio.analyse(np.stack([mono, -mono], axis=1), SR)  # opposite phase: a plain average would be silent
    for key in ("peak_dbfs", "speech_level_dbfs", "noise_floor_dbfs", "snr_db", "silence_fraction"):
        assert a2[key] == pytest.approx(a1[key], abs=0.01), key


def test_envelope_has_120_bins_tracking_the_peaks():
    x = np.zeros(12 * SR, dtype=np.float32)
    x[SR: 2 * SR] = fx.sine(300, 1.0, SR, peak_dbfs=-6)[:, 0]
    env = audio.analyse(x, SR)["envelope"]
    assert len(env) == 120 and all(0.0 <= v <= 1.0 for v in env)
    assert max(env) == pytest.approx(0.5, abs=0.01)
    assert env[15] == pytest.approx(0.5, abs=0.01) and env[0] == 0.0 and env[60] == 0.0
    assert len(audio.analyse(np.full(50, 0.1, np.float32), SR)["envelope"]) == 50


# ------------------------------------------------------------------------------------------------ normalise

def test_normalise_puts_speech_on_target():
    s, m = fx.speech_like(20.0, SR, level_dbfs=-35)
    x = fx.add_noise(s, m, 35)
    y = audio.normalise(x, SR)
    assert y.dtype == np.float32
    assert speech_level_dbfs(y, SR) == pytest.approx(-20.0, abs=0.1)
    assert 20 * np.log10(np.abs(y).max()) <= -1.0
    y = audio.normalise(x, SR, target_dbfs=-26.0)
    assert speech_level_dbfs(y, SR) == pytest.approx(-26.0, abs=0.1)


def test_normalise_never_pushes_the_peak_past_the_ceiling():
    s, m = fx.speech_like(20.0, SR, level_dbfs=-30)
    x = fx.add_noise(s, m, 40)
    x[SR] = 0.5  # a click 24 dB above the speech: full gain would put it at +4 dBFS
    y = audio.normalise(x, SR)
    assert np.abs(y).max() <= 10 ** (-1 / 20)
    assert 20 * np.log10(np.abs(y).max()) == pytest.approx(-1.0, abs=0.01)
    assert speech_level_dbfs(y, SR) < -20.0


def test_loud_clipped_file_is_turned_down_not_up():
    s, m = fx.speech_like(20.0, SR, level_dbfs=-4)
    x = np.clip(fx.add_noise(s, m, 30) * 2.0, -1.0, 1.0)
    assert speech_level_dbfs(x, SR) > -20.0
    y = audio.normalise(x, SR)
    assert np.abs(y).max() <= 10 ** (-1 / 20)
    assert np.abs(y).max() < np.abs(x).max()
    assert speech_level_dbfs(y, SR) == pytest.approx(-20.0, abs=0.1)


def test_normalise_leaves_silence_alone():
    zeros = np.zeros(SR, dtype=np.float32)
    assert np.array_equal(audio.normalise(zeros, SR), zeros)
    hiss = (np.random.default_rng(0).standard_normal(SR) * 1e-5).astype(np.float32)
    assert np.array_equal(audio.normalise(hiss, SR), hiss)


# -------------------------------------------------------------------------------------- mono, resample, write

def test_to_mono():
    x = np.stack([np.full(10, 0.5), np.full(10, -0.1)], axis=1).astype(np.float64)
    mono = audio.to_mono(x)
    assert mono.shape == (10,) and mono.dtype == np.float32 and np.allclose(mono, 0.2)
    assert audio.to_mono(x[:, :1]).shape == (10,)
    assert np.array_equal(audio.to_mono(np.ones(5, np.float32)), np.ones(5, np.float32))


def test_resample_keeps_frequency_and_level():
    x = fx.sine(1000, 2.0, 44100, peak_dbfs=-6)
    y = audio.resample(x, 44100, 22050)
    assert y.dtype == np.float32 and y.shape == (44100, 1)
    spectrum = np.abs(np.fft.rfft(y[:, 0] * np.hanning(len(y))))
    assert np.argmax(spectrum) * 22050 / len(y) == pytest.approx(1000, abs=1)
    mid = y[2000:-2000, 0]
    assert 20 * np.log10(np.abs(mid).max()) == pytest.approx(-6.0, abs=0.05)
    up = audio.resample(x[:, 0], 44100, 48000)
    assert up.shape == (48000 * 2,)
    assert audio.resample(x, 22050, 22050) is not None and np.array_equal(audio.resample(x, 22050, 22050), x)


def test_write_wav_is_atomic_and_clips_instead_of_wrapping(tmp_path):
    target = tmp_path / "out.wav"
    audio.write_wav(target, np.array([0.5, 1.5, -1.5, 0.0], np.float32), 22050)
    y, sr = sf.read(str(target), dtype="float32")
    assert sr == 22050 and sf.info(str(target)).subtype == "PCM_16"
    assert y[1] > 0.999 and y[2] == -1.0
    before = target.read_bytes()
    with pytest.raises(Exception):
        audio.write_wav(target, np.zeros(10, np.float32), 22050, subtype="NOT_A_SUBTYPE")
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.wav"]


# --------------------------------------------------------------------------------------------- working copy

@needs_espeak
def test_working_copy_from_stereo_video(tmp_path, speech):
    source = fx.write_pyav(tmp_path / "interview.mp4", _stereo(_up(speech, 44100) * 0.3), 44100, codec="aac",
                           container_format="mp4", video="mpeg4")
    digest = sha256(source)
    target = tmp_path / "audio" / "interview.wav"
    target.parent.mkdir()
    got_info, analysis = audio.make_working_copy(source, target)

    assert sha256(source) == digest
    assert got_info == audio.probe(source)
    assert (got_info.channels, got_info.sample_rate) == (2, 44100)
    assert analysis["duration_s"] == pytest.approx(len(speech) / 22050, abs=0.06)
    out = sf.info(str(target))
    assert (out.channels, out.samplerate, out.subtype, out.format) == (1, 44100, "PCM_16", "WAV")  # the source's rate
    assert out.duration == pytest.approx(analysis["duration_s"], abs=0.01)
    y, _ = sf.read(str(target), dtype="float32")
    assert speech_level_dbfs(y, 44100) == pytest.approx(-20.0, abs=0.3)
    assert np.abs(y).max() <= 10 ** (-1 / 20) + 1 / 32768
    assert [p.name for p in target.parent.iterdir()] == ["interview.wav"]  # no temporary left behind
    assert audio.judge(analysis, got_info) == ("warning", [f"short ({analysis['duration_s']:.0f} s)"])


def test_working_copy_from_8khz_flac_keeps_the_original(tmp_path):
    s, m = fx.speech_like(6.0, 8000, level_dbfs=-30)
    source = fx.write_sf(tmp_path / "phone.flac", fx.add_noise(s, m, 30), 8000, subtype="PCM_16")
    digest = sha256(source)
    target = tmp_path / "phone.wav"
    got_info, analysis = audio.make_working_copy(source, target)
    assert sha256(source) == digest
    assert got_info.sample_rate == 8000 and analysis["duration_s"] == pytest.approx(6.0, abs=0.001)
    y, sr = sf.read(str(target), dtype="float32")
    assert sr == 8000 and y.ndim == 1 and len(y) == 6 * 8000  # not upsampled: that adds size, not sound
    assert speech_level_dbfs(y, sr) == pytest.approx(-20.0, abs=0.3)
    verdict, reasons = audio.judge(analysis, got_info)
    assert verdict == "warning" and "low sample rate (8 kHz): voice will sound muffled" in reasons


def test_working_copy_of_a_96khz_recording_is_kept_at_48khz_with_its_top_band(tmp_path):
    """Above 48 kHz the copy is resampled to 48 kHz: a 15 kHz partial survives, a 30 kHz one (inaudible, above every
    engine's band) is filtered out rather than folded down."""
    s, m = fx.speech_like(3.0, 96000, level_dbfs=-26)
    t = np.arange(s.size) / 96000
    x = s + 0.02 * np.sin(2 * np.pi * 15000 * t) + 0.02 * np.sin(2 * np.pi * 30000 * t)
    source = fx.write_sf(tmp_path / "studio.wav", x.astype(np.float32), 96000, subtype="PCM_24")
    audio.make_working_copy(source, tmp_path / "work.wav")
    y, sr = sf.read(str(tmp_path / "work.wav"), dtype="float32")
    assert sr == 48000 and len(y) == 3 * 48000
    spectrum = np.abs(np.fft.rfft(y))
    freqs = np.fft.rfftfreq(y.size, 1 / sr)

    def band(hz: float) -> float:
        return float(spectrum[(freqs > hz - 50) & (freqs < hz + 50)].max())

    assert band(15000) > 100 * np.median(spectrum)
    assert band(18000) < band(15000) / 100  # 30 kHz folded down would appear at 18 kHz
