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
    # No XTTS base is set to lend the DVAE and mel statistics: what to do (the folder itself is usable then).
    assert "uses its best_model.pth" in text and "no XTTS v2 base model is set" in text and not choice.found()
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


def test_an_orpheus_lora_adapter_chosen_after_the_base_goes_on_that_base(qtbot, tmp_path, tmp_path_factory,
                                                                         monkeypatch):
    """Unsloth's usual output, an adapter alone, chosen on the Train page: the setting becomes the adapter, the base
    chosen before is kept (shared_files.remember_choice) and the engine finds it there, so the page says the folder
    is usable, not that it lacks the model's files."""
    from alltalk_gui.core.engine_api.shared_files import previous_setting
    from tests.core.engines.orpheus.test_adapter_base import make_adapter, tree
    from tests.orpheus_tiny import tiny_orpheus_folder

    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    base = tiny_orpheus_folder(tmp_path_factory)
    adapter = make_adapter(base, tmp_path / "unsloth" / "lora_model")
    before = tree(adapter)
    choice = _choice(qtbot, "orpheus")
    choice.set_folder(base)
    assert "found in" in choice.label.text()
    choice.set_folder(adapter)
    qtbot.waitUntil(lambda: choice.check is not None and not choice.check.is_running(), timeout=60_000)
    qtbot.waitUntil(lambda: "found in" in choice.label.text(), timeout=20_000)
    text = choice.label.text()
    assert str(adapter) in text and "color" not in text, text
    assert app_settings.get(choice.engine.base_model_setting) == str(adapter.absolute())
    assert app_settings.get(previous_setting(choice.engine.base_model_setting)) == str(base.absolute())
    assert tree(adapter) == before  # only read

