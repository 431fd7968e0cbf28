"""GUI fixtures: every test gets its own QSettings file, so recent projects and geometry never leak."""

import pytest
from alltalk_gui.gui import settings
from alltalk_gui.gui.settings import use_settings_folder


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path, qapp):
    from alltalk_gui.gui.app import create_application

    create_application()
    use_settings_folder(tmp_path / "qsettings")
    settings.settings().clear()
    yield


# How long a modal dialog nobody answers may wait before the test fails (a test answers the dialogs it expects by
# patching ``exec``/the static helpers, or by closing the box from a timer well within this).
UNANSWERED_DIALOG_SECONDS = 20


@pytest.fixture(autouse=True)
def no_speaker_measuring(monkeypatch):
    """Pages measure clips' voices in a child process that imports torch (seconds of CPU): off unless a test of the
    speaker check turns it on (tests/gui/test_transcript_speakers.py)."""
    from alltalk_gui.gui.transcript.speaker_worker import SpeakerMeasurer

    monkeypatch.setattr(SpeakerMeasurer, "enabled", False)


@pytest.fixture(autouse=True)
def unanswered_dialogs_fail(monkeypatch):
    """A modal dialog no test answers fails the test instead of waiting forever: offscreen nobody can click it,
    and pytest's timeout cannot interrupt Qt's nested event loop, so one such dialog stalled the whole suite
    (CI of 2026-11-26, the Train page's engine-switch question). The dialog is rejected after
    :data:`UNANSWERED_DIALOG_SECONDS` and the test fails naming it; the static helpers, which would open one, fail
    at once."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QDialog, QFileDialog, QInputDialog, QMessageBox

    unanswered: list[str] = []

    def guarded(original):
        def exec_(dialog, *args, **kwargs):
            def reject() -> None:
                if dialog.isVisible():
                    unanswered.append(f"{dialog.windowTitle()!r}: {getattr(dialog, 'text', lambda: '')()}")
                    dialog.reject()

            QTimer.singleShot(UNANSWERED_DIALOG_SECONDS * 1000, dialog, reject)
            return original(dialog, *args, **kwargs)

        return exec_

    for cls in (QDialog, QMessageBox, QFileDialog, QInputDialog):
        monkeypatch.setattr(cls, "exec", guarded(cls.exec))

    def refuse(name):
        def helper(*args, **kwargs):
            words = " ".join(str(a) for a in args[1:3] if isinstance(a, str))
            raise AssertionError(f"the test did not answer QMessageBox/QFileDialog.{name}: {words}")

        return staticmethod(helper)

    for name in ("question", "warning", "information", "critical"):
        monkeypatch.setattr(QMessageBox, name, refuse(name))
    for name in ("getOpenFileName", "getOpenFileNames", "getExistingDirectory", "getSaveFileName"):
        monkeypatch.setattr(QFileDialog, name, refuse(name))
    yield
    assert not unanswered, f"a modal dialog nobody answered was open for {UNANSWERED_DIALOG_SECONDS} s: {unanswered}"


@pytest.fixture
def answer(monkeypatch):
    """Answer the next message boxes by clicking the button whose text is ``answer["click"]``; records the last
    box's text in ``answer["text"]``."""
    from PySide6.QtWidgets import QMessageBox

    seen = {}

    def fake_exec(box):
        seen["text"] = box.text()
        next(b for b in box.buttons() if b.text() == seen["click"]).click()
        return 0

    monkeypatch.setattr(QMessageBox, "exec", fake_exec)
    return seen
