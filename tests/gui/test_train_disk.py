"""Issue 29 item 2 on the Train page: the disk fact says what the run needs against what is free, Start warns when
it does not fit and offers to keep fewer checkpoints, and a run stopped by a full disk says where and how much.

The free space is the OS's answer (``shutil.disk_usage``, what every free-space question here goes through) set
to a small figure; the run itself is not started (RunPanel.start records the config the page would run with).
"""

from __future__ import annotations

import shutil
from collections import namedtuple

import pytest

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.training.disk_plan import plan_disk
from alltalk_gui.core.training.events import Done, Error, ErrorKind, FinishReason, Started
from alltalk_gui.gui.train.train_page import TrainPage
from alltalk_gui.gui.train.train_run import RunPanel
from tests.gui.test_train_page import tiny_base, voice_project  # noqa: F401  (the page's fixtures)

Usage = namedtuple("Usage", "total used free")


def _page(qtbot, monkeypatch, tmp_path, tiny_base, voice_project, free: int | None) -> TrainPage:
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    from alltalk_gui.core.machine.gpu import DeviceInfo
    from alltalk_gui.gui.start import system_checks

    system_checks.set_base_model_folder(tiny_base)
    if free is not None:
        real = shutil.disk_usage
        monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(real(path).total, real(path).used, free))
    page = TrainPage()
    qtbot.addWidget(page)
    page.setup.set_devices([DeviceInfo(kind="cpu", index=-1, name="CPU", total_gib=16.0, free_gib=12.0, bf16=False, cores=2)])
    page.resize(1200, 900)
    page.set_project(VoiceProject.open(voice_project))
    page.show()
    return page


def _needed(page, keep_last: int) -> int:
    return plan_disk(page.setup.build_config()).needed_bytes(keep_last)


@pytest.fixture
def started(monkeypatch):
    calls = []
    monkeypatch.setattr(RunPanel, "start", lambda self, config, processes=1: calls.append(config))
    return calls


def test_with_room_the_disk_fact_is_green_and_start_asks_nothing(qtbot, monkeypatch, tmp_path, tiny_base,
                                                                   voice_project, started):
    page = _page(qtbot, monkeypatch, tmp_path, tiny_base, voice_project, free=None)
    text = page.setup.disk_label.text()
    assert "#2e7d32" in text and "needed for checkpoints and an export" in text and "2 kept + the best" in text
    monkeypatch.setattr(page, "ask_disk", lambda *a: pytest.fail("asked although there is room"))
    page.start()
    assert len(started) == 1 and started[0].keep_last == 2


@pytest.mark.parametrize("answer", ["fewer", "anyway", "cancel"])
def test_without_room_start_warns_and_can_keep_fewer_checkpoints(qtbot, monkeypatch, tmp_path, tiny_base,
                                                                  voice_project, started, answer):
    page = _page(qtbot, monkeypatch, tmp_path, tiny_base, voice_project, free=None)
    free = _needed(page, 1) + (1 << 20)  # one kept fits, two do not
    real = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(real(path).total, real(path).used, free))
    page.setup.refresh_facts()
    text = page.setup.disk_label.text()
    assert "#c62828" in text and "Not enough: keep 1 (Advanced settings: Checkpoints kept)" in text, text

    asked = []
    monkeypatch.setattr(page, "ask_disk", lambda warning, fewer: asked.append((warning, fewer)) or answer)
    page.start()
    warning, fewer = asked[0]
    assert fewer == 1 and warning.startswith("Not enough free disk space for this run.")
    assert "Keeping 1 checkpoint instead of 2 would fit" in warning
    if answer == "cancel":
        assert started == []
        return
    assert started[-1].keep_last == (1 if answer == "fewer" else 2)
    if answer == "fewer":  # the Advanced field shows it, as the user's change, and the fact turns green
        assert page.setup.advanced._get("keep_last") == 1 and page.setup.advanced.notes["keep_last"].text() == \
            "(changed)"
        assert "#2e7d32" in page.setup.disk_label.text()
        page.grab().save(str(tmp_path / "train_disk_fewer.png"))


def test_a_run_stopped_by_a_full_disk_says_where_and_how_much(qtbot, tmp_path):
    panel = RunPanel()
    qtbot.addWidget(panel)
    folder = tmp_path / "voice" / "runs" / "r" / "checkpoints"
    message = (f"The checkpoint at step 3 could not be written to {folder}: the disk is full (about 5.31 GB needed "
               "there, 1.20 GB free). The partial checkpoint was removed. The last checkpoint (step_0000002) is kept. "
               "Free some space (delete old runs, or keep fewer checkpoints: keep_last), then resume the run "
               "(Resume, or --resume) to go on.")
    panel.run_dir = folder.parent
    panel.on_event(Started(run_dir=str(folder.parent), device="cpu", processes=1, train_clips=3, eval_clips=1,
                           steps_per_epoch=3, total_steps=9, start_step=0, start_epoch=0, trainable_parameters=1,
                           config={}))
    panel.on_event(Error(kind=ErrorKind.DISK_FULL, message=message, folder=str(folder), needed_bytes=5_310_000_000,
                         free_bytes=1_200_000_000))
    panel.on_event(Done(step=2, epoch=0, reason=FinishReason.ERROR, final_loss=1.0, best_eval_loss=None,
                        best_checkpoint=None, last_checkpoint=str(folder / "step_0000002"), elapsed_s=1.0))
    panel._on_exited(1, True)
    banners = " ".join(panel.banner_texts())
    assert str(folder) in banners and "about 5.31 GB needed" in banners and "1.20 GB free" in banners
    assert "step_0000002) is kept" in banners
    assert "Free some space (Project › Free disk space…), then Resume" in panel.status.text()


def test_free_space_opens_the_runs_window_then_asks_again(qtbot, monkeypatch, tmp_path, tiny_base, voice_project,
                                                          started):
    """"Free space…" in the warning: the window's Free disk space is asked for, then the plan is made again with
    what is free by then (here still too little: the user then starts anyway)."""
    page = _page(qtbot, monkeypatch, tmp_path, tiny_base, voice_project, free=None)
    free = _needed(page, 1) - (1 << 20)  # not even one checkpoint fits
    real = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(real(path).total, real(path).used, free))
    answers, asked, shown = iter(["free", "anyway"]), [], []
    monkeypatch.setattr(page, "ask_disk", lambda warning, fewer: asked.append(fewer) or next(answers))
    page.free_space_requested.connect(lambda: shown.append(True))
    page.start()
    assert shown == [True] and asked == [None, None] and len(started) == 1
