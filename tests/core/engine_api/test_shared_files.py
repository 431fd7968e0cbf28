"""engine_api.shared_files: a base-model file entry may name alternatives, said in words; the hint for a file only
a base model ships names the chosen base folder when it has the file, else the download, and never a folder that
lacks it."""

from __future__ import annotations

from alltalk_gui.core import app_settings
from alltalk_gui.core.engine_api.shared_files import has_file, in_words, where_to_get


def test_alternatives_and_their_words(tmp_path):
    (tmp_path / "model_last.pt").write_bytes(b"x")
    (tmp_path / "pretrained_model_1.safetensors").write_bytes(b"x")
    assert has_file(tmp_path, "model_*.safetensors|model_*.pt") and not has_file(tmp_path, "model_*.safetensors")
    (tmp_path / "model_9.pt").mkdir()  # a folder is no file
    assert not has_file(tmp_path, "model_9.pt")
    assert in_words(("model_*.safetensors|model_*.pt", "vocab.txt")) == "model_*.safetensors or model_*.pt, vocab.txt"


def test_the_hint_names_the_chosen_base_only_when_it_has_every_file(tmp_path, monkeypatch):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "settings"))
    base, mine = tmp_path / "base", tmp_path / "mine"
    (base / "codec").mkdir(parents=True)
    mine.mkdir()
    (base / "codec" / "a.bin").write_bytes(b"x")
    app_settings.set_value("toy_base", str(base))
    files = ["codec/a.bin", "codec/b.json"]
    download = f"into {mine} from the Toy base model (get it with 'alltalk-gui download-base-model DIR --engine toy'"
    assert download in where_to_get(files, mine, "toy_base", "Toy", "toy")  # the base lacks b.json
    (base / "codec" / "b.json").write_text("{}")
    assert where_to_get(files, mine, "toy_base", "Toy", "toy") == (
        f"codec/a.bin and codec/b.json are the same for every Toy fine-tune: copy them from your Toy base model in "
        f"{base} into {mine}.")
    app_settings.set_value("toy_base", str(mine))  # the user's folder itself was chosen as the base
    assert download in where_to_get(files[:1], mine, "toy_base", "Toy", "toy")
    assert "codec/a.bin is the same" in where_to_get(files[:1], mine, "toy_base", "Toy", "toy")
