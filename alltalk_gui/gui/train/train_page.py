"""Step 3, Train: choose how to train (engine, devices, memory profile, Advanced settings), then run and watch it.

The page joins two halves: :class:`~alltalk_gui.gui.train.train_setup.SetupPanel` above builds the TrainConfig,
:class:`~alltalk_gui.gui.train.train_run.RunPanel` below runs it in a child process and shows what happens.
Start validates the config first (:meth:`TrainConfig.validate`, told whether this machine has CUDA) and refuses
with the message shown under the Advanced settings; the picker's one-click Low VRAM button selects that
profile and goes through the same Start. A project reopened with an interrupted run of its engine shows the run's
profile, the one Resume uses. Only the chosen engine's runs are in view: choosing another engine shows that
engine's newest run (its curves, summary and Resume), so one engine's run is never resumed under the other's
name. The main window asks :meth:`TrainPage.confirm_close` before it closes (stopping shows a
"saving a checkpoint" note while it waits), and follows ``preview_requested`` to the Preview step.
"""

from __future__ import annotations

from PySide6.QtCore import QEventLoop, QTimer, Signal
from PySide6.QtWidgets import (
    QLabel,
    QMessageBox,
    QVBoxLayout,
    QWidget,
)

from alltalk_gui.core.engine_api.engine import get_engine
from alltalk_gui.core.training.checkpoints import run_folders
from alltalk_gui.core.training.config import ConfigError, TrainConfig
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.gui.common.page_scroll import AtMinimum, page_scroll
from alltalk_gui.gui.common.step_page import CloseAnswer
from alltalk_gui.gui.common.project_lock import is_read_only, read_only_message
from alltalk_gui.gui.common.waiting_note import wait_for_workers, waiting_note
from alltalk_gui.gui.train.train_run import RunPanel
from alltalk_gui.gui.train.train_setup import SetupPanel


