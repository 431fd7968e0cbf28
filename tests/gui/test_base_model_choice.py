"""The Train page's base-model choice with a model the user fine-tuned elsewhere: a folder that lacks files gets
the engine's own words (what the folder is, where each file comes from) from a worker, in place of the bare list;
an answer for a folder chosen before is never shown for the next one."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from alltalk_gui.core import app_settings
from alltalk_gui.gui.train.base_model_choice import BaseModelChoice


def _choice(qtbot, engine: str) -> BaseModelChoice:
    holder = QWidget()
    qtbot.addWidget(holder)
    choice = BaseModelChoice(holder)
    choice.set_engine(engine)
    return choice


def _alltalk_training_folder(root):
    folder = root / "XTTS_FT-November-27-2026"
    folder.mkdir(parents=True)
    for name in ("best_model.pth", "config.json", "vocab.json"):
        (folder / name).write_bytes(b"x")
    return folder


def test_a_fine_tune_folder_is_explained_by_its_engine(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    choice = _choice(qtbot, "xtts")
    folder = _alltalk_training_folder(tmp_path)
    choice.set_folder(folder)
    assert "missing: model.pth, dvae.pth, mel_stats.pth" in choice.label.text()  # at once, from the file names
    qtbot.waitUntil(lambda: "training folder of coqui's Trainer" in choice.label.text(), timeout=20000)
    text = choice.label.text()
    assert "best_model.pth" in text and "models/trainedmodel/" in text and not choice.found()
    assert sorted(p.name for p in folder.iterdir()) == ["best_model.pth", "config.json", "vocab.json"]


def test_an_answer_for_an_earlier_folder_is_not_shown(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    choice = _choice(qtbot, "xtts")
    choice.set_folder(_alltalk_training_folder(tmp_path))
    first = choice.check
    app_settings.set_value(choice.engine.base_model_setting, "")  # the user moved on before the answer came
    choice.refresh()
    qtbot.waitUntil(lambda: not first.is_running(), timeout=20000)
    qtbot.wait(50)  # the answer's queued signal
    assert "not chosen yet" in choice.label.text() and "coqui" not in choice.label.text()
