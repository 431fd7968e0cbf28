"""Closing the window while the Train page still lists the devices (a child process importing torch, seconds):
the listing is ended by the page, not killed by Qt as the page is destroyed ("QProcess: Destroyed while process
is still running" on the terminal, the walk of 2026-11-27)."""

from __future__ import annotations

from PySide6.QtCore import QProcess

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.gui.train.train_page import TrainPage


def test_closing_during_the_device_listing_ends_it(qtbot, tmp_path, qtlog):
    page = TrainPage()
    qtbot.addWidget(page)
    page.set_project(VoiceProject.create(tmp_path / "voice"))
    page.show()  # the first show lists the devices
    scan = page.setup._scan
    assert scan is not None and scan.state() != QProcess.ProcessState.NotRunning
    assert page.confirm_close()
    assert page.setup._scan is None and scan.state() == QProcess.ProcessState.NotRunning
    page.close()
    page.deleteLater()
    qtbot.wait(50)
    assert not [m for m in qtlog.records if "Destroyed while process" in m.message]
