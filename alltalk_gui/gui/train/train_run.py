"""The lower half of the Train page: run controls, progress, banners, live plots, the log and the end summary.

It owns the :class:`TrainingSupervisor` of the running child and a :class:`TrainingHistory` of what it reported.
Events only update the history and the text widgets; the plots redraw from a display timer
(:data:`REFRESH_MS`), so the GUI thread does a little work per event and a bounded amount per frame whatever
the step rate.

Stop asks the child to checkpoint and exit; if it has not exited after :attr:`RunPanel.stop_timeout_s`, it
is killed (the last complete checkpoint stays). Resume continues the newest run that has a checkpoint with
the settings it was started with, also after the app or the machine restarted.
"""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QGridLayout,
    QHBoxLayout,
    QProgressBar,
    QPushButton,
    QSplitter,
    QSystemTrayIcon,
    QVBoxLayout,
    QWidget,
)

from alltalk_gui.core.engine_api.engine import DEFAULT_ENGINE, EngineError, get_engine
from alltalk_gui.core.training.checkpoints import run_checkpoints
from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.event_text import event_level, event_text, hms
from alltalk_gui.core.training.events import (Checkpoint, Done, Error, ErrorKind, FinishReason, Log, MicroBatch,
                                              Preparing, Started)
from alltalk_gui.core.training.follow import read_event_file
from alltalk_gui.core.training.launch import LaunchError, resume_config
from alltalk_gui.core.training.run_folders import EVENTS_FILE, new_run_name, newest_run_with_checkpoint, run_finished
from alltalk_gui.gui.train.training_history import TrainingHistory
from alltalk_gui.gui.train.training_supervisor import TrainingSupervisor
from alltalk_gui.gui.common.banner import Banner
from alltalk_gui.gui.common.fitted_label import FittedLabel
from alltalk_gui.gui.common.wording import noun, plural
from alltalk_gui.gui.train.checkpoint_preview import CheckpointPreview
from alltalk_gui.gui.train.child_output import OUTPUT_FILE, ChildOutput
from alltalk_gui.gui.train.judge_plot import JudgePlot
from alltalk_gui.gui.train.log_view import LogView
from alltalk_gui.gui.train.loss_plot import LossPlot
from alltalk_gui.gui.train.lr_plot import LrPlot
from alltalk_gui.gui.train.memory_plot import MemoryPlot

# Display tick. Each tick redraws one of the four plots (in turn), so each plot refreshes every 4 x 100 ms and
# no tick paints more than one: a plot repaint costs ~20 ms of CPU here, three at once kept the event loop
# busy for over 100 ms on a loaded CPU.
REFRESH_MS = 100
STOP_TIMEOUT_S = 300.0  # a real checkpoint of the XTTS GPT with AdamW state is ~5 GB: give a slow disk time

def device_words(device: str, processes: int = 1) -> str:
    """"the CPU", "GPU 0", "4 GPUs": a Started event's torch device name, as a person says it."""
    kind, _, index = device.partition(":")
    if kind == "cpu":
        return "the CPU"
    if processes > 1:
        return f"{processes} GPUs"
    return f"GPU {index or 0}"


