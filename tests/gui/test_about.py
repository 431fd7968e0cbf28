"""The About dialog: versions from package metadata, the GPU found by a worker thread, the licences."""

from __future__ import annotations

import importlib.metadata as metadata
import subprocess
import sys

from PySide6.QtCore import QTimer, qVersion
from PySide6.QtWidgets import QApplication, QLabel

from alltalk_gui import __version__
from alltalk_gui.gui.start import about_dialog
from alltalk_gui.gui.start.about_dialog import AboutDialog, licence_of, version_rows
from alltalk_gui.gui.main_window import MainWindow
from alltalk_gui.gui.start import first_run_page


def wait_gpu(qtbot, dialog: AboutDialog) -> None:
    qtbot.waitUntil(lambda: not dialog.gpu_busy.isVisibleTo(dialog), timeout=120_000)


def test_versions_come_from_metadata_without_importing_torch():
    code = ("import sys; from alltalk_gui.gui.start.about_dialog import version_rows; rows = dict(version_rows()); "
            "print(rows['torch']); sys.exit(1 if 'torch' in sys.modules else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == metadata.version("torch")


def test_dialog_lists_versions_and_finds_the_graphics_card(qtbot):
    import torch

    dialog = AboutDialog()
    qtbot.addWidget(dialog)
    dialog.show()
    rows = dict(version_rows())
    assert rows["AllTalk GUI"] == __version__ and rows["Qt"] == qVersion()
    shown = {label.text() for label in dialog.findChildren(QLabel)}
    assert {"0.1.0", qVersion(), metadata.version("coqui-tts")} <= shown
    assert dialog.gpu_busy.isVisibleTo(dialog)
    wait_gpu(qtbot, dialog)
    expected_build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "CPU build (no CUDA)"
    assert dialog.cuda_label.text() == expected_build
    if not torch.cuda.is_available():
        assert dialog.gpu_label.text().startswith("CPU only")


def test_licences_name_the_xtts_model_licence_with_its_link(qtbot):
    dialog = AboutDialog()
    qtbot.addWidget(dialog)
    html = dialog.licences.toHtml()
    text = dialog.licences.toPlainText()
    assert "Coqui Public Model License 1.0.0 (CPML)" in text
    assert 'href="https://coqui.ai/cpml"' in html
    assert "non-commercial" in text
    assert "AllTalk GUI: MPL-2.0" in text
    for dist, _ in about_dialog.components():  # each engine's packages too (coqui-tts for XTTS v2)
        assert licence_of(dist) in text
    wait_gpu(qtbot, dialog)


def test_licence_of_reads_expressions_classifiers_and_missing_packages():
    assert licence_of("torch") == "BSD-3-Clause"  # License-Expression
    assert licence_of("alltalk-gui") == "MPL-2.0"
    assert licence_of("no-such-package-anywhere") == "not installed"
    # numpy declares a long SPDX expression; a pasted licence text would never be shown whole.
    assert "\n" not in licence_of("numpy")


def test_copy_versions_puts_a_bug_report_block_on_the_clipboard(qtbot):
    dialog = AboutDialog()
    qtbot.addWidget(dialog)
    wait_gpu(qtbot, dialog)
    dialog.copy_button.click()
    text = QApplication.clipboard().text()
    assert f"AllTalk GUI: {__version__}" in text
    assert f"Graphics card: {dialog.gpu_label.text()}" in text
    assert f"PyTorch build: {dialog.cuda_label.text()}" in text


def test_help_about_opens_the_dialog(qtbot):
    window = MainWindow()
    qtbot.addWidget(window)
    seen = []

    def close_it():
        dialog = QApplication.activeModalWidget()
        seen.append(dialog)
        dialog.reject()

    QTimer.singleShot(200, close_it)
    help_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Help")
    next(a for a in help_menu.actions() if a.text() == "&About AllTalk GUI").trigger()
    assert isinstance(seen[0], AboutDialog)
    qtbot.waitUntil(lambda: not first_run_page._running, timeout=120_000)  # its GPU probe ends on its own
