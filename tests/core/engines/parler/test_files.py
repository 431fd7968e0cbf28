"""A Parler-TTS base-model folder is checked in the app itself (no Parler code, headers only): the tiny model
passes with its facts, and every broken folder is refused with the file at fault named; the text check reads the
folder's tokenizer."""

from __future__ import annotations

import json
import shutil
import struct

import pytest

from alltalk_gui.core.engine_api.engine import BaseModelError, get_engine
from alltalk_gui.core.engines.parler.files import validate_base_model


@pytest.fixture()
def copy(tiny_parler, tmp_path):
    target = tmp_path / "model"
    shutil.copytree(tiny_parler, target)
    return target


def edit_config(folder, change):
    config = json.loads((folder / "config.json").read_text())
    change(config)
    (folder / "config.json").write_text(json.dumps(config))


def cut_weights(path):
    """Keep the header and the first kB of the tensors: an interrupted download."""
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    path.write_bytes(data[:8 + length + 1000])


def test_the_tiny_model_validates_with_its_facts(tiny_parler):
    info = get_engine("parler").validate_base_model(tiny_parler)
    assert info.size == "custom" and info.title == "Parler-TTS (custom size)" and info.has_generation_config
    assert 0 < info.parameters < info.total_parameters  # the decoder part trains; T5 and DAC are the rest
    assert info.decoder["num_codebooks"] == 9


@pytest.mark.parametrize("break_it, message", [
    (lambda f: (f / "config.json").unlink(), "has no config.json"),
    (lambda f: (f / "config.json").write_text("{"), "config.json in .* is not readable JSON"),
    (lambda f: edit_config(f, lambda c: c.update(model_type="musicgen")), "describes a 'musicgen' model"),
    (lambda f: edit_config(f, lambda c: c["audio_encoder"].update(sampling_rate=24000)),
     "sampling_rate 24000 \\(needs 44100\\)"),
    (lambda f: edit_config(f, lambda c: c["text_encoder"].update(model_type="bert")), "uses Flan-T5"),
    (lambda f: edit_config(f, lambda c: c["decoder"].update(num_hidden_layers=3)),
     "lacks 2 tensor\\(s\\) the config calls for \\(first: decoder.model.decoder.layers.2"),
    (lambda f: edit_config(f, lambda c: c["decoder"].update(ffn_dim=128)), "fc1.weight has shape \\(64, 32\\)"),
    (lambda f: (f / "tokenizer.json").unlink(), "missing tokenizer.json"),
    (lambda f: (f / "model.safetensors").unlink(), "has no model.safetensors"),
    (lambda f: cut_weights(f / "model.safetensors"), "is cut short"),
    (lambda f: (f / "model.safetensors").write_bytes(struct.pack("<Q", 5) + b"nope!"), "not a readable safetensors"),
])
def test_a_broken_folder_is_refused_naming_the_file(copy, break_it, message):
    break_it(copy)
    with pytest.raises(BaseModelError, match=message):
        validate_base_model(copy)


def test_shards_are_read_through_their_index(copy):
    (copy / "model.safetensors").rename(copy / "model-00001-of-00001.safetensors")
    index = {"metadata": {}, "weight_map": {"x": "model-00001-of-00001.safetensors"}}
    (copy / "model.safetensors.index.json").write_text(json.dumps(index))
    assert validate_base_model(copy).weights[0].name == "model-00001-of-00001.safetensors"
    index["weight_map"]["y"] = "model-00002-of-00002.safetensors"
    (copy / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(BaseModelError, match="names model-00002-of-00002.safetensors, which is missing"):
        validate_base_model(copy)


def test_a_missing_folder_is_refused(tmp_path):
    with pytest.raises(BaseModelError, match="does not exist"):
        validate_base_model(tmp_path / "nowhere")


def test_the_text_check_reads_the_models_tokenizer(tiny_parler):
    engine = get_engine("parler")
    check = engine.text_checker("en", tiny_parler / "tokenizer.json")
    assert check.problem("Hello there, this is a test.") is None
    assert check.problem("   ") == "The text is empty."
    without = engine.text_checker("en")  # no tokenizer file: only empty text is found
    assert without.problem("Hello \x07") is None and without.problem("") == "The text is empty."


def test_characters_the_tokenizer_reads_as_unknown_are_named(tmp_path):
    """Flan-T5's sentencepiece has no byte fallback: a character outside it becomes <unk>. Here a tokenizer that
    knows ASCII letters and the usual marks stands in for it."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2}
    for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ,.!?'":
        vocab[c] = len(vocab)
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    check = get_engine("parler").text_checker("en", tmp_path / "tokenizer.json")
    assert check.problem("Hello, there!") is None
    assert check.problem("Café {au lait}") == ("Parler-TTS's tokenizer (Flan-T5) cannot read 'é', '{', '}'; spell "
                                               "them out or remove them.")


def test_a_saved_model_without_its_tokenizer_is_told_where_it_is(copy, tiny_parler, tmp_path, monkeypatch):
    """ParlerTTSForConditionalGeneration.save_pretrained writes the model alone: the tokenizer is the base's."""
    from alltalk_gui.core import app_settings

    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "settings"))
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (copy / name).unlink()
    with pytest.raises(BaseModelError, match="download-base-model DIR --engine parler"):
        validate_base_model(copy)
    app_settings.set_value(get_engine("parler").base_model_setting, str(tiny_parler))
    with pytest.raises(BaseModelError, match=f"copy them from your Parler-TTS base model in {tiny_parler} into {copy}"):
        validate_base_model(copy)
