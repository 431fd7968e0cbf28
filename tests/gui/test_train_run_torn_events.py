"""A run whose events file has a torn line (power loss) and then a resumed session still shows on the Train page."""

from __future__ import annotations

import json

from alltalk_gui.core.training.checkpoints import CONFIG_FILE, STATE_FILE, WEIGHTS_FILE
from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.events import JsonlSink, Log, Step
from alltalk_gui.gui.train.train_run import RunPanel


def _step(n: int) -> Step:
    return Step(step=n, epoch=0, loss=2.0 / n, parts={"loss_text_ce": 0.1, "loss_mel_ce": 1.0}, lr=1e-5, grad_norm=1.0,
                samples_per_s=2.0, step_time_s=0.5, total_steps=10)


def test_a_torn_line_then_a_resumed_session_opens_with_the_curve_and_resume(qtbot, tmp_path):
    run = tmp_path / "project" / "runs" / "r"
    checkpoint = run / "checkpoints" / "step_0000003"
    checkpoint.mkdir(parents=True)
    (checkpoint / WEIGHTS_FILE).write_bytes(b"w")
    (checkpoint / CONFIG_FILE).write_text(json.dumps(TrainConfig(project_dir=str(tmp_path / "project"),
                                                                 run_name="r").to_dict()))
    (checkpoint / STATE_FILE).write_text(json.dumps({"global_step": 3, "epoch": 0}))
    events = run / "events.jsonl"
    with JsonlSink(events) as sink:
        sink.write(_step(1))
        sink.write(_step(2))
    with open(events, "ab") as f:
        f.write(b'{"type": "step", "step": 3, "ep')  # the power went off here
    with JsonlSink(events) as sink:  # then a Resume from step 2
        sink.write(Log(level="info", message="Resumed from step_0000002 (step 2)."))
        sink.write(_step(3))

    panel = RunPanel()
    qtbot.addWidget(panel)
    panel.show_run(run.parent)
    assert panel.history.loss.x == [1, 2, 3]
    assert panel.resumable_run == run and panel.resume_button.isEnabled()
    assert "stopped at step 3" in panel.status.text()
    assert any("1 unreadable line in" in line and "was skipped" in line for level, line in panel.log.entries if level == "warning")


def test_a_run_folder_renamed_to_a_name_that_is_not_plain_is_refused_with_a_banner(qtbot, tmp_path):
    run = tmp_path / "project" / "runs" / "bad|name"
    checkpoint = run / "checkpoints" / "step_0000001"
    checkpoint.mkdir(parents=True)
    (checkpoint / WEIGHTS_FILE).write_bytes(b"w")
    (checkpoint / CONFIG_FILE).write_text(json.dumps(TrainConfig(project_dir=str(tmp_path / "elsewhere"),
                                                                 run_name="r").to_dict()))
    (checkpoint / STATE_FILE).write_text(json.dumps({"global_step": 1, "epoch": 0}))
    panel = RunPanel()
    qtbot.addWidget(panel)
    panel.show_run(run.parent)
    assert panel.resumable_run == run
    panel.resume()
    assert panel.supervisor is None and "cannot be resumed" in " ".join(panel.banner_texts())
