"""An unexpected failure in a worker is told in plain words: the error's message and what to do, the traceback under
Show Details and in the log, never pasted into the message (the walk of 2026-11-27 met "An unexpected error stopped
the work:" followed by twenty lines of "File …, line …" on the Transcribe & Edit step)."""

from __future__ import annotations

import logging
import traceback

import pytest
from PySide6.QtWidgets import QMessageBox

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.gui.common.failure import failure_message
from alltalk_gui.gui.sources.import_page import ImportPage
from alltalk_gui.gui.transcript.transcript_page import TranscriptPage


def _traceback(exc: Exception) -> str:
    """The text a worker's ``failed`` signal carries for ``exc`` raised in its job."""
    try:
        raise exc
    except Exception:
        return traceback.format_exc()


@pytest.fixture
def shown(monkeypatch):
    boxes = []

    def fake_exec(box):
        boxes.append(box)
        return 0

    monkeypatch.setattr(QMessageBox, "exec", fake_exec)
    return boxes


def test_the_message_is_the_errors_own_words():
    assert failure_message(_traceback(ValueError("the model folder holds no config.json"))) == \
        "the model folder holds no config.json"
    assert failure_message(_traceback(OSError(28, "No space left on device"))) == "[Errno 28] No space left on device"
    assert failure_message("") == "an unknown error"


def test_a_failed_transcription_says_what_happened_without_a_traceback(qtbot, tmp_path, shown, caplog):
    page = TranscriptPage()
    qtbot.addWidget(page)
    page.set_project(VoiceProject.create(tmp_path / "voice"))
    trace = _traceback(RuntimeError("CUDA error: out of memory"))
    with caplog.at_level(logging.ERROR, logger="alltalk_gui"):
        page._on_failed(trace)
    [box] = shown
    assert box.windowTitle() == "Transcription stopped"
    assert "CUDA error: out of memory" in box.text()
    assert "Traceback" not in box.text() and 'File "' not in box.text()
    assert "report" in box.informativeText() and "log file" in box.informativeText()
    assert box.detailedText() == trace  # the whole report, one click away
    assert trace.strip() in caplog.text  # and in the log file a bug report takes


def test_a_failed_import_is_listed_in_one_plain_line(qtbot, tmp_path):
    page = ImportPage()
    qtbot.addWidget(page)
    page.set_project(VoiceProject.create(tmp_path / "voice"))
    page._on_failed(_traceback(PermissionError(13, "Permission denied", "/media/card/one.wav")))
    item = page.rejected_list.item(page.rejected_list.count() - 1).text()
    assert "Permission denied" in item and "Traceback" not in item and 'File "' not in item
    assert "kept" in item  # what the user still has
