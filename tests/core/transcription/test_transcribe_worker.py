"""Transcription in a child process: same result as in-process, Cancel terminates the child within a second,
and errors raised in the child arrive as the same kind of error in the parent."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time

import numpy as np
import pytest

from alltalk_gui.core.transcript.segments import SegmentList
from alltalk_gui.core.transcription.transcribe import Cancelled, TranscribeOptions, TranscriptionError, transcribe_project
from alltalk_gui.core.transcription.model_files import ModelNotDownloaded, UnknownModel
from alltalk_gui.testing.speech import espeak_available
from alltalk_gui.testing.tiny_whisper import faster_tiny_en
from tests.core.transcript.test_segments_support import SENTENCES, add_source, make_project, spoken_sentences

pytestmark = pytest.mark.skipif(not espeak_available(), reason="espeak-ng is not installed")


def transcription_children() -> list:
    """The child processes left running, less the transcript's shared text check, which lives as long as the
    process on purpose (core/transcript/text_check_process.py) and an earlier test may have started."""
    return [p for p in multiprocessing.active_children() if p.name != "alltalk-text-check"]


@pytest.fixture(scope="module")
def speech(tmp_path_factory):
    samples, _ = spoken_sentences(tmp_path_factory.mktemp("espeak"), SENTENCES[:3])
    return samples


def tiny_options(**kwargs):
    return TranscribeOptions(backend="faster-whisper", model=str(faster_tiny_en()), device="cpu", **kwargs)


def test_worker_process_transcribes_and_reports_progress(tmp_path, speech):
    project = make_project(tmp_path)
    add_source(project, "speech.wav", speech)
    add_source(project, "gone.wav", speech[:22050])
    project.path(project.sources[1].audio_file).unlink()
    seen = []
    report = transcribe_project(project, tiny_options(language="en"), progress=seen.append, in_worker_process=True)
    texts = " ".join(c.text for c in SegmentList.open(project)).lower()
    assert "umbrella" in texts and "grandmother" in texts
    assert report.failed[0][0] == "gone.wav" and "missing" in report.failed[0][1]
    assert seen[0].stage == "loading" and seen[-1].stage == "done"
    assert transcription_children() == []


def test_cancel_terminates_the_child_mid_file(tmp_path, speech):
    """Stop is pressed while the child is inside its first window: no cooperation from Whisper is needed."""
    project = make_project(tmp_path)
    add_source(project, "long.wav", np.tile(speech, 4))  # ~1 minute
    stop = threading.Event()
    pressed = []

    def progress(p):
        if p.stage == "transcribing" and not pressed:
            pressed.append(time.monotonic() + 1.0)
            threading.Timer(1.0, stop.set).start()  # as a GUI Cancel button would, from another thread

    with pytest.raises(Cancelled):
        transcribe_project(project, tiny_options(language="en"), progress=progress, should_stop=stop.is_set,
                           in_worker_process=True)
    assert time.monotonic() - pressed[0] < 3.0
    assert transcription_children() == []
    assert not project.segments_file.exists()


def test_errors_in_the_child_arrive_as_the_same_errors(tmp_path, speech, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache" / "hf"))
    project = make_project(tmp_path)
    add_source(project, "speech.wav", speech[: 22050 * 3])
    with pytest.raises(ModelNotDownloaded) as caught:
        transcribe_project(project, TranscribeOptions(backend="faster-whisper", model="tiny", device="cpu"),
                           in_worker_process=True)
    assert caught.value.download.urls[1].endswith("faster-whisper-tiny/resolve/main/model.bin")
    with pytest.raises(UnknownModel, match="neither a model name"):
        transcribe_project(project, TranscribeOptions(backend="faster-whisper", model=str(tmp_path / "x")),
                           in_worker_process=True)
    with pytest.raises(TranscriptionError, match="understands English only, but the language is 'de'"):
        transcribe_project(project, tiny_options(language="de"), in_worker_process=True)
    with pytest.raises(TranscriptionError, match="Unknown language 'xx'"):
        transcribe_project(project, tiny_options(language="xx"), in_worker_process=True)
    assert not project.segments_file.exists()


def test_the_child_puts_torchs_cuda_libraries_on_windows_dll_path():
    """faster-whisper on CUDA loads cuBLAS by name; on Windows it is found only in torch's lib folder."""
    from pathlib import Path

    import torch

    from alltalk_gui.core.transcription import child_process

    added, env = [], {"PATH": "C:\\Windows\\system32"}
    lib = child_process.expose_torch_libraries("nt", added.append, env)
    assert lib == Path(torch.__file__).parent / "lib" and added == [str(lib)]
    assert env["PATH"] == str(lib) + os.pathsep + "C:\\Windows\\system32"
    assert child_process.expose_torch_libraries("posix", added.append, env) is None and len(added) == 1
