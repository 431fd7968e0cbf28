"""The export form: the folder follows the format, the final path is shown before Export, and an F5 export after an
XTTS export lands in AllTalk's models/f5tts (the walk of 2026-11-26 found it written into models/xtts)."""

from __future__ import annotations

import pytest

from alltalk_gui.core.engine_api.engine import get_engine
from alltalk_gui.gui.preview.export_panel import ExportPanel


@pytest.fixture
def panel(qtbot):
    panel = ExportPanel()
    qtbot.addWidget(panel)
    panel.set_default_name("Ada's voice")
    return panel


def test_an_f5_export_after_an_xtts_export_goes_to_models_f5tts(panel, tmp_path, qtbot):
    root = tmp_path / "alltalk_tts"
    (root / "models" / "xtts").mkdir(parents=True)
    panel.set_engine(get_engine("xtts"))
    assert panel.folder_caption.text() == "AllTalk folder"
    panel.folder.setText(str(root / "models" / "xtts"))  # as the walk chose it for the XTTS export
    panel.folder.textEdited.emit(panel.folder.text())
    assert f"Exports to <b>{root / 'models' / 'xtts' / 'Adas_voice'}</b>" in panel.result.text()
    assert panel.out_dir() == root / "models" / "xtts"

    panel.set_engine(get_engine("f5"))  # the F5 checkpoint selected next
    assert panel.out_dir() == root / "models" / "f5tts"
    assert f"Exports to <b>{root / 'models' / 'f5tts' / 'f5tts_v1_Adas_voice'}</b>" in panel.result.text()
    assert "not an AllTalk" not in panel.result.text()

    again = ExportPanel()  # after a restart: the AllTalk folder is remembered
    qtbot.addWidget(again)
    again.set_default_name("Ada's voice")
    again.set_engine(get_engine("f5"))
    assert again.out_dir() == root / "models" / "f5tts"


def test_each_kind_of_folder_is_remembered_and_mismatches_warn(panel, tmp_path):
    root = tmp_path / "alltalk_tts"
    (root / "models").mkdir(parents=True)
    panel.set_engine(get_engine("xtts"))
    panel.folder.setText(str(root))
    panel.folder.textEdited.emit(str(root))
    panel.format.setCurrentIndex(panel.format.findData("coqui"))
    assert panel.folder_caption.text() == "Into"
    panel.folder.setText(str(root / "models" / "xtts"))
    panel.folder.textEdited.emit(panel.folder.text())
    assert "AllTalk does not load the coqui-tts model folder format" in panel.result.text()
    panel.format.setCurrentIndex(panel.format.findData("alltalk"))
    assert panel.folder.text() == str(root)  # the AllTalk folder, remembered apart from the other one
    panel.folder.setText(str(tmp_path / "somewhere"))
    assert "is not an AllTalk folder" in panel.result.text() and "models/xtts/" in panel.result.text()
    panel.name.setText("...")
    assert "Type a name" in panel.result.text() and not panel.button.isEnabled()


@pytest.mark.parametrize("engine", ["xtts", "f5", "parler", "orpheus"])
def test_half_precision_is_offered_only_where_the_engines_exports_have_the_choice(panel, engine):
    """Orpheus's model folder is always bf16: its "Half precision" box did nothing when ticked."""
    panel.set_engine(get_engine(engine))
    panel.half.setChecked(True)
    offered = engine != "orpheus"
    assert panel.half.isVisibleTo(panel) == offered and get_engine(engine).export_half == offered
    assert panel.options([]).half == offered
