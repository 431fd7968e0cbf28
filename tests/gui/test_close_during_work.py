"""Closing the window while a transcription and a training both run (the walk of 2026-11-27): the transcript page
asked and stopped its transcription, waiting on Whisper's thread in the GUI thread, and only then did the Train page
ask; its "Don't close" kept the window open with the transcription already lost. Now the window asks once, stops
nothing before the answer, and ends the work in order with its event loop running: the transcription (a real
TranscribeWorker whose job ends 1.5 s after the cancel, as the real one ends Whisper's child within its 2 s grace)
and then the real training child on the tiny XTTS model, which saves a checkpoint and exits; no child is left behind."""

from __future__ import annotations

import time

import psutil
import pytest
from PySide6.QtCore import QElapsedTimer, QTimer
from PySide6.QtWidgets import QMessageBox

from alltalk_gui.core.training.checkpoints import run_checkpoints
from alltalk_gui.gui.common.step_page import CloseAnswer
from alltalk_gui.gui.transcript.transcribe_worker import Outcome, TranscribeWorker
from tests.gui.test_train_page import RUN_TIMEOUT_MS, tiny_base, training_window, voice_project  # noqa: F401 (fixtures)

SEGMENT_S = 1.5  # how long the job takes to end after the cancel (the real worker terminates Whisper's child)


def _transcribing(window) -> tuple[TranscribeWorker, dict]:
    """The transcript page busy as with a long transcription that checks its cancel flag between segments."""
    page = window.transcript_page
    seen: dict = {}

    def job(_j) -> Outcome:
        while not worker.cancel_event.wait(0.05):
            pass
        time.sleep(SEGMENT_S)  # the child being ended
        seen["ended"] = time.monotonic()
        return Outcome(cancelled=True, message="Transcription cancelled.")

    worker = TranscribeWorker(job, page)
    page._run(worker, page._on_transcribed)
    assert page.is_busy()
    return worker, seen


class _Ticks:
    """The longest gap between turns of the GUI thread's event loop, measured by a 20 ms timer."""

    def __init__(self) -> None:
        self.clock, self.longest = QElapsedTimer(), 0
        self.timer = QTimer(interval=20, timeout=self._tick)

    def __enter__(self):
        self.clock.start()
        self.timer.start()
        return self

    def _tick(self) -> None:
        self.longest = max(self.longest, self.clock.restart())

    def __exit__(self, *_exc) -> None:
        self.timer.stop()


@pytest.mark.timeout(600)
def test_closing_during_a_transcription_and_a_training_asks_once_then_stops_both(qtbot, tmp_path, monkeypatch,
                                                                                  tiny_base, voice_project):
    window = training_window(qtbot, tmp_path, monkeypatch, tiny_base, voice_project)
    train = window.train_page
    train.run.start_button.click()
    qtbot.waitUntil(lambda: train.run.history.step >= 1, timeout=RUN_TIMEOUT_MS)  # really training
    pid = train.run.supervisor.pid
    worker, seen = _transcribing(window)

    # No page asks on its own: the window's one question covers both.
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: pytest.fail(f"a page asked: {a[1:3]}"))
    monkeypatch.setattr(train, "ask_on_close", lambda: pytest.fail("the Train page asked"))
    answers, asked = iter([CloseAnswer.KEEP, CloseAnswer.STOP]), []
    monkeypatch.setattr(window, "ask_on_close", lambda works, training: asked.append((works, training))
                        or next(answers))

    assert not window.close()  # "Don't close": nothing was stopped before the answer
    assert asked == [(["a transcription: what it has done so far is lost", "a training run"], True)]
    assert window.isVisible() and worker.is_running() and not worker.cancel_event.is_set()
    assert train.run.is_running() and not train.run.supervisor.stop_requested

    with _Ticks() as ticks:
        assert window.close()  # "Stop all": the transcription, then the training's checkpoint
    assert len(asked) == 2
    assert worker.cancel_event.is_set() and not worker.is_running() and worker.wait(10_000)
    # The GUI thread never waited on the worker's thread: its event loop turned all along (the 1.5 s froze it
    # before); the note's painting and a busy shared CPU leave some slack.
    assert ticks.longest < SEGMENT_S * 1000 - 300, ticks.longest
    run = train.run
    assert not run.is_running() and run.supervisor.returncode == 0 and run.supervisor.wait(10_000)
    qtbot.wait(50)
    assert run.done_event is not None and run.done_event.reason == "stopped"
    assert run.done_event.time > seen["ended"] - time.monotonic() + time.time()  # stopped after the transcription
    assert run_checkpoints(run.run_dir)[-1].step == run.done_event.step
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE  # no child left
