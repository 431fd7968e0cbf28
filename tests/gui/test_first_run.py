"""The first-run page and the checks behind it: GPU, disk space, base model, licence, default profile."""

from __future__ import annotations

import logging
import shutil
from collections import namedtuple

import pytest
from PySide6.QtCore import Qt

from alltalk_gui.core import app_settings
from alltalk_gui.core.machine import gpu
from alltalk_gui.gui.start import system_checks
from alltalk_gui.gui.main_window import MainWindow
from alltalk_gui.gui.start import first_run_page
from alltalk_gui.gui.start.first_run_page import FirstRunPage, default_profile, first_run_pending
from alltalk_gui.gui.start.system_checks import OK, PROBLEM, WARNING


@pytest.fixture(autouse=True)
def app_config(tmp_path, monkeypatch):
    """App settings (base model, licence) in a folder of their own, empty at the start of each test."""
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "app_config"))


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from alltalk_gui.core.engines.xtts.tiny_model import build_tiny_xtts

    return build_tiny_xtts(tmp_path_factory.mktemp("tiny_xtts"))


def wait_checks(qtbot, page: FirstRunPage) -> None:
    # Loading torch the first time takes several seconds on a busy machine.
    qtbot.waitUntil(lambda: not page.is_checking(), timeout=120_000)


def cuda(name: str, total: float) -> gpu.DeviceInfo:
    return gpu.DeviceInfo(kind="cuda", index=0, name=name, total_gib=total, free_gib=total - 0.5, bf16=True,
                          capability="8.6")


CPU = gpu.DeviceInfo(kind="cpu", index=0, name="Test CPU", total_gib=32.0, free_gib=20.0, bf16=True, cores=8)


# -- checks, without Qt -------------------------------------------------------------------------------------
def test_gpu_check_says_cpu_only_plainly_on_this_machine():
    import torch

    check = system_checks.check_gpu()
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    assert check.status == WARNING
    assert check.headline.startswith("CPU only")
    assert "cores" in check.details and "GiB" in check.details


@pytest.mark.parametrize("total, status, words", [
    (24.0, OK, "full fine-tuning"),
    (8.0, OK, "low-memory profile"),
    (4.0, WARNING, "may not fit"),
])
def test_gpu_check_judges_the_graphics_memory(monkeypatch, total, status, words):
    monkeypatch.setattr(gpu, "list_devices", lambda: [cuda("NVIDIA GeForce RTX 4090", total), CPU])
    check = system_checks.check_gpu()
    assert check.status == status
    assert check.headline.startswith(f"NVIDIA GeForce RTX 4090, {total:.1f} GiB")
    assert words in check.details


Usage = namedtuple("Usage", "total used free")


@pytest.mark.parametrize("free_gb, status", [(50, OK), (12, WARNING), (3, PROBLEM)])
def test_disk_check_compares_free_space_with_what_a_project_needs(monkeypatch, tmp_path, free_gb, status):
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(500 * 10**9, 0, free_gb * 10**9))
    check = system_checks.check_disk(tmp_path)
    assert check.status == status
    assert check.headline.startswith(f"{free_gb:.1f} GB free of 500 GB")


def test_disk_check_measures_the_nearest_existing_folder(tmp_path):
    check = system_checks.check_disk(tmp_path / "not" / "made" / "yet")
    assert f"holding {tmp_path}." in check.headline


def test_base_model_check_without_a_folder_explains_where_to_get_one():
    check = system_checks.check_base_model()
    assert check.status == WARNING
    assert "huggingface.co/coqui/XTTS-v2" in check.details and "model.pth" in check.details


def test_base_model_check_accepts_a_valid_folder_and_names_the_missing_file(tiny_model, tmp_path):
    check = system_checks.check_base_model(tiny_model)
    assert check.status == OK, check.details
    assert "2 layers" in check.details

    broken = tmp_path / "broken"
    shutil.copytree(tiny_model, broken)
    (broken / "dvae.pth").unlink()
    check = system_checks.check_base_model(broken)
    assert check.status == PROBLEM
    assert "dvae.pth" in check.details


def test_base_model_check_reports_an_unreadable_settings_file(tmp_path):
    config = tmp_path / "app_config"
    config.mkdir()
    (config / "settings.json").write_text("{not json")
    check = system_checks.check_base_model()
    assert check.status == PROBLEM
    assert "settings.json" in check.details