class TrainPage(QWidget):
    status_message = Signal(str)
    preview_requested = Signal()
    flagged_requested = Signal()  # show the dataset's flagged clips in the editor
    free_space_requested = Signal()  # show what the project's runs take on disk, to free some (the main window)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.project: VoiceProject | None = None
        self._stopping = False  # stop_and_wait is waiting for the checkpoint
        self.setup = SetupPanel()
        self.run = RunPanel()
        self.run.status_message.connect(self.status_message)
        self.run.preview_requested.connect(self.preview_requested)
        self.run.running_changed.connect(self._running_changed)
        self.run.start_button.clicked.connect(self.start)
        self.run.resume_button.clicked.connect(self.resume)
        self.setup.changed.connect(lambda: self.setup.advanced.show_error(None))
        self.setup.devices_ready.connect(self._devices_ready)
        self.setup.picker.low_vram_clicked.connect(self.start)  # one click: Low VRAM, checked, started
        self.setup.engine_changed.connect(self._engine_changed)
        self.setup.flagged_requested.connect(self.flagged_requested)

        # One scroll area for the whole page, no inner one: the setup takes its natural height (Advanced
        # settings included when open) and the run below keeps room for readable plots. At 1400x950 it all
        # fits; at 1024x700 the page scrolls. During a run the setup (locked then) folds into one line, so the
        # plots and the log fill the window at either size. The run panel's height never goes below what its
        # layout needs (plots of a readable height, a few log lines) whatever the summary and banners above them
        # take: a fixed minimum under that let the summary after a run squash the plots to 80 px.
        content = QWidget()
        column = QVBoxLayout(content)
        column.addWidget(QLabel("<h2>Train</h2>"))
        self.running_note = QLabel()
        self.running_note.setWordWrap(True)
        self.running_note.hide()
        column.addWidget(self.running_note)
        column.addWidget(self.setup)
        self._run_holder = AtMinimum(self.run)
        column.addWidget(self._run_holder, 1)
        self.scroll = page_scroll(content)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.scroll)

    # -- project --------------------------------------------------------------------------------------------
    def set_project(self, project: VoiceProject | None) -> None:
        if self.run.is_running():
            return  # the main window asks before it changes projects during a run
        self.project = project
        self.run.previews.language = project.language if project is not None else "en"
        self.setup.set_project(project)
        self._show_runs()

    def _engine_changed(self, _name: str) -> None:
        """Another engine was chosen: its runs, not the other engine's curves, summary and Resume."""
        if not self.run.is_running():
            self._show_runs()

    def _show_runs(self) -> None:
        """The newest run of the project's engine, and the profile an interrupted one resumes with."""
        project = self.project
        self.run.show_run(project.runs_dir if project is not None else None, self.setup.engine)
        self._show_resume_profile()

    def _show_resume_profile(self) -> None:
        """An interrupted run resumes with its own settings: show its profile, not Auto's pick for a new run (the
        run shown is always of the engine shown)."""
        config = self.run.resumable_config()
        if config is not None and config.profile in self.setup.picker.buttons:
            self.setup.picker.choose(config.profile)

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
        if is_read_only(self.project):  # two runs of one project would write the same checkpoints
            self.status_message.emit(read_only_message(self.project))
            return
        if not self.setup.environment.is_ready():  # the engine's own environment: set it up first
            self.setup.environment.offer()
            return
        if self.project is not None and not self.setup.base.found():
            title = get_engine(self.setup.engine).title
            self._refuse(f"Choose the {title} base model first: Choose folder… or Download… beside Base model "
                         "above.", "the base model is missing")
            return
        config = self.checked_config()
        if config is not None and self._has_dataset(config) and self._room_for(config):
            self.run.start(config, processes=self.setup.processes)

    def _refuse(self, message: str, why: str) -> None:
        """Start cannot go on: say what to do first, above the plots, where the user looks after pressing it. A
        missing base model opened the Advanced settings on "base_model_dir is not set", out of view below."""
        self.run.clear_banners()
        self.run.add_banner("error", message)
        self.run.status.setText(f"Nothing was started: {why}.")

    def _has_dataset(self, config: TrainConfig) -> bool:
        """Whether the dataset the run would read is there; if not, say how to make it, before anything starts.
        Without this a new user's first Start (the page already said "No dataset yet") launched the training
        child, which loaded PyTorch and the base model for about 15 s, then failed, left a run folder behind and
        said "start again"."""
        from alltalk_gui.core.training.data import DatasetError, check_dataset_folder

        try:
            check_dataset_folder(config.dataset_path)
        except DatasetError as exc:
            own = self.project is not None and config.dataset_path == self.project.dataset_dir
            self._refuse("There is no dataset yet: press Export dataset at the bottom of the Transcribe & Edit step, "
                         "then Start again." if own and not config.dataset_path.exists() else str(exc),
                         "the dataset is missing")
            return False
        return True

    def _room_for(self, config: TrainConfig) -> bool:
        """Warn before a run whose checkpoints and export need more disk than is free: keep fewer checkpoints (when
        that fits; the Advanced field shows the new number), start anyway, or cancel. True when it may start."""
        plan = self.setup.disk_plan(config)
        if plan is None or plan.enough:
            return True
        fewer = plan.keep_last_that_fits()
        answer = self.ask_disk(plan.warning() or "", fewer)
        if answer == "free":  # the window shows the runs' space; then the plan is made again with what is free now
            self.free_space_requested.emit()
            return self._room_for(config)
        if answer == "fewer" and fewer is not None:
            self.setup.advanced.change("keep_last", fewer)
            config.keep_last = fewer
        return answer in ("fewer", "anyway")

    def ask_disk(self, warning: str, fewer: int | None) -> str:
        """"fewer" (keep ``fewer`` checkpoints and start), "free" (show what earlier runs take, to free some),
        "anyway" or "cancel"."""
        box = QMessageBox(QMessageBox.Icon.Warning, "Not enough disk space", warning, parent=self)
        keep = box.addButton(f"Keep {fewer} and start", QMessageBox.ButtonRole.AcceptRole) if fewer else None
        free = box.addButton("Free space…", QMessageBox.ButtonRole.ActionRole) if self._has_runs() else None
        anyway = box.addButton("Start anyway", QMessageBox.ButtonRole.DestructiveRole)
        cancel = box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(keep or cancel)
        box.exec()
        clicked = box.clickedButton()
        answers = ((keep, "fewer"), (free, "free"), (anyway, "anyway"))
        return next((answer for button, answer in answers if button is not None and clicked is button), "cancel")

    def _has_runs(self) -> bool:
        return self.project is not None and bool(run_folders(self.project.runs_dir))

    def runs_changed(self) -> None:
        """Runs were deleted or thinned (Free disk space): show what is left, unless a run is being trained."""
        if not self.run.is_running():
            self._show_runs()

    def resume(self) -> None:
        if is_read_only(self.project):
            self.status_message.emit(read_only_message(self.project))
            return
        self._show_resume_profile()  # Resume uses the run's own settings: show its profile
        self.run.resume(processes=self.setup.processes)

    def _devices_ready(self) -> None:
        gpus = [d.free_gib for d in self.setup.devices if d.kind == "cuda"]
        self.run.previews.set_default(max(gpus) if gpus else None)

    def is_training(self) -> bool:
        return self.run.is_running()

    def _running_changed(self, running: bool) -> None:
        self.setup.setEnabled(not running)
        self.setup.setVisible(not running)
        picker = self.setup.picker
        name = picker.resolved() or ""
        title = picker.buttons[name].text() if name in picker.buttons else "the chosen"
        engine = get_engine(self.setup.engine).title
        self.running_note.setText(f"Training {engine} with the {title} profile. The settings are locked while it runs "
                                  "and shown again when it ends.")
        self.running_note.setVisible(running)
        if running:  # the plots are what to watch now
            self.scroll.verticalScrollBar().setValue(0)
        else:  # the summary and the plots stay in view with the setup back above them
            # After the setup is laid out again (a moment later), or the position is the old one.
            QTimer.singleShot(100, self, lambda: self.scroll.verticalScrollBar().setValue(self._run_holder.y()))

    def busy_message(self) -> str | None:
        return "Stop the training on the Train step first." if self.is_training() else None

    def close_work(self) -> str | None:
        return "a training run" if self.run.is_running() else None

    def confirm_close(self, decided: CloseAnswer | None = None) -> bool:
        """Ask what to do with a running training (unless the window asked: ``decided``) before the window closes;
        True when it may close."""
        if self.run.is_running():
            if self._stopping:  # a second close while the first one waits for the checkpoint
                return False
            answer = decided or self.ask_on_close()
            if answer == "detach":  # the child trains on and holds the project until it ends
                self.run.detach()
            elif answer == "stop":
                self.stop_and_wait()
            else:
                return False
        # A checkpoint's spoken preview runs torch in a worker's thread of this process (minutes on a CPU): waited
        # for with the event loop running, where a plain wait froze the window.
        self.run.previews.pending = None
        wait_for_workers(self, "Closing", "Finishing the spoken preview of a checkpoint…", [self.run.previews.worker])
        self.run.previews.shutdown()  # nothing runs now: it stops playback
        self.setup.stop_scan()
        return True

    def ask_on_close(self) -> str:
        """"stop" (checkpoint, then close), "detach" (close, the run goes on) or "keep" (the window stays open)."""
        box = QMessageBox(QMessageBox.Icon.Question, "Training is running",
                          "A training run is in progress. What should happen to it?\n\nIt can go on without the "
                          "app: the project stays locked until it ends. Opening the project again shows that it "
                          "runs, read-only, with a button to stop it.", parent=self)
        stop = box.addButton("Stop, save a checkpoint and close", QMessageBox.ButtonRole.AcceptRole)
        detach = box.addButton("Keep training in the background and close", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton("Don't close", QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(stop)
        box.exec()
        clicked = box.clickedButton()
        return "stop" if clicked is stop else "detach" if clicked is detach else "keep"

    def stop_and_wait(self) -> None:
        """Stop the run (checkpoint, exit) and wait for it, killing it after the stop timeout. The wait keeps the
        window painting and says what it waits for (a checkpoint can take a minute on a slow disk)."""
        if not self.run.is_running():
            return
        self._stopping = True
        self.run.stop()
        note = waiting_note(self, "Stopping training",
                            "Stopping the training: finishing the step and saving a checkpoint…")
        loop = QEventLoop()
        self.run.running_changed.connect(loop.quit)
        QTimer.singleShot(int(self.run.stop_timeout_s * 1000), loop.quit)
        if self.run.is_running():
            loop.exec()
        self.run.running_changed.disconnect(loop.quit)
        if self.run.is_running() and self.run.supervisor.returncode is None:  # the stop timed out
            self.run.force_stop()
        self.run.wait(10000)
        note.close()
        self._stopping = False
