"""The keyboard in the Known text dialog (the walk of 2026-11-27): Tab leaves the text box for OK and Cancel (it
typed a tab character into it, so the keyboard could not leave the box)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QDialogButtonBox

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.gui.transcript.own_transcript import KnownTextDialog


def test_tab_leaves_the_known_text_for_the_buttons(qtbot, tmp_path):
    dialog = KnownTextDialog(VoiceProject.create(tmp_path / "voice"))
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    dialog.activateWindow()
    dialog.text.setFocus()
    qtbot.waitUntil(dialog.text.hasFocus)
    qtbot.keyClicks(dialog.text, "Shall I compare thee")
    qtbot.keyClick(dialog.text, Qt.Key.Key_Tab)
    assert dialog.text.toPlainText() == "Shall I compare thee"
    buttons = dialog.findChild(QDialogButtonBox)
    assert buttons.isAncestorOf(QApplication.focusWidget())