class RunPanel(QWidget):
    status_message = Signal(str)
    preview_requested = Signal()  # "Go to Preview" after a run
    running_changed = Signal(bool)
    checkpoint_saved = Signal(str)  # a checkpoint folder, as it arrives

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.supervisor: TrainingSupervisor | None = None
        self._running = False  # from a launch until its child's exit is handled (see is_running)
        self.history = TrainingHistory()
        self.stop_timeout_s = STOP_TIMEOUT_S
        self.run_dir: Path | None = None
        self.last_error: str | None = None
        self.last_error_kind: str | None = None
        self.done_event = None
        self.resumable_run: Path | None = None
        self.engine = DEFAULT_ENGINE  # the engine whose runs are shown (the project's)
        self._run_started_wall = 0.0
        self.output = ChildOutput(None)
        self._sessions_before_s = 0.0  # training time of the run's earlier sessions (stop/crash, then Resume)
        self._build()
        self.timer = QTimer(self, interval=REFRESH_MS)
        self.timer.timeout.connect(self._tick)
        self._next_plot = 0
        self.stop_timer = QTimer(self, singleShot=True)
        self.stop_timer.timeout.connect(self.force_stop)

    # -- layout ---------------------------------------------------------------------------------------------
    def _build(self) -> None:
        self.start_button = QPushButton("Start training")
        self.start_button.setToolTip("Start a new run with the settings above")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Finish the current step, save a checkpoint and stop (Resume goes on later)")
        self.resume_button = QPushButton("Resume")
        self.resume_button.setToolTip("Continue the newest run from its last checkpoint, with the settings it "
                                      "was started with")
        self.stop_button.clicked.connect(self.stop)
        self.stop_button.setEnabled(False)
        self.resume_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("Not started")
        self.status = FittedLabel("Choose a profile and press Start.")
        self.status.setWordWrap(True)
        buttons = QHBoxLayout()
        buttons.addWidget(self.start_button)
        buttons.addWidget(self.stop_button)
        buttons.addWidget(self.resume_button)
        buttons.addWidget(self.progress, 1)

        self.banners = QVBoxLayout()
        self.banners.setSpacing(4)

        self.memory_plot, self.loss_plot, self.lr_plot = MemoryPlot(), LossPlot(), LrPlot()
        self.judge_plot = JudgePlot()
        plots = QWidget()
        grid = QGridLayout(plots)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.addWidget(self.memory_plot, 0, 0)
        grid.addWidget(self.loss_plot, 0, 1)
        grid.addWidget(self.lr_plot, 1, 0)
        grid.addWidget(self.judge_plot, 1, 1)
        self.log = LogView()
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(plots)
        split.addWidget(self.log)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        split.setChildrenCollapsible(False)  # neither the plots nor the log is dragged (or squeezed) away

        self.summary = FittedLabel()
        self.summary.setWordWrap(True)
        self.summary.hide()
        self.to_preview = QPushButton("Go to Preview && Export →")  # "&&": a lone & is a mnemonic
        self.to_preview.clicked.connect(self.preview_requested)
        self.to_preview.hide()
        end_row = QHBoxLayout()
        end_row.addWidget(self.summary, 1)
        end_row.addWidget(self.to_preview)

        self.previews = CheckpointPreview()
        self.checkpoint_saved.connect(self.previews.checkpoint_saved)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(buttons)
        layout.addWidget(self.status)
        layout.addWidget(self.previews)
        layout.addLayout(self.banners)
        layout.addLayout(end_row)
        layout.addWidget(split, 1)

    # -- banners --------------------------------------------------------------------------------------------
    def add_banner(self, level: str, text: str) -> Banner:
        banner = Banner(level, text)
        self.banners.addWidget(banner)
        # Only the newest few: a run that recovers from OOM ten times needs no ten banners.
        while self.banners.count() > 3:
            old = self.banners.takeAt(0).widget()
            old.deleteLater()
        return banner

    def banner_texts(self) -> list[str]:
        return [self.banners.itemAt(i).widget().text() for i in range(self.banners.count())]

    def clear_banners(self) -> None:
        while self.banners.count():
            self.banners.takeAt(0).widget().deleteLater()

    # -- state ----------------------------------------------------------------------------------------------
    def is_running(self) -> bool:
        """Whether a run is on: from Start or Resume until the panel has handled its child's exit. Not the
        supervisor's thread: the exit can be heard while that thread is in its last steps, and buttons set from
        it then stayed as during the run (Resume and Start disabled after a stop). Nobody waits for those steps."""
        return self._running

    def show_run(self, runs_dir: Path | None, engine: str = DEFAULT_ENGINE) -> None:
        """Show the newest earlier run of ``engine`` in a project (its curves and whether it can be resumed), or
        nothing. Another engine's runs stay out of view: their curves, summary and Resume belong to that engine
        (a stopped run of it is only mentioned, with how to get back to it)."""
        if self.is_running():
            return
        self.history.clear()
        self.clear_plots()
        self.log.clear()
        self.clear_banners()
        self.summary.hide()
        self.to_preview.hide()
        self.resumable_run = None
        self.engine = engine
        run = newest_run_with_checkpoint(runs_dir, engine) if runs_dir is not None else None
        if run is not None:
            events = run / EVENTS_FILE
            if events.is_file():
                log = read_event_file(events)  # a torn line (power loss) is skipped, not fatal
                for event in log.events:
                    self.history.add(event)
                if log.skipped:
                    self.log.append(f"{plural(log.skipped, 'unreadable line')} in {events} {noun(log.skipped, 'was')} skipped.",
                                    "warning")
            self.refresh_plots()
            if not run_finished(run):
                self.resumable_run = run
                step = run_checkpoints(run)[-1].step
                text = f"Run {run.name} stopped at step {step} without finishing: Resume continues it from there."
            else:
                text = f"Run {run.name} finished. Start a new run, or go on to Preview & Export."
        else:
            text = "Choose a profile and press Start."
        other = self._other_engines_stopped_run(runs_dir, engine)
        self.status.setText(f"{text} {other}" if other else text)
        self._update_buttons()

    @staticmethod
    def _other_engines_stopped_run(runs_dir: Path | None, engine: str) -> str:
        """A sentence about the newest run of another engine when it stopped before its end ("" if none)."""
        run = newest_run_with_checkpoint(runs_dir) if runs_dir is not None else None
        if run is None or run_finished(run):
            return ""
        checkpoints = run_checkpoints(run)
        if not checkpoints or checkpoints[-1].engine == engine:
            return ""
        try:
            title = get_engine(checkpoints[-1].engine).title
        except EngineError:
            return ""
        return (f"The {title} run {run.name} stopped at step {checkpoints[-1].step}: choose {title} above to see "
                "or resume it.")

    def resumable_config(self) -> TrainConfig | None:
        """The config the resumable run was started with (its engine and profile), None when none or unreadable."""
        if self.resumable_run is None:
            return None
        try:
            return resume_config(self.resumable_run.parent.parent, self.resumable_run.name)
        except (OSError, ValueError, LaunchError):
            return None

    def resumable_profile(self) -> str:
        """The memory profile the resumable run was started with ("" when none or unknown)."""
        config = self.resumable_config()
        return config.profile if config is not None else ""

    def _update_buttons(self, ready: bool = True) -> None:
        running = self.is_running()
        self.start_button.setEnabled(ready and not running)
        self.resume_button.setEnabled(not running and self.resumable_run is not None)
        self.stop_button.setEnabled(running)

    # -- control --------------------------------------------------------------------------------------------
    def start(self, config: TrainConfig, processes: int = 1) -> None:
        """A new run; ``config.run_name`` is set here when empty (a timestamp)."""
        if self.is_running():
            return
        if not config.run_name:
            config.run_name = new_run_name()
        self.history.clear()
        self.clear_plots()
        self.log.clear()
        self._launch(config, resume=False, processes=processes)

    def resume(self, processes: int = 1) -> None:
        """Continue the newest resumable run with the settings it was started with, in the project that is open
        (its folder, not the one the run was started in: a copied project must not train the original)."""
        if self.is_running() or self.resumable_run is None:
            return
        run = self.resumable_run
        try:
            config = resume_config(run.parent.parent, run.name)
        except (LaunchError, ValueError) as exc:  # a run folder renamed by hand, an unreadable config
            self.add_banner("error", f"Run {run.name} cannot be resumed: {exc}")
            return
        if config.engine != self.engine:  # never train one engine's run while the page shows another
            self.add_banner("error", f"Run {run.name} was trained with another engine ({config.engine}); choose "
                            "that engine above to resume it.")
            return
        self._launch(config, resume=True, processes=processes)

    def _launch(self, config: TrainConfig, *, resume: bool, processes: int) -> None:
        self.clear_banners()
        self.summary.hide()
        self.to_preview.hide()
        self.last_error = None
        self.last_error_kind = None
        self.done_event = None
        self.run_dir = config.run_dir
        self._run_started_wall = time.time()
        self._sessions_before_s = self.history.training_s if resume else 0.0
        self.output.close()
        self.output = ChildOutput(None)  # the child writes its output.log itself
        self.supervisor = TrainingSupervisor(config, resume=resume, processes=processes, parent=self)
        self._running = True
        self.supervisor.event_received.connect(self.on_event)
        self.supervisor.output_line.connect(self._on_output)
        self.supervisor.child_exited.connect(self._on_exited)
        self.progress.setRange(0, 0)  # busy until the child says how many steps there are
        self.progress.setFormat("Loading the model…")
        what = "Resuming" if resume else "Starting"
        self.status.setText(f"{what} run {config.run_name}: loading PyTorch, the base model and the dataset…")
        self.log.append(f"{what} run {config.run_name} in {config.run_dir} (the process's whole output goes to "
                        f"{OUTPUT_FILE} there)")
        self.supervisor.start()
        self.timer.start()
        self._update_buttons()
        self.running_changed.emit(True)

    def stop(self) -> None:
        if not self.is_running():
            return
        self.supervisor.request_stop()
        self.stop_button.setEnabled(False)
        if self.history.total_steps:
            self.status.setText("Stopping: finishing the current step and saving a checkpoint…")
        else:  # still setting up (no Started yet): a first run computing the clips' features ends before the next
            self.status.setText("Stopping while the run sets up: it ends before the next clip whose features it "
                                "computes, keeping those done (no checkpoint yet), or after its first step…")
        self.stop_timer.start(int(self.stop_timeout_s * 1000))

    def detach(self) -> None:
        """The app closes while the run goes on: stop following it; the child keeps the project until it ends."""
        if not self.is_running():
            return
        self.supervisor.detach()
        self.stop_timer.stop()
        self.timer.stop()
        self.supervisor.wait(5000)
        self._running = False  # a detached supervisor emits no child_exited

    def force_stop(self) -> None:
        if self.is_running():
            self.log.append(f"The training process did not stop within {self.stop_timeout_s:.0f} s; it was "
                            "ended. The last complete checkpoint is kept.", "warning")
            self.supervisor.kill()

    def wait(self, ms: int) -> bool:
        return self.supervisor.wait(ms) if self.supervisor is not None else True

    # -- events (GUI thread) ---------------------------------------------------------------------------------
    def on_event(self, event) -> None:
        self.history.add(event)
        if isinstance(event, Done):
            self.done_event = event
            return  # the summary tells it
        text = event_text(event)
        if text is not None:
            self.log.append(text, event_level(event))
        if isinstance(event, Started):
            self.status.setText(f"Training on {device_words(event.device, event.processes)}.")
        elif isinstance(event, Preparing):  # before the first step: the bar, still busy, says how far it got
            self.progress.setFormat(f"Computing the clips' features: {event.computed} computed, {event.read} read…")
        elif isinstance(event, Checkpoint):
            self.checkpoint_saved.emit(event.path)
        elif isinstance(event, (Log, MicroBatch)) and event_level(event) == "warning":
            self.add_banner("warning", event.message)
        elif isinstance(event, Error):
            self.last_error = event.message
            self.last_error_kind = event.kind

    def _on_output(self, line: str) -> None:
        shown = self.output.accept(line)  # every line to the run's output.log, library noise not to the view
        if shown is not None:
            self.log.append(shown[1], shown[0])

    def _show_progress(self) -> None:
        h = self.history
        if not h.total_steps:
            if not self.is_running() and self.progress.maximum() == 0:
                # The run ended before its child said how many steps it has (a missing dataset or base model, a
                # crash while loading): the bar was left busy ("Loading the model…"), as if it still worked.
                self.progress.setRange(0, 1)
                self.progress.setValue(0)
                self.progress.setFormat("Ended before the first step")
            return
        self.progress.setRange(0, h.total_steps)
        self.progress.setValue(min(h.step, h.total_steps))
        epochs = f"epoch {h.epoch + 1}/{h.epochs}" if h.epochs else ""
        eta = h.eta_s()
        parts = [f"step {h.step}/{h.total_steps}", epochs]
        if self.is_running():
            parts += [f"{h.samples_per_s:.2f} samples/s", f"ETA {hms(eta)}" if eta is not None else ""]
        self.progress.setFormat("  ·  ".join(p for p in parts if p))

    def plots(self) -> tuple:
        return self.memory_plot, self.loss_plot, self.lr_plot, self.judge_plot

    def _tick(self) -> None:
        """The display tick: the progress line and one plot, from the history (never per event)."""
        self._show_progress()
        plots = self.plots()
        plots[self._next_plot % len(plots)].refresh(self.history)
        self._next_plot += 1

    def refresh_plots(self) -> None:
        """Progress line and every plot at once (when a run starts or ends, not while it runs)."""
        self._show_progress()
        for plot in self.plots():
            plot.refresh(self.history)

    def clear_plots(self) -> None:
        for plot in self.plots():
            plot.clear()

    # -- the end -------------------------------------------------------------------------------------------
    def _on_exited(self, code: int, done_seen: bool) -> None:
        self._running = False
        self.output.close()
        self.stop_timer.stop()
        self.timer.stop()
        for i, plot in enumerate(self.plots()):  # the last points, one plot per event-loop turn
            # The plot as context: the call is dropped if the page is closed before it comes.
            QTimer.singleShot(i * REFRESH_MS, plot, lambda p=plot: p.refresh(self.history))
        run = self.run_dir
        checkpoints = run_checkpoints(run) if run is not None else []
        done = self.done_event
        finished = done is not None and done.reason in (FinishReason.FINISHED, FinishReason.MAX_STEPS)
        self.resumable_run = run if checkpoints and not finished else None
        keep = (f" The last checkpoint (step {checkpoints[-1].step}) is kept: Resume continues from it."
                if checkpoints else " No checkpoint was saved yet: start again.")
        if done is not None and done.reason != FinishReason.ERROR:
            self._finished(done, code)
        elif self.last_error is not None and self.last_error_kind in (ErrorKind.DISK_FULL, ErrorKind.SAVE_FAILED):
            # Where, how much is needed and free, what is kept: all in the message (Resume goes on after).
            self.add_banner("error", f"Training stopped: {self.last_error.strip()}")
            self.status.setText("Training stopped: a checkpoint could not be written. Free some space (Project › Free "
                                "disk space…), then Resume.")
            self._notify("Training stopped", self.last_error.strip().splitlines()[0])
        elif self.last_error is not None:
            first = self.last_error.strip().splitlines()[0]
            self.add_banner("error", f"Training stopped with an error: {first}{keep} The log below has the details.")
            self.status.setText("Training failed.")
            self._notify("Training failed", first)
        else:
            how = "was ended by a signal" if code < 0 else f"exited with code {code}"
            self.add_banner("error", f"The training process {how} before it finished (it may have crashed or run "
                            f"out of memory).{keep} The log below shows its last output.")
            self.status.setText("The training process ended unexpectedly.")
            self._notify("Training stopped unexpectedly", f"The training process {how}.")
        self._show_progress()
        self._update_buttons()
        self.running_changed.emit(False)

    def _finished(self, done, code: int) -> None:
        final = f"{done.final_loss:.4f}" if done.final_loss is not None else "–"
        best = f"{done.best_eval_loss:.4f}" if done.best_eval_loss is not None else "–"
        if done.base_eval_loss is not None:  # how far the run moved from the base model
            best += f" (base model before training: {done.base_eval_loss:.4f})"
        h = self.history
        sampled = h.sampled_peak_gib or h.peak_gib
        peak = f"{sampled:.2f} GiB {'on the GPU' if h.on_gpu else 'of RAM'}"
        if h.peak_gib > sampled * 1.1:  # the plot shows the samples; say where the higher figure comes from
            peak += f" (briefly {h.peak_gib:.2f} GiB between samples, e.g. while loading the model)"
        if done.estimated_memory_gib is not None:
            peak += f" (estimated before the run: {done.estimated_memory_gib:.2f} GiB)"
        # This session from its start (loading included) plus the earlier sessions of a resumed run.
        elapsed = hms(self._sessions_before_s + time.time() - self._run_started_wall)
        if done.reason == FinishReason.STOPPED and done.last_checkpoint is None:  # stopped while setting up
            self.status.setText("Stopped before the first step: there is no checkpoint to resume. Start begins "
                                "again, reading the clips' features computed so far.")
            self.add_banner("info", "Stopped before the first step; no checkpoint was saved.")
        elif done.reason == FinishReason.STOPPED:
            self.status.setText(f"Stopped at step {done.step} and saved a checkpoint. Resume continues from it.")
            self.add_banner("info", f"Stopped at step {done.step}; the checkpoint is saved.")
        else:
            self.status.setText(f"Training finished at step {done.step}.")
            self._notify("Training finished", f"Step {done.step}, final loss {final}, best eval loss {best}.")
        how = "Stopped" if done.reason == FinishReason.STOPPED else "Finished"
        self.summary.setText(f"<b>{how}</b> after {elapsed} "
                             f"at step {done.step}: final training loss {final}, best eval loss {best}, peak "
                             f"memory {peak}.")
        self.summary.show()
        self.to_preview.setVisible(done.last_checkpoint is not None)

    def _notify(self, title: str, text: str) -> None:
        """A desktop notification where the desktop has a tray, else the status bar."""
        if QSystemTrayIcon.isSystemTrayAvailable() and QSystemTrayIcon.supportsMessages():
            tray = getattr(self, "_tray", None)
            if tray is None:
                from alltalk_gui.gui.style import app_icon

                tray = self._tray = QSystemTrayIcon(app_icon(), self)
            tray.show()
            tray.showMessage(title, text, QSystemTrayIcon.MessageIcon.Information, 10000)
        self.status_message.emit(f"{title}: {text[:1].lower()}{text[1:]}")
