"""Step 3, Train: choose how to train (devices, memory profile, Advanced settings), then run and watch it.

The page joins two halves: :class:`~alltalk_gui.gui.train.train_setup.SetupPanel` above builds the TrainConfig,
:class:`~alltalk_gui.gui.train.train_run.RunPanel` below runs it in a child process and shows what happens.
Start validates the config first (:meth:`TrainConfig.validate`, told whether this machine has CUDA) and refuses
with the message shown under the Advanced settings. The main window asks :meth:`TrainPage.confirm_close`
before it closes, and follows ``preview_requested`` to the Preview step.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QLabel,
    QMessageBox,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from alltalk_gui.core.training.config import ConfigError, TrainConfig
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.gui.train.train_run import RunPanel
from alltalk_gui.gui.train.train_setup import SetupPanel


class TrainPage(QWidget):
    status_message = Signal(str)
    preview_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.project: VoiceProject | None = None
        self.setup = SetupPanel()
        self.run = RunPanel()
        self.run.status_message.connect(self.status_message)
        self.run.preview_requested.connect(self.preview_requested)
        self.run.running_changed.connect(self._running_changed)
        self.run.start_button.clicked.connect(self.start)
        self.run.resume_button.clicked.connect(self.resume)
        self.setup.changed.connect(lambda: self.setup.advanced.show_error(None))
        self.setup.devices_ready.connect(self._devices_ready)
        # Opening the Advanced settings makes room for them (before a run; the plots keep theirs during one).
        self.setup.advanced.toggled.connect(lambda: self._size_halves(self.run.is_running()))

        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.setup)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(scroll)
        split.addWidget(self.run)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)
        self.splitter = split
        self._sized = False
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("<h2>Train</h2>"))
        layout.addWidget(split, 1)

    # -- project --------------------------------------------------------------------------------------------
    def set_project(self, project: VoiceProject | None) -> None:
        if self.run.is_running():
            return  # the main window asks before it changes projects during a run
        self.project = project
        self.run.previews.language = project.language if project is not None else "en"
        self.setup.set_project(project)
        self.run.show_run(project.runs_dir if project is not None else None)

    def showEvent(self, event) -> None:
        # Devices are listed the first time the page is shown, not at start-up: it takes a torch import.
        self.setup.scan_devices()
        if self.project is not None and not self.run.is_running():
            self.setup.refresh_facts()  # the dataset may have been exported since
        super().showEvent(event)

    # -- run ------------------------------------------------------------------------------------------------
    def checked_config(self) -> TrainConfig | None:
        """The config Start would use, or None after showing why it cannot be used."""
        if self.project is None:
            return None
        try:
            config = self.setup.build_config()
            config.validate(cuda_available=self.setup.cuda_available)
        except ConfigError as exc:
            self.setup.advanced.show_error(str(exc))
            self.run.status.setText("The settings cannot be used: see the message under Advanced settings.")
            return None
        self.setup.advanced.show_error(None)
        return config

    def start(self) -> None:
        config = self.checked_config()
        if config is not None:
            self.run.start(config, processes=self.setup.processes)

    def resume(self) -> None:
        self.run.resume(processes=self.setup.processes)

    def _devices_ready(self) -> None:
        gpus = [d.free_gib for d in self.setup.devices if d.kind == "cuda"]
        self.run.previews.set_default(max(gpus) if gpus else None)

    def is_training(self) -> bool:
        return self.run.is_running()

    def _running_changed(self, running: bool) -> None:
        self.setup.setEnabled(not running)
        self._size_halves(running)

    def _size_halves(self, running: bool) -> None:
        """Setup gets the room before a run, the plots during one (the user can drag the divider)."""
        total = max(self.splitter.height(), 600)
        setup = min(self.setup.sizeHint().height() + 8, int(total * (0.25 if running else 0.75)))
        self.splitter.setSizes([setup, total - setup])

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if not self._sized and self.height() > 300:
            self._sized = True
            self._size_halves(self.run.is_running())

    def busy_message(self) -> str | None:
        return "Stop the training on the Train step first." if self.is_training() else None

    def confirm_close(self) -> bool:
        """Ask what to do with a running training before the window closes; True when it may close."""
        if not self.run.is_running():
            return True
        if self.ask_on_close() != "stop":
            return False
        self.stop_and_wait()
        self.run.previews.shutdown()
        return True

    def ask_on_close(self) -> str:
        """"stop" (checkpoint, then close) or "keep" (keep training, window stays open)."""
        box = QMessageBox(QMessageBox.Icon.Question, "Training is running",
                          "A training run is in progress. What should happen to it?", parent=self)
        stop = box.addButton("Stop and save a checkpoint", QMessageBox.ButtonRole.AcceptRole)
        box.addButton("Keep training", QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(stop)
        box.exec()
        return "stop" if box.clickedButton() is stop else "keep"

    def stop_and_wait(self) -> None:
        """Stop the run (checkpoint, exit) and wait for it, killing it after the stop timeout."""
        if not self.run.is_running():
            return
        self.run.stop()
        if not self.run.wait(int(self.run.stop_timeout_s * 1000)):
            self.run.force_stop()
            self.run.wait(10000)
