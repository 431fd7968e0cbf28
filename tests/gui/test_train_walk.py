"""The Train page as a new user meets it (issue #17): the one-click Low VRAM button starts a run, a reopened
project shows the profile its interrupted run resumes with, the summary counts the time of every session, the
smoothed loss follows the whole run, and the plots keep their keys off the data."""

from __future__ import annotations

import math
import time

import pytest

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.training.events import Eval, Started, Step
from alltalk_gui.gui.train.train_page import TrainPage
from tests.gui.test_train_page import RUN_TIMEOUT_MS, _fast, _wait_exit, page, tiny_base, voice_project  # noqa: F401


def _started(start_step: int, total: int = 30, t: float = 0.0) -> Started:
    return Started(run_dir="run", device="cpu", processes=1, train_clips=3, eval_clips=1, steps_per_epoch=1,
                   total_steps=total, start_step=start_step, start_epoch=start_step, trainable_parameters=10,
                   config={"epochs": total}, time=t)


def _step(i: int, loss: float, total: int = 30, t: float = 0.0) -> Step:
    return Step(step=i, epoch=i - 1, loss=loss, parts={"loss_text_ce": 0.1, "loss_mel_ce": loss}, lr=1e-5, grad_norm=1.0,
                samples_per_s=1.0, step_time_s=0.1, total_steps=total, time=t)


@pytest.mark.timeout(900)
def test_low_vram_starts_then_reopen_shows_low_and_the_summary_adds_the_sessions(page, qtbot, monkeypatch):
    _fast(page, monkeypatch, max_steps=30, save_every_steps=1)
    run = page.run
    assert page.setup.picker.choice() == "auto" and page.setup.picker.resolved() != "low"  # CPU: Auto -> High
    page.setup.picker.low_vram.click()  # one click: selected, checked, started
    assert page.setup.picker.choice() == "low" and run.is_running()
    qtbot.waitUntil(lambda: run.history.step >= 2, timeout=RUN_TIMEOUT_MS)
    qtbot.wait(1000)  # a session long enough to be seen in the total
    run.stop()
    _wait_exit(qtbot, page)
    first = run.history.training_s
    assert run.done_event.reason == "stopped" and first > 0.5

    # The app restarted: the new page shows Low VRAM, the profile Resume uses, not Auto's High.
    again = TrainPage()
    qtbot.addWidget(again)
    again.setup.set_devices(page.setup.devices)
    again.set_project(VoiceProject.open(page.project.root))
    assert again.run.resumable_run == run.run_dir
    assert again.setup.picker.choice() == "low" and again.run.resumable_profile() == "low"
    assert again.run.history.training_s == pytest.approx(first, abs=0.01)  # read back from the events file

    again.run.resume_button.click()
    clock = time.time()
    _wait_exit(qtbot, again)
    this_session = time.time() - clock
    assert again.run.done_event.reason == "max_steps", again.run.log.shown_text()[-2000:]
    summary = again.run.summary.text()
    shown = summary.split(" after ")[1].split(" at step")[0]
    h, m, s = (int(x) for x in shown.split(":"))
    assert h * 3600 + m * 60 + s >= int(first + this_session) - 1  # both sessions, not only the last
    assert again.run.history.training_s > first


def test_the_smoothed_loss_follows_the_whole_run(page, qtbot):
    run = page.run
    run.history.clear()
    run.clear_plots()
    run.on_event(_started(0))
    for i in range(1, 16):
        run.on_event(_step(i, 3.0 - i * 0.01))
        run.on_event(Eval(step=i, epoch=i - 1, loss=3.0 - i * 0.01, parts={"loss_text_ce": 0.1, "loss_mel_ce": 2.0}, clips=1,
                          best=True))
    run.on_event(_step(16, float("nan")))  # one bad step
    run.on_event(_started(15))  # stopped at 15, resumed: step 16 comes again
    for i in range(16, 31):
        run.on_event(_step(i, 2.8 - i * 0.01))
        run.on_event(Eval(step=i, epoch=i - 1, loss=2.8 - i * 0.01, parts={"loss_text_ce": 0.1, "loss_mel_ce": 2.0}, clips=1,
                          best=True))
    run.refresh_plots()
    smooth = run.history.loss_smooth
    assert smooth.x == list(range(1, 31)) and all(math.isfinite(y) for y in smooth.y)
    curve = run.loss_plot.curves["train (smoothed)"]
    assert len(curve.xData) == 30 and curve.xData[-1] == 30
    # Drawn above the eval dots, which otherwise hid it from the first eval-per-step on.
    assert curve.zValue() > run.loss_plot.curves["eval (per epoch)"].zValue()
    qtbot.wait(50)  # the view ranges itself to the data, then draws what is in view
    assert curve.curve.xData[-1] == 30  # what is painted reaches the last step too


