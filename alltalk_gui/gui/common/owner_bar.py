"""The bar above the steps of a project opened read-only: who holds it, a way to stop a training that holds it,
and "Open for editing" once it is free again.

A project is read-only here when another program holds it, or while a training child trains in it (which may
run on after the app that started it closed: :mod:`alltalk_gui.core.project.lock`). The bar says so in the lock's
own words; while a training runs it offers Stop (the run saves a checkpoint and ends), and it looks every
:data:`POLL_MS` whether the holder is gone: then it says so and offers to open the project for editing. Looking
reads two small lock files; it never takes a lock by itself.
"""

from __future__ import annotations

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QWidget

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.project.lock import read_holder, running_training
from alltalk_gui.core.training.launch import stop_running_training
from alltalk_gui.core.training.run_folders import RunNameError
from alltalk_gui.gui.common.banner import Banner

POLL_MS = 2000


class OwnerBar(QWidget):
    edit_requested = Signal()  # the holder is gone: the window may take the project's lock now

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.project: VoiceProject | None = None
        self.banner = Banner("warning", "")
        self.stop_button = QPushButton("Stop the training")
        self.stop_button.setToolTip("The run finishes its step, saves a checkpoint and ends; Resume continues later")
        self.stop_button.clicked.connect(self.stop_training)
        self.edit_button = QPushButton("Open for editing")
        self.edit_button.clicked.connect(self.edit_requested)
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 6, 8, 0)
        row.addWidget(self.banner, 1)
        row.addWidget(self.stop_button)
        row.addWidget(self.edit_button)
        self.timer = QTimer(self, interval=POLL_MS)
        self.timer.timeout.connect(self.refresh)
        self.hide()

    def text(self) -> str:
        return self.banner.text()

    def show_project(self, project: VoiceProject | None) -> None:
        """Follow ``project`` while it is open read-only; hidden otherwise."""
        self.project = project
        if project is None or not project.read_only:
            self.timer.stop()
            self.hide()
            return
        self.banner.set_level("warning")
        self.stop_button.setEnabled(True)
        self.banner.setText(f"Read-only: {project.read_only_reason or 'another program holds this project.'}")
        self.timer.start()
        self.refresh()
        self.show()

    def refresh(self) -> None:
        project = self.project
        if project is None or not project.read_only:
            return
        training = running_training(project.root)
        holder = read_holder(project.root)
        free = training is None and (holder is None or not holder.is_alive())
        self.stop_button.setVisible(training is not None)
        self.edit_button.setVisible(free)
        if free:
            self.timer.stop()
            ended = "The training has ended" if "Training is still running" in project.read_only_reason else \
                "The program that held it has closed it"
            self.banner.set_level("info")
            self.banner.setText(f"{ended}: nothing holds this project any more. Open it for editing to make "
                                "changes.")

    def stop_training(self) -> None:
        if self.project is None:
            return
        try:
            holder = stop_running_training(self.project.root)
        except (RunNameError, OSError) as exc:
            self.banner.setText(f"{self.banner.text()} (The stop could not be asked for: {exc})")
            return
        if holder is not None:
            self.stop_button.setEnabled(False)
            self.banner.setText(f"Asked run {holder.run} to save a checkpoint and stop; it ends after its current "
                                "step. The project can be changed once it has.")
