"""Where an export goes, before it runs (the walk of 2026-11-26: an F5 export after an XTTS export was written into
AllTalk's models/xtts, where AllTalk never looks for F5 voices, and nothing showed the folder before Export)."""

from __future__ import annotations

from alltalk_gui.core.engine_api.engine import get_engine
from alltalk_gui.core.voice.export import ExportOptions, alltalk_root, export_destination


def _alltalk(tmp_path):
    root = tmp_path / "alltalk_tts"
    (root / "models" / "xtts" / "xttsv2_2.0.3").mkdir(parents=True)
    return root


def test_the_alltalk_folder_is_found_from_any_folder_in_it(tmp_path):
    root = _alltalk(tmp_path)
    for chosen in (root, root / "models", root / "models" / "xtts", root / "models" / "xtts" / "xttsv2_2.0.3"):
        assert alltalk_root(chosen) == root, chosen
    assert alltalk_root(tmp_path / "elsewhere") is None


def test_an_alltalk_format_lands_in_the_engines_own_models_folder(tmp_path):
    root = _alltalk(tmp_path)
    after_xtts = root / "models" / "xtts"  # what the user chose for the XTTS export
    xtts = export_destination(get_engine("xtts"), after_xtts, ExportOptions(name="Ada's voice"))
    assert xtts.folder == root / "models" / "xtts" / "Adas_voice" and not xtts.warning
    f5 = export_destination(get_engine("f5"), after_xtts, ExportOptions(name="Ada's voice"))
    assert f5.out_dir == root / "models" / "f5tts" and f5.folder == root / "models" / "f5tts" / "f5tts_v1_Adas_voice"
    assert not f5.warning


def test_a_folder_that_does_not_match_the_formats_layout_gets_a_warning(tmp_path):
    root = _alltalk(tmp_path)
    plain = export_destination(get_engine("f5"), tmp_path / "exports", ExportOptions(name="Ada"))
    assert plain.folder == tmp_path / "exports" / "f5tts_v1_Ada"
    assert "not an AllTalk folder" in plain.warning and "models/f5tts/" in plain.warning
    coqui = export_destination(get_engine("xtts"), root / "models" / "xtts", ExportOptions(format="coqui", name="Ada"))
    assert coqui.folder == root / "models" / "xtts" / "Ada"
    assert "AllTalk does not load" in coqui.warning and str(root / "models" / "xtts") in coqui.warning
    f5_own = export_destination(get_engine("f5"), tmp_path / "exports", ExportOptions(format="f5", name="Ada"))
    assert f5_own.folder == tmp_path / "exports" / "Ada" and not f5_own.warning