def test_plot_keys_sit_outside_the_data_and_empty_axes_are_plain(page):
    run = page.run
    run.history.clear()
    run.clear_plots()
    for plot in run.plots():
        assert plot.plot.getPlotItem().legend is None  # no legend box over the curves
        x_range, y_range = plot.plot.getViewBox().viewRange()
        assert x_range == pytest.approx([0, 10]) and y_range == pytest.approx([0, 1])
        assert plot.key.text() == ""
    run.on_event(_started(0))
    run.on_event(_step(1, 3.0))
    run.on_event(_step(2, 2.9))
    run.refresh_plots()
    assert "train (smoothed)" in run.loss_plot.key.text() and "eval" not in run.loss_plot.key.text()
    assert run.plots()[0].plot.getAxis("bottom").style["maxTextLevel"] == 0


def test_the_close_question_says_what_each_answer_does(page, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    seen = {}

    def fake_exec(box):
        seen["buttons"] = [b.text() for b in box.buttons()]
        return 0

    monkeypatch.setattr(QMessageBox, "exec", fake_exec)
    page.ask_on_close()
    # (QMessageBox lists its buttons by role, not in the order they were added.)
    assert sorted(seen["buttons"]) == ["Don't close", "Keep training in the background and close",
                                       "Stop, save a checkpoint and close"]


def test_the_page_has_no_inner_scroll_box_and_shows_every_profile(page, qtbot):
    from PySide6.QtWidgets import QScrollArea

    page.resize(1024 - 200, 700 - 80)  # the page's share of a 1024x700 window
    qtbot.wait(20)
    assert len(page.findChildren(QScrollArea)) == 1  # the page's own; the setup is not boxed inside it
    picker = page.setup.picker
    for button in picker.buttons.values():
        assert button.isVisibleTo(page) and button.height() >= button.sizeHint().height()
    assert page.run.height() >= 400
    page._running_changed(True)  # during a run the plots and the log fit 1024x700 without scrolling
    qtbot.wait(20)
    assert page.scroll.verticalScrollBar().maximum() == 0 and page.run.height() >= 500
    page._running_changed(False)
    page.resize(1400 - 200, 950 - 70)  # at 1400x950, before a run, the whole setup and Start are in view (the
    qtbot.wait(20)                      # second row of plots, empty until a run, may need a scroll since the judge's)
    start, view = page.run.start_button, page.scroll.viewport()
    assert 0 <= start.mapTo(view, start.rect().topLeft()).y() <= view.height() - start.height()
    # Three engines' lines fit in that; each further engine adds its line of facts (one row of the engine choice).
    choice = page.setup.engine_choice
    extra_rows = max(0, len(choice.buttons) - 3)
    assert page.scroll.verticalScrollBar().maximum() <= 60 + extra_rows * (choice.buttons["xtts"].height() + 2)


def test_library_noise_goes_to_the_output_file_not_the_log_view(page, tmp_path):
    from alltalk_gui.gui.train.child_output import OUTPUT_FILE, ChildOutput

    run = page.run
    run.log.clear()
    run.output = ChildOutput(tmp_path)
    lines = [
        "$ python -u -m alltalk_gui.core.training.runner --config launch_config.json",
        "[transformers] Model config: eos_token_id must be `None` or an integer within the vocabulary",
        "Failed to load CPU gemm_4bit_forward from kernels-community: No module named 'kernels'. Please make sure "
        "you already `pip install kernels`",
        "/venv/lib/python3.11/site-packages/torch/utils/checkpoint.py:87: UserWarning: None of the inputs have "
        "requires_grad=True.",
        "  warnings.warn(",
        "Warning: the dataset has only 3 clips",
        "Traceback (most recent call last):",
    ]
    for line in lines:
        run._on_output(line)
    run.output.close()
    assert run.log.shown_text().splitlines() == ["Warning: the dataset has only 3 clips",
                                                 "Traceback (most recent call last):"]
    assert (tmp_path / OUTPUT_FILE).read_text().splitlines() == lines  # everything, for a bug report
    assert run.log.text.minimumHeight() >= 6 * run.log.text.fontMetrics().lineSpacing()


def test_a_run_folds_the_setup_into_one_line(page, qtbot):
    page.resize(1024 - 200, 700 - 70)
    page.setup.picker.choose("low")
    page._running_changed(True)
    assert not page.setup.isVisibleTo(page) and page.running_note.isVisibleTo(page)
    assert "Low VRAM" in page.running_note.text()
    page._running_changed(False)
    assert page.setup.isVisibleTo(page) and not page.running_note.isVisibleTo(page) and page.setup.isEnabled()
    qtbot.wait(300)  # the end of a run scrolls to its summary and plots, below the setup
    bar = page.scroll.verticalScrollBar()
    assert bar.maximum() > 0 and bar.value() == min(page._run_holder.y(), bar.maximum())
