"""openai-whisper backend on a tiny random checkpoint: the real code path (load, transcribe with word timestamps,
progress, cancel). The model hears noise, so nothing here is about accuracy."""

from __future__ import annotations

import math
import threading
import time

import numpy as np
import pytest

from alltalk_gui.core.transcript.segments import SegmentList
from alltalk_gui.core.transcription.transcribe import Cancelled, TranscribeOptions, TranscriptionError, transcribe_project
from alltalk_gui.core.transcription.openai_whisper_backend import OpenAIWhisperTranscriber
from alltalk_gui.core.transcription.model_files import UnknownModel
from alltalk_gui.testing.speech import espeak_available
from alltalk_gui.testing.tiny_whisper import build_random_openai_checkpoint
from tests.core.transcript.test_segments_support import SENTENCES, add_source, make_project, spoken_sentences

pytestmark = pytest.mark.skipif(not espeak_available(), reason="espeak-ng is not installed")

# Greedy decoding, at most 24 tokens a window: a random model would otherwise babble up to 224 tokens at six
# temperatures per window.
FAST = {"temperature": 0.0, "sample_len": 24}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return build_random_openai_checkpoint(tmp_path_factory.mktemp("whisper") / "tiny-random.pt")


@pytest.fixture(scope="module")
def random_whisper(checkpoint):
    return OpenAIWhisperTranscriber(str(checkpoint), "cpu", beam_size=1, decode_options=FAST)


@pytest.fixture(scope="module")
def speech(tmp_path_factory):
    samples, _ = spoken_sentences(tmp_path_factory.mktemp("espeak"), SENTENCES[:2])
    return samples


def test_project_transcription_runs_the_whole_openai_path(tmp_path, random_whisper, speech):
    project = make_project(tmp_path)
    add_source(project, "speech.wav", speech)
    seen = []
    report = transcribe_project(project, TranscribeOptions(backend="openai-whisper", language="en"),
                                progress=seen.append, transcriber=random_whisper)
    clips = list(SegmentList.open(project))
    assert report.transcribed == ["speech.wav"] and report.languages == {"speech.wav": "en"}
    words = [w for c in clips for w in c.words]
    assert words, "the random model still emits tokens, and they get word timestamps"
    assert all(math.isfinite(w.probability) and 0 <= w.probability <= 1 for w in words)  # no NaN from torch.empty
    assert all(0 <= w.start_ms <= w.end_ms for w in words)
    assert all(c.duration_ms > 0 for c in clips)
    assert [p.stage for p in seen][-2:] == ["saving", "done"]
    assert max(p.file_fraction for p in seen) == 1.0


def test_language_detection_runs_on_a_multilingual_checkpoint(random_whisper, speech):
    recognised = random_whisper.transcribe(speech[: 16000 * 3], None, lambda f: None, lambda: False)
    assert len(recognised.language) == 2  # some code: the random model's guess


def test_cancel_from_another_thread(random_whisper, speech):
    """Another thread asks to stop once the first 30 s window is done (a timer raced a random model that can
    finish the whole file in under half a second); the transcription stops there instead of running on."""
    stop = threading.Event()
    asked: list[float] = []

    def on_progress(fraction: float) -> None:
        if not asked:
            asked.append(time.monotonic())
            setter = threading.Thread(target=stop.set)
            setter.start()
            setter.join()

    with pytest.raises(Cancelled):
        random_whisper.transcribe(np.tile(speech, 6), "en", on_progress, stop.is_set)
    assert asked and time.monotonic() - asked[0] < 5
    # the model is usable again afterwards: the stop hook was removed
    recognised = random_whisper.transcribe(speech[: 16000 * 2], "en", lambda f: None, lambda: False)
    assert isinstance(recognised.words, list)


def test_progress_hook_stays_inside_whisper(random_whisper):
    import tqdm

    import whisper  # noqa: F401
    import sys

    assert sys.modules["whisper.transcribe"].tqdm.tqdm is not tqdm.tqdm
    assert tqdm.tqdm.__module__.startswith("tqdm")  # the real tqdm is untouched for everyone else


def test_bad_model_paths_and_language(tmp_path, random_whisper, speech):
    with pytest.raises(UnknownModel, match="neither a model name known to openai-whisper"):
        OpenAIWhisperTranscriber(str(tmp_path / "missing.pt"), "cpu")
    broken = tmp_path / "broken.pt"
    broken.write_bytes(b"not a checkpoint")
    with pytest.raises(TranscriptionError, match="Cannot load the openai-whisper model"):
        OpenAIWhisperTranscriber(str(broken), "cpu")
    with pytest.raises(TranscriptionError, match="refused the input"):
        random_whisper.transcribe(speech[:16000], "klingon", lambda f: None, lambda: False)
    english = OpenAIWhisperTranscriber(str(build_random_openai_checkpoint(tmp_path / "en.pt", multilingual=False)),
                                       "cpu", beam_size=1, decode_options=FAST)
    with pytest.raises(TranscriptionError, match="understands English only"):
        english.transcribe(speech[:16000], "fr", lambda f: None, lambda: False)


def test_a_copy_of_an_official_model_gets_its_word_timestamp_heads(tmp_path):
    """A downloaded model passed as a path (tiny.pt) keeps the tuned alignment heads whisper uses by name."""
    import whisper
    from whisper.model import ModelDimensions, Whisper

    path = build_random_openai_checkpoint(tmp_path / "tiny.pt", text_layers=4, text_heads=6)  # tiny's layout
    loaded = OpenAIWhisperTranscriber(str(path), "cpu")._model
    official = Whisper(ModelDimensions(**loaded.dims.__dict__))
    official.set_alignment_heads(whisper._ALIGNMENT_HEADS["tiny"])
    assert loaded.alignment_heads.to_dense().equal(official.alignment_heads.to_dense())

    other = build_random_openai_checkpoint(tmp_path / "mine" / "tiny.pt")  # same name, another layout
    default = OpenAIWhisperTranscriber(str(other), "cpu")._model.alignment_heads.to_dense()
    assert default[1:].all() and not default[:1].any()  # whisper's default: the upper half of the decoder
