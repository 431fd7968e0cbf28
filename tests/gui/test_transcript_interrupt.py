"""Closing the window or opening another project while a transcription runs: the app asks (close) or says to wait
(switch), as it does for an import. Both used to stop the transcription without a word, losing what it had done
(the walk of 2026-11-27: closed at 34 %, the reopened project said "No transcript yet")."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QMessageBox

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.gui.main_window import MainWindow
from alltalk_gui.gui.transcript.transcribe_worker import Outcome, TranscribeWorker


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    assert window.open_project(str(VoiceProject.create(tmp_path / "voice").root))
    # pytest-qt closes the window before the fixtures end: a transcription still running is then stopped.
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    yield window
    window.transcript_page.shutdown()


def _transcribing(window) -> TranscribeWorker:
    """The page busy as with a long transcription: a worker that runs until it is cancelled."""
    page = window.transcript_page

    def job(_j) -> Outcome:
        worker.cancel_event.wait(60)
        return Outcome(cancelled=True, message="Transcription cancelled.")

    worker = TranscribeWorker(job, page)
    page._run(worker, page._on_transcribed)
    assert page.is_busy()
    return worker


def test_closing_asks_and_no_keeps_the_transcription(window, monkeypatch):
    worker = _transcribing(window)
    asked = []
    monkeypatch.setattr(QMessageBox, "question",
                        lambda *a, **k: (asked.append(a[1:3]), QMessageBox.StandardButton.No)[1])
    assert window.close() is False
    assert asked and asked[0][0] == "Transcription running" and "lost" in asked[0][1]
    assert window.isVisible() and worker.is_running() and not worker.cancel_event.is_set()
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)


def test_closing_with_yes_stops_it(window, monkeypatch):
    worker = _transcribing(window)
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    assert window.close() is True
    assert worker.cancel_event.is_set() and worker.wait(10_000)


def test_another_project_waits_for_the_transcription(window, qtbot, tmp_path, monkeypatch):
    worker = _transcribing(window)
    first = window.project
    other = VoiceProject.create(tmp_path / "other")
    other.release_lock()
    told = []
    monkeypatch.setattr(QMessageBox, "information", lambda *a, **k: told.append(a[2]))
    window.open_project(str(other.root))
    assert told == ["Wait for the transcription to finish or cancel it first."]
    assert window.project is first and worker.is_running() and not worker.cancel_event.is_set()
