"""The Train and Preview pages keep one engine in view (the walk of 2026-11-26: after switching to F5-TTS the XTTS
run's summary and plots stayed; with XTTS v2 ticked, Resume continued a stopped F5 run while project.json kept
'xtts'; the checkpoint list mixed both engines' runs without naming them, eval losses 14.05 against 3.63), and
the plots after a run stay readable: a single point drawn, no negative steps, the legends off the axes."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint

from alltalk_gui.core.machine.gpu import DeviceInfo
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.training.events import Done, FinishReason
from alltalk_gui.gui.preview.preview_page import PreviewPage
from alltalk_gui.gui.train.judge_plot import JudgePlot
from alltalk_gui.gui.train.live_plot import PLOT_MIN_HEIGHT
from alltalk_gui.gui.train.train_page import TrainPage
from tests.gui.walked_project import fake_run, walked_project

XTTS_RUN, F5_RUN = "run_20261126_120147", "run_20261126_121216"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    project = walked_project(tmp_path)
    fake_run(project, XTTS_RUN, "xtts", 30, finished=True, eval_losses=(3.92, 3.85, 3.8, 3.7, 3.63))
    fake_run(project, F5_RUN, "f5", 1, finished=False, eval_losses=(14.05, 14.0), start_time=1.9e9)  # newer
    return VoiceProject.open(project.root)


def _train_page(qtbot, project, size=(1200, 890)) -> TrainPage:
    page = TrainPage()
    qtbot.addWidget(page)
    page.setup.set_devices([DeviceInfo("cpu", 0, "CPU", 16.0, 12.0, False, cores=2)])
    page.resize(*size)
    page.show()
    page.set_project(project)
    return page


def _wait_for_the_switch(qtbot, page) -> None:
    """A switch judges the clips in a worker; the page shows the new engine once it is over."""
    qtbot.waitUntil(lambda: not page.setup.switcher.is_running() and page.setup.engine_choice.isEnabled(),
                    timeout=120_000)


def test_each_engine_shows_and_resumes_only_its_own_runs(qtbot, project):
    page = _train_page(qtbot, project)
    run = page.run
    assert page.setup.engine == "xtts"  # the project's engine, although the newest run is F5's
    assert run.history.step == 30 and not run.resume_button.isEnabled()
    assert f"Run {XTTS_RUN} finished" in run.status.text()
    assert f"The F5-TTS v1 run {F5_RUN} stopped at step 1: choose F5-TTS v1 above" in run.status.text()

    page.setup.ask_switch = lambda change: True  # the user goes ahead with what the switch changes
    page.setup.engine_choice.buttons["f5"].click()
    _wait_for_the_switch(qtbot, page)
    assert VoiceProject.open(project.root).engine == "f5"
    assert run.history.loss.x == [1] and run.resumable_run.name == F5_RUN and run.resume_button.isEnabled()
    assert "stopped at step 1 without finishing: Resume continues it" in run.status.text()
    assert run.resumable_config().engine == "f5"

    page.setup.engine_choice.buttons["xtts"].click()
    _wait_for_the_switch(qtbot, page)
    assert run.history.step == 30 and run.resumable_run is None and not run.resume_button.isEnabled()
    assert VoiceProject.open(project.root).engine == "xtts"


def test_reopened_with_xtts_ticked_a_stopped_f5_run_is_not_resumed(qtbot, project):
    page = _train_page(qtbot, project)
    assert page.setup.engine == "xtts" and page.run.resumable_run is None
    page.resume()  # nothing to resume for XTTS v2: no F5 run starts under its name
    assert page.run.supervisor is None and VoiceProject.open(project.root).engine == "xtts"
    # Even handed another engine's run, the panel refuses rather than trains it.
    page.run.resumable_run = project.runs_dir / F5_RUN
    page.run.resume()
    assert page.run.supervisor is None and "trained with another engine (f5)" in " ".join(page.run.banner_texts())


def test_the_checkpoint_list_names_the_engine_and_compares_within_it(qtbot, project):
    page = PreviewPage()
    qtbot.addWidget(page)
    page.set_project(project)
    # The checkpoints, then the list's last entry, "A model folder…" (tests/gui/test_preview_model_folder.py).
    labels = [page.checkpoint_box.itemText(i) for i in range(len(page.inputs.checkpoints))]
    assert page.checkpoint_box.itemText(page.checkpoint_box.count() - 1) == "A model folder…"
    assert labels[0] == f"XTTS v2 · {XTTS_RUN} · step 30, eval loss 3.630  (latest, best)"  # the project's first
    assert labels[-1] == f"F5-TTS v1 · {F5_RUN} · step 1, eval loss 14.050"  # no mark: not compared with XTTS
    assert page.selected_checkpoint().engine == "xtts"
    project.choose_engine("f5")
    page.refresh()
    labels = [page.checkpoint_box.itemText(i) for i in range(len(page.inputs.checkpoints))]
    assert labels[0] == f"F5-TTS v1 · {F5_RUN} · step 1, eval loss 14.050  (latest, best)"
    assert page.selected_checkpoint().engine == "f5" and page.inputs.engine.name == "f5"


def test_a_single_point_is_drawn_and_no_step_is_negative(qtbot, project):
    project.choose_engine("f5")
    page = _train_page(qtbot, project)
    run = page.run
    for plot in run.plots():
        shown = [c for c in plot.curves.values() if c.xData is not None and len(c.xData)]
        if isinstance(plot, JudgePlot):  # a fake run has no judge scores: nothing drawn, and nothing to check
            continue
        assert shown and all(c.opts["symbol"] is not None for c in shown if len(c.xData) == 1), type(plot)
        assert plot.plot.getViewBox().viewRange()[0][0] >= 0
    page.setup.ask_switch = lambda change: True
    page.setup.engine_choice.buttons["xtts"].click()  # 30 steps: lines again, no dots
    _wait_for_the_switch(qtbot, page)
    assert run.loss_plot.curves["train"].opts["symbol"] is None


@pytest.mark.parametrize("size", [(1200, 890), (824, 540)])  # the page at 1400x950 and at 1024x600
def test_after_a_run_the_plots_keep_a_readable_height_and_the_keys_stay_off_the_axes(qtbot, project, size):
    page = _train_page(qtbot, project, size)
    run = page.run
    run.add_banner("info", "Stopped at step 30; the checkpoint is saved.")
    run._finished(Done(step=30, epoch=4, reason=FinishReason.FINISHED, final_loss=2.5, best_eval_loss=3.63,
                       best_checkpoint=None, last_checkpoint="x", elapsed_s=400.0, base_eval_loss=4.22), 0)
    run.refresh_plots()
    page.scroll.ensureWidgetVisible(run.loss_plot)
    qtbot.wait(150)
    assert run.summary.isVisible()
    bottoms: dict[int, set[int]] = {}  # the plots sit two by two: by each row's top
    for plot in run.plots():
        assert plot.plot.height() >= PLOT_MIN_HEIGHT, (size, plot.plot.height())
        plot_bottom = plot.plot.mapTo(plot, QPoint(0, plot.plot.height())).y()
        assert plot.key.geometry().top() >= plot_bottom  # the key under the plot, never over its axis
        row = bottoms.setdefault(plot.mapTo(page, QPoint(0, 0)).y(), set())
        row.add(plot.plot.mapTo(page, QPoint(0, plot.plot.height())).y())
    assert len(bottoms) == 2 and all(len(row) == 1 for row in bottoms.values())  # a row's step axes level
