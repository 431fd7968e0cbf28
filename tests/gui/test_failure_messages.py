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


def test_the_preview_page_says_an_expected_error_in_words_and_shows_a_bug_with_its_report(qtbot, tmp_path, shown,
                                                                                          caplog):
    from alltalk_gui.core.voice.preview import PreviewError
    from alltalk_gui.gui.preview.preview_page import PreviewPage

    page = PreviewPage()
    qtbot.addWidget(page)
    page.set_project(VoiceProject.create(tmp_path / "voice"))
    page._on_failed(_traceback(PreviewError("The model's vocabulary does not know 'þ'.")))
    assert "The model's vocabulary does not know 'þ'." in page.message.text() and not shown  # no box for it
    assert "Traceback" not in page.message.text() and "PreviewError" not in page.message.text()

    trace = _traceback(KeyError("gpt.weight"))  # a bug: one plain line, the report under Show Details
    with caplog.at_level(logging.ERROR, logger="alltalk_gui"):
        page._on_failed(trace)
    [box] = shown
    assert box.windowTitle() == "The take was not made" and "'gpt.weight'" in box.text()
    assert 'File "' not in box.text() and box.detailedText() == trace and trace.strip() in caplog.text
    assert 'File "' not in page.message.text() and "gpt.weight" in page.message.text()

    page._export_failed(_traceback(ZeroDivisionError("division by zero")))
    assert len(shown) == 2 and shown[1].windowTitle() == "The voice was not exported"
    assert "division by zero" in page.export_panel.result.text() and 'File "' not in page.export_panel.result.text()
    page._export_failed(_traceback(OSError(28, "No space left on device")))  # the user's to act on: in words only
    assert len(shown) == 2 and "No space left on device" in page.export_panel.result.text()


def test_freeing_disk_space_says_the_errors_message_and_logs_its_traceback(qtbot, tmp_path, caplog):
    from alltalk_gui.gui.train.free_space_dialog import FreeSpaceDialog

    dialog = FreeSpaceDialog(VoiceProject.create(tmp_path / "voice"))
    qtbot.addWidget(dialog)
    trace = _traceback(PermissionError(13, "Permission denied", "/runs/run1/checkpoint_4"))
    with caplog.at_level(logging.ERROR, logger="alltalk_gui"):
        dialog._failed(trace)
    assert dialog.status.text() == ("Could not free the space: [Errno 13] Permission denied: "
                                    "'/runs/run1/checkpoint_4'")
    assert trace.strip() in caplog.text  # the log file keeps where it came from
    dialog._failed("Traceback (most recent call last):\n  File \"x.py\", line 1\nKeyboardInterrupt\n")
    assert dialog.status.text() == "Could not free the space: KeyboardInterrupt"


def test_a_model_folders_check_that_fails_unexpectedly_says_its_message_and_logs_the_traceback(qtbot, tmp_path,
                                                                                               monkeypatch, caplog):
    import alltalk_gui.core.voice.preview as preview
    from PySide6.QtWidgets import QWidget

    from alltalk_gui.core.engine_api.engine import get_engine
    from alltalk_gui.gui.preview.model_folder_choice import ModelFolderChoice

    def broken(_engine, _folder, **_kw):
        raise RuntimeError("safetensors header too large")

    monkeypatch.setattr(preview, "check_model_folder", broken)
    holder = QWidget()
    qtbot.addWidget(holder)
    project = VoiceProject.create(tmp_path / "voice")
    choice = ModelFolderChoice(holder)
    choice.set_project(project, get_engine(project.engine))
    (tmp_path / "mine").mkdir()
    with caplog.at_level(logging.ERROR, logger="alltalk_gui"):
        choice._check(tmp_path / "mine", chosen=True)
        qtbot.waitUntil(lambda: choice.checking is None, timeout=20000)
    assert choice.message == f"{tmp_path / 'mine'} could not be checked: safetensors header too large"
    assert "RuntimeError: safetensors header too large" in caplog.text and "Traceback" in caplog.text


def test_a_first_run_check_that_fails_says_its_words_and_logs_the_traceback(qtbot, caplog):
    """The first-run page's checks run in workers: a check that raises is a problem line with the error's words
    (it showed "RuntimeError: …", the traceback's last line as it was), the traceback in the log."""
    from alltalk_gui.gui.start.first_run_page import run_check

    got = []

    def broken():
        raise RuntimeError("nvidia-smi stopped answering")

    with caplog.at_level(logging.ERROR, logger="alltalk_gui"):
        run_check(broken, got.append)
        qtbot.waitUntil(lambda: bool(got), timeout=10000)
    assert got[0].details == "nvidia-smi stopped answering" and got[0].headline == "The check itself failed."
    assert "A first-run check failed." in caplog.text and "Traceback" in caplog.text
