"""Ctrl+C during ``alltalk-gui train``: the first press is acknowledged at once (the run may still be setting up for
minutes, e.g. Parler encoding every clip with DAC on a CPU) and stops the run with a checkpoint; a second press
quits now, in this process and with training processes of its own, and says how to go on.

The presses are real SIGINTs to this process, at fixed points of a stand-in training, so the order is certain."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from alltalk_gui.cli import train_cmds
from alltalk_gui.cli.train_interrupt import STOPPING
from alltalk_gui.core.project.lock import running_training
from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.events import Done, FinishReason, Log, LogLevel
from alltalk_gui.core.training.launch import TrainingProcess
from alltalk_gui.core.training.run_folders import STOP_FILE


@pytest.fixture()
def config(tmp_path) -> TrainConfig:
    return TrainConfig(project_dir=str(tmp_path / "voice"), run_name="r", engine="xtts")


def _args(**given) -> argparse.Namespace:
    return argparse.Namespace(resume=False, events=None, processes=1, accelerate_config=None, **given)


def test_first_ctrl_c_is_acknowledged_and_asks_the_run_to_stop(config, capsys, monkeypatch):
    asked = []
    own = signal.getsignal(signal.SIGINT)  # Python's default, or SIG_IGN where the tests run in the background

    def run_to_sink(config, *, resume, events_path, stop, announce=None):  # noqa: ARG001 - the real signature
        yield Log(level=LogLevel.INFO, message="Encoding the clips")
        signal.raise_signal(signal.SIGINT)  # the user, while the run is still setting up
        asked.append(stop())
        yield Done(step=1, epoch=0, reason=FinishReason.STOPPED, final_loss=None, best_eval_loss=None,
                   best_checkpoint=None, last_checkpoint="runs/r/checkpoints/step_0000001", elapsed_s=1.0)

    monkeypatch.setattr("alltalk_gui.core.training.runner.run_to_sink", run_to_sink)
    assert train_cmds._train_here(config, _args()) == 0
    assert asked == [True]
    captured = capsys.readouterr()
    assert STOPPING in captured.err and "Ctrl+C again to quit now" in captured.err
    assert "run again with --resume" in captured.out
    assert signal.getsignal(signal.SIGINT) is own  # this process's own handler is back


def test_second_ctrl_c_quits_at_once_and_gives_the_project_back(config, capsys, monkeypatch):
    def run_to_sink(config, *, resume, events_path, stop, announce=None):  # noqa: ARG001
        yield Log(level=LogLevel.INFO, message="Encoding the clips")
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGINT)  # impatient: the run has not reached a step yet
        raise AssertionError("the second Ctrl+C did not end the run")
        yield  # noqa: unreachable - a generator

    monkeypatch.setattr("alltalk_gui.core.training.runner.run_to_sink", run_to_sink)
    assert train_cmds._train_here(config, _args()) == 130
    err = capsys.readouterr().err
    assert STOPPING in err and "Traceback" not in err
    assert "Quit before the run's first checkpoint: there is nothing to resume" in err
    assert running_training(Path(config.project_dir)) is None  # the run lock was released


def test_second_ctrl_c_ends_the_training_processes(config, capsys, monkeypatch):
    """With training processes (``--processes N``, or an engine in an environment of its own, like Parler): the
    first press writes the run's STOP file, the second ends the processes; neither leaves a process behind. The
    note names the checkpoint kept and the run to resume (a plain --resume takes the newest run, maybe another)."""
    kept = config.run_dir / "checkpoints" / "step_0000004"
    kept.mkdir(parents=True)
    (kept / "train_state.json").write_text("{}")
    children = []

    def start_training(config, **_):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
        children.append(child)
        return TrainingProcess(process=child, run_dir=config.run_dir, events_path=config.run_dir / "events.jsonl",
                               processes=1, command=[])

    monkeypatch.setattr("alltalk_gui.core.training.launch.start_training", start_training)
    stops_seen = []

    def press_twice() -> None:
        time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.5)
        stops_seen.append((config.run_dir / STOP_FILE).exists())
        os.kill(os.getpid(), signal.SIGINT)

    presser = threading.Thread(target=press_twice)
    presser.start()
    try:
        assert train_cmds._train_launched(config, _args()) == 130
    finally:
        presser.join()
        for child in children:
            if child.poll() is None:
                child.kill()
    assert stops_seen == [True]
    assert children[0].wait(timeout=10) is not None and children[0].returncode != 0  # killed, not finished
    assert not (config.run_dir / STOP_FILE).exists()  # a leftover would stop the next session at once
    err = capsys.readouterr().err
    assert STOPPING in err
    assert (f"step_0000004 is kept: go on from it with 'alltalk-gui train {config.project_dir} --resume --run r'"
            in err)


def test_a_run_stopped_before_its_first_checkpoint_is_not_offered_a_resume():
    """A stop during the set-up ends the run without a checkpoint: '--resume' would find nothing to go on from."""
    import io

    stopped = dict(step=0, epoch=0, reason=FinishReason.STOPPED, final_loss=None, best_eval_loss=None,
                   best_checkpoint=None, elapsed_s=1.0)
    for last, said in ((None, "Stopped before the first checkpoint: start the run again (there is nothing to "
                                "resume)."),
                       ("runs/r/checkpoints/step_0000001", "Stopped: run again with --resume to go on.")):
        out = io.StringIO()
        train_cmds.Progress(out).show(Done(**stopped, last_checkpoint=last))
        assert said in out.getvalue() and ("--resume" in out.getvalue()) == (last is not None)
