"""The small things the walk of 2026-11-26 listed: plain plurals, "Training on the CPU.", the Train page not
jumping when the device check ends, the log wrapping, one spelling of a project's name, F5's base-model picker
opening beside the XTTS model's folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from PySide6.QtWidgets import QFileDialog, QLabel, QPlainTextEdit

from alltalk_gui.core import app_settings
from alltalk_gui.core.machine.gpu import DeviceInfo
from alltalk_gui.gui.common.wording import noun, plural
from alltalk_gui.gui.start.new_project_dialog import NewProjectDialog
from alltalk_gui.gui.train.base_model_choice import BaseModelChoice
from alltalk_gui.gui.train.log_view import LogView
from alltalk_gui.gui.train.train_run import device_words
from alltalk_gui.gui.train.train_page import TrainPage
from alltalk_gui.gui.train.train_setup import SetupPanel


def test_plurals_read_as_words():
    assert plural(1, "clip") == "1 clip" and plural(54, "clip") == "54 clips" and plural(0, "recording") == "0 recordings"
    assert f"{plural(1, 'file')} {noun(1, 'was')}" == "1 file was" and f"{plural(2, 'file')} {noun(2, 'was')}" == \
        "2 files were"


def test_the_device_is_named_as_a_person_says_it():
    assert device_words("cpu") == "the CPU" and device_words("cuda:1") == "GPU 1" and device_words("cuda:0", 4) == "4 GPUs"


def test_the_train_page_does_not_jump_when_the_devices_are_listed(qtbot, monkeypatch):
    monkeypatch.setattr(SetupPanel, "scan_devices", lambda self: None)  # listed below, as the check's answer
    page = TrainPage()
    qtbot.addWidget(page)
    page.resize(1200, 890)
    page.show()
    qtbot.wait(50)
    start = page.run.start_button
    before = start.mapTo(page, start.rect().topLeft()).y()
    page.setup.set_devices([DeviceInfo("cpu", 0, "AMD EPYC 7B13", 23.5, 19.2, False, cores=2)])
    qtbot.wait(50)
    assert start.mapTo(page, start.rect().topLeft()).y() == before


def test_long_log_lines_wrap(qtbot):
    log = LogView()
    qtbot.addWidget(log)
    assert log.text.lineWrapMode() == QPlainTextEdit.LineWrapMode.WidgetWidth


def test_a_project_folder_keeps_the_name_as_typed(qtbot, tmp_path):
    dialog = NewProjectDialog()
    qtbot.addWidget(dialog)
    dialog.parent_edit.setText(str(tmp_path))
    dialog.name_edit.setText("Ada's voice")
    assert dialog.folder == tmp_path / "Ada's voice"
    dialog.name_edit.setText('A: "quoted" / name. ')
    assert dialog.folder == tmp_path / "A_ _quoted_ _ name"  # what Windows refuses becomes "_", no dot at the end
    dialog.name_edit.setText("con")
    assert dialog.folder == tmp_path / "con_"  # a device name on Windows


def test_f5s_first_base_model_choice_opens_beside_the_xtts_model(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    (tmp_path / "models" / "xtts" / "xttsv2_2.0.3").mkdir(parents=True)
    app_settings.set_value("base_model_dir", str(tmp_path / "models" / "xtts" / "xttsv2_2.0.3"))
    opened = []
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda _parent, _title, start: opened.append(start) or "")
    from PySide6.QtWidgets import QWidget

    holder = QWidget()
    qtbot.addWidget(holder)
    choice = BaseModelChoice(holder)
    choice.set_engine("f5")
    choice.choose()
    assert Path(opened[0]) == tmp_path / "models" / "xtts"


def test_every_text_names_both_engines(qtbot):
    from alltalk_gui.cli import build_parser
    from alltalk_gui.gui.start.about_dialog import AboutDialog, model_licences
    from alltalk_gui.gui.start.first_run_page import steps_text
    from alltalk_gui.gui.start.welcome_page import introduction

    for text in (introduction(), steps_text(), build_parser().description, model_licences()):
        assert "XTTS v2" in text and "F5-TTS v1" in text, text
    assert "Fine-tune a voice (XTTS v2, F5-TTS v1, " in build_parser().format_help()  # every engine, by its title
    about = AboutDialog()
    qtbot.addWidget(about)
    assert "Creative Commons Attribution-NonCommercial 4.0" in about.licences.toPlainText()


def test_the_base_model_check_recognises_the_other_engines_folder(qtbot, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QWidget

    pytest.importorskip("f5_tts", reason="f5-tts is not installed")
    from alltalk_gui.core.engines.f5.tiny_model import build_tiny_f5

    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    f5_folder = build_tiny_f5(tmp_path / "f5tts_v1_tiny")
    holder = QWidget()
    qtbot.addWidget(holder)
    choice = BaseModelChoice(holder)
    choice.set_engine("xtts")
    choice.set_folder(f5_folder)
    text = choice.label.text()
    assert "holds a base model for F5-TTS v1, not for XTTS v2" in text and "missing" not in text


def test_the_first_run_page_names_the_other_engines_base_model(qtbot):
    from alltalk_gui.gui.start.first_run_page import FirstRunPage

    page = FirstRunPage()
    qtbot.addWidget(page)
    assert any("XTTS v2 base model (the default engine)" in label.text()
               for label in page.model_card.findChildren(QLabel))
    text = page.other_engines.text()
    assert "F5-TTS v1" in text and "XTTS v2" not in text  # every other engine is named, the default one is not
    assert "base models are chosen or downloaded on the Train step" in text or (
        "F5-TTS v1: its base model is chosen or downloaded on the Train step" in text)
