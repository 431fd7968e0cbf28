"""The run panel when its training child exits: the panel's end of the run does not wait for the supervisor's
thread to end, which may still be in its last steps when the panel hears of the exit."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

from PySide6.QtCore import Qt

from alltalk_gui.core.training.checkpoints import CONFIG_FILE, STATE_FILE, WEIGHTS_FILE
from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.events import Done, Error, ErrorKind, FinishReason, JsonlSink, Step
from alltalk_gui.core.training.launch import TrainingProcess
from alltalk_gui.gui.train import training_supervisor
from alltalk_gui.gui.train.train_run import RunPanel


def _stopped_child(connected: threading.Event):
    """A start_training whose child has already stopped at step 1, with its checkpoint and events written. It waits
    for ``connected`` first (in the supervisor's thread), so the test can hook the thread before it goes on."""

    def start(config, *, events_path, **_kw) -> TrainingProcess:
        assert connected.wait(30)
        checkpoint = config.run_dir / "checkpoints" / "step_0000001"
        checkpoint.mkdir(parents=True)
        (checkpoint / WEIGHTS_FILE).write_bytes(b"w")
        (checkpoint / CONFIG_FILE).write_text(json.dumps(config.to_dict()))
        (checkpoint / STATE_FILE).write_text(json.dumps({"global_step": 1, "epoch": 0}))
        with JsonlSink(events_path) as sink:
            sink.write(Step(step=1, epoch=0, loss=1.0, lr=1e-5, grad_norm=1.0, samples_per_s=1.0, step_time_s=0.1,
                            total_steps=10))
            sink.write(Done(step=1, epoch=0, reason=FinishReason.STOPPED, final_loss=1.0, best_eval_loss=None,
                            best_checkpoint=None, last_checkpoint=str(checkpoint), elapsed_s=1.0))
        process = subprocess.Popen([sys.executable, "-c", ""])
        process.wait()  # exited: the supervisor reads the events and says so at its first look
        return TrainingProcess(process, config.run_dir, events_path, 1, [sys.executable, "-c", ""])

    return start


def test_the_buttons_after_a_stop_heard_while_the_thread_still_ends(qtbot, tmp_path, monkeypatch):
    connected, release = threading.Event(), threading.Event()
    monkeypatch.setattr(training_supervisor, "start_training", _stopped_child(connected))
    panel = RunPanel()
    qtbot.addWidget(panel)
    panel.start(TrainConfig(project_dir=str(tmp_path / "project"), run_name="r"))
    supervisor = panel.supervisor
    # Holds the thread just after it emitted child_exited (a direct connection runs in the thread, after the
    # panel's queued one was posted): the panel handles the exit while the thread has not ended, as a loaded
    # CPU can make it happen.
    supervisor.child_exited.connect(lambda *_: release.wait(30), Qt.ConnectionType.DirectConnection)
    connected.set()
    try:
        qtbot.waitUntil(lambda: "Stopped at step 1" in panel.status.text(), timeout=10_000)
        assert supervisor.isRunning()  # the thread is held: the order this test is about
        assert panel.resume_button.isEnabled() and panel.start_button.isEnabled()
        assert not panel.stop_button.isEnabled()
        assert not panel.is_running()
    finally:
        release.set()
        assert supervisor.wait(10_000)
    assert not panel.is_running() and panel.resume_button.isEnabled()


def test_a_run_stopped_during_its_set_up_says_there_is_nothing_to_resume(qtbot):
    panel = RunPanel()
    qtbot.addWidget(panel)
    panel._finished(Done(step=0, epoch=0, reason=FinishReason.STOPPED, final_loss=None, best_eval_loss=None,
                         best_checkpoint=None, last_checkpoint=None, elapsed_s=3.0), 0)
    assert panel.status.text().startswith("Stopped before the first step: there is no checkpoint to resume")
    assert "Resume continues" not in panel.status.text() and not panel.to_preview.isVisibleTo(panel)


def test_the_set_up_s_progress_shows_in_the_bar_and_the_log(qtbot):
    """Before its first step a first run may compute the clips' features for minutes: the busy bar and the log say
    how far it got (they said "Loading the model…" all along)."""
    from alltalk_gui.core.training.events import Preparing

    panel = RunPanel()
    qtbot.addWidget(panel)
    panel.on_event(Preparing(what="parler-dac44k", computed=12, read=3))
    assert panel.progress.format() == "Computing the clips' features: 12 computed, 3 read…"
    assert "Computing the clips' features (parler-dac44k): 12 clip(s) computed, 3 read" in panel.log.shown_text()


def test_stop_while_the_run_sets_up_says_what_will_happen(qtbot, tmp_path, monkeypatch):
    """A Stop pressed before the run has started (it may compute the clips' features for minutes) does not promise
    "finishing the current step and saving a checkpoint": there is no step yet."""
    def start(config, *, events_path, **_kw) -> TrainingProcess:
        process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # a child still setting up
        return TrainingProcess(process, config.run_dir, events_path, 1, [sys.executable])

    monkeypatch.setattr(training_supervisor, "start_training", start)
    panel = RunPanel()
    qtbot.addWidget(panel)
    panel.start(TrainConfig(project_dir=str(tmp_path / "project"), run_name="r"))
    qtbot.waitUntil(lambda: panel.supervisor.child is not None, timeout=10_000)
    try:
        panel.stop()
        assert panel.status.text().startswith("Stopping while the run sets up")
        assert "saving a checkpoint" not in panel.status.text()
        assert (tmp_path / "project" / "runs" / "r" / "STOP").is_file()  # the child is asked all the same
    finally:
        panel.supervisor.kill()
        assert panel.supervisor.wait(10_000)


def _failed_while_loading(config, *, events_path, **_kw) -> TrainingProcess:
    """A start_training whose child failed before its Started event (as with a missing base model)."""
    with JsonlSink(events_path) as sink:
        sink.write(Error(kind=ErrorKind.BASE_MODEL, message="The base model folder /models/xtts is empty."))
        sink.write(Done(step=0, epoch=0, reason=FinishReason.ERROR, final_loss=None, best_eval_loss=None,
                        best_checkpoint=None, last_checkpoint=None, elapsed_s=3.0))
    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(1)"])
    process.wait()
    return TrainingProcess(process, config.run_dir, events_path, 1, [sys.executable, "-c", ""])


def test_a_run_that_fails_while_loading_leaves_no_busy_bar(qtbot, tmp_path, monkeypatch):
    """The bar was left in its busy state ("Loading the model…", moving) after such a failure, as if the run
    still loaded."""
    monkeypatch.setattr(training_supervisor, "start_training", _failed_while_loading)
    panel = RunPanel()
    qtbot.addWidget(panel)
    panel.start(TrainConfig(project_dir=str(tmp_path / "project"), run_name="r"))
    assert panel.progress.maximum() == 0  # busy while it loads
    qtbot.waitUntil(lambda: not panel.is_running(), timeout=10_000)
    assert "base model folder" in panel.status.text() or "failed" in panel.status.text().lower()
    assert panel.progress.maximum() > 0 and panel.progress.value() == 0
    assert "Loading" not in panel.progress.format()
    panel.supervisor.wait(10_000)


def test_tab_goes_from_the_preview_choice_to_the_log_past_the_plots(qtbot):
    """The four plots were Tab stops with no focus to show and nothing to do with the keys."""
    from PySide6.QtWidgets import QApplication

    panel = RunPanel()
    qtbot.addWidget(panel)
    panel.show()
    qtbot.waitExposed(panel)
    panel.activateWindow()
    panel.previews.enabled.setFocus()
    qtbot.waitUntil(panel.previews.enabled.hasFocus)
    qtbot.keyClick(panel.previews.enabled, Qt.Key.Key_Tab)
    assert QApplication.focusWidget() is panel.log.filter