# -- the page -----------------------------------------------------------------------------------------------
def test_page_shows_busy_bars_then_results_and_logs_them(qtbot, caplog, tmp_path):
    page = FirstRunPage()
    qtbot.addWidget(page)
    page.show()
    with caplog.at_level(logging.INFO, logger="alltalk_gui"):
        page.start_checks()
        cards = (page.gpu_card, page.disk_card, page.model_card)
        assert all(card.busy.isVisible() for card in cards)
        assert "loading PyTorch" in page.gpu_card.headline.text()
        assert not page.recheck.isEnabled()
        wait_checks(qtbot, page)
    assert all(card.result is not None and not card.busy.isVisible() for card in cards)
    assert page.model_card.result.status == WARNING  # no base model chosen in a fresh config
    assert page.recheck.isEnabled()
    line = next(r.getMessage() for r in caplog.records if "First-run checks finished" in r.getMessage())
    assert page.gpu_card.result.headline in line


def test_a_failing_check_is_shown_as_a_problem_not_lost(qtbot, monkeypatch, caplog):
    def broken():
        raise RuntimeError("driver exploded")

    monkeypatch.setattr(system_checks, "check_gpu", broken)
    page = FirstRunPage()
    qtbot.addWidget(page)
    with caplog.at_level(logging.ERROR, logger="alltalk_gui"):
        page.start_checks()
        wait_checks(qtbot, page)
    assert page.gpu_card.result.status == PROBLEM
    assert "driver exploded" in page.gpu_card.details.text()
    assert any("Traceback" in r.getMessage() for r in caplog.records)


def test_choosing_a_base_model_validates_and_remembers_it(qtbot, tiny_model, tmp_path):
    page = FirstRunPage()
    qtbot.addWidget(page)
    page.use_base_model(str(tmp_path))  # an empty folder is refused and not remembered
    wait_checks(qtbot, page)
    assert page.model_card.result.status == PROBLEM
    assert system_checks.base_model_folder() is None
    assert page.choose_model.isEnabled()

    page.use_base_model(str(tiny_model))
    wait_checks(qtbot, page)
    assert page.model_card.result.status == OK, page.model_card.result.details
    assert system_checks.base_model_folder() == tiny_model


def test_accepting_the_licence_is_recorded_once(qtbot):
    page = FirstRunPage()
    qtbot.addWidget(page)
    assert "https://coqui.ai/cpml" in page.licence_label.text()
    assert not app_settings.licence_accepted("coqui-cpml")
    page.licence.setChecked(True)
    assert app_settings.licence_accepted("coqui-cpml")
    assert not page.licence.isEnabled()
    assert "(accepted)" in page.licence_label.text()
    assert FirstRunPage().licence.isChecked()  # a later page shows it as accepted


def test_default_profile_is_remembered(qtbot):
    assert default_profile() == "auto"
    page = FirstRunPage()
    qtbot.addWidget(page)
    page.profile.setCurrentIndex(page.profile.findData("low"))
    assert default_profile() == "low"
    assert FirstRunPage().profile.currentData() == "low"


def test_main_window_shows_the_page_and_continue_returns_to_the_welcome_page(qtbot):
    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    assert first_run_pending()
    window.show_first_run()
    assert window.stack.currentWidget() is window.first_run
    wait_checks(qtbot, window.first_run)
    with qtbot.waitSignal(window.first_run.done):
        qtbot.mouseClick(window.first_run.continue_button, Qt.MouseButton.LeftButton)
    assert window.stack.currentWidget() is window.welcome
    assert not first_run_pending()
    assert not first_run_page._running


def test_help_menu_offers_the_computer_check(qtbot):
    window = MainWindow()
    qtbot.addWidget(window)
    help_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Help")
    action = next(a for a in help_menu.actions() if a.text().startswith("&Check this computer"))
    action.trigger()
    assert window.stack.currentWidget() is window.first_run
    wait_checks(qtbot, window.first_run)


def test_gpu_check_puts_a_card_without_kernels_first(monkeypatch):
    from dataclasses import replace

    warning = "This PyTorch has no kernels for the NVIDIA GeForce GTX 1080 (compute capability 6.1) ..."
    card = replace(cuda("NVIDIA GeForce GTX 1080", 8.0), capability="6.1", warning=warning)
    monkeypatch.setattr(gpu, "list_devices", lambda: [card, CPU])
    check = system_checks.check_gpu()
    assert check.status == PROBLEM and check.details == warning


def test_cpu_only_check_names_the_card_pytorch_cannot_use(monkeypatch):
    from dataclasses import replace

    warning = "This computer's NVIDIA card (NVIDIA GeForce GTX 1080) is not used: ..."
    monkeypatch.setattr(gpu, "list_devices", lambda: [replace(CPU, warning=warning)])
    check = system_checks.check_gpu()
    assert check.status == WARNING and check.details.endswith(warning)
