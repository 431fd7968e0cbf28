"""The Orpheus base-folder check: the tiny model passes; a missing file, a foreign config, a vocabulary or weights
that do not fit, a codec of another layout and a sharded folder missing a shard are each refused with a message
naming the file (every missing file at once), before any weight is loaded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from alltalk_gui.core.engine_api.engine import BaseModelError
from alltalk_gui.core.engines.orpheus.codec import read_codec_facts
from alltalk_gui.core.engines.orpheus.files import TRAINED_CONTEXT, context_length, validate_base_model
from alltalk_gui.core.engines.orpheus.tiny_model import TINY_LLAMA


@pytest.fixture
def copy(tiny_orpheus, tmp_path) -> Path:
    return Path(shutil.copytree(tiny_orpheus, tmp_path / "base"))


def edit_json(path: Path, **changes) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def test_the_tiny_model_is_a_valid_base_folder(tiny_orpheus):
    import torch
    from transformers import AutoModelForCausalLM

    info = validate_base_model(tiny_orpheus)
    model = AutoModelForCausalLM.from_pretrained(tiny_orpheus)
    assert info.parameters == sum(p.numel() for p in model.parameters())  # tied: the embedding counted once
    assert info.context == TINY_LLAMA["max_position_embeddings"] == 2048
    assert info.codec.sample_rate == 24000 and info.codec.codes_per_frame == 7
    assert info.codec.frame_rate == pytest.approx(24000 / 2048)
    assert info.codec.tokens_per_second == pytest.approx(82.03, abs=0.01)
    assert isinstance(model, torch.nn.Module) and model.config.tie_word_embeddings


def test_the_context_is_the_trained_one_at_most():
    assert context_length({"max_position_embeddings": 131072}) == TRAINED_CONTEXT == 8192
    assert context_length({"max_position_embeddings": 2048}) == 2048


def test_every_missing_file_is_named(copy):
    for name in ("tokenizer.json", "snac/pytorch_model.bin", "model.safetensors"):
        (copy / name).unlink()
    with pytest.raises(BaseModelError) as caught:
        validate_base_model(copy)
    message = str(caught.value)
    assert "tokenizer.json" in message and "snac/pytorch_model.bin" in message and "model.safetensors" in message


def test_a_missing_folder_and_a_foreign_config(copy, tmp_path):
    with pytest.raises(BaseModelError, match="does not exist"):
        validate_base_model(tmp_path / "nowhere")
    edit_json(copy / "config.json", model_type="gpt2")
    with pytest.raises(BaseModelError, match="'gpt2'"):
        validate_base_model(copy)


def test_a_vocabulary_without_room_for_the_audio_tokens(copy):
    edit_json(copy / "config.json", vocab_size=300)
    with pytest.raises(BaseModelError, match="vocabulary of 300"):
        validate_base_model(copy)


def test_weights_of_another_shape(copy):
    edit_json(copy / "config.json", intermediate_size=TINY_LLAMA["intermediate_size"] * 2)
    with pytest.raises(BaseModelError, match="mlp.*shape"):
        validate_base_model(copy)


def test_a_damaged_weights_file(copy):
    (copy / "model.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(BaseModelError, match="model.safetensors"):
        validate_base_model(copy)


def test_a_codec_of_another_layout(copy):
    edit_json(copy / "snac" / "config.json", vq_strides=[8, 4, 2, 1])
    with pytest.raises(BaseModelError, match="strides"):
        validate_base_model(copy)
    edit_json(copy / "snac" / "config.json", vq_strides=[4, 2, 1], codebook_size=128)
    with pytest.raises(BaseModelError, match="tokenizer.json"):  # the tokenizer has audio tokens for 64 codes
        validate_base_model(copy)
    assert read_codec_facts(copy / "snac").codebook_size == 128


def test_a_sharded_folder_needs_every_shard(copy):
    from safetensors.torch import load_file, save_file

    state = load_file(str(copy / "model.safetensors"))
    keys = sorted(state)
    shards = {"model-00001-of-00002.safetensors": keys[: len(keys) // 2],
              "model-00002-of-00002.safetensors": keys[len(keys) // 2:]}
    for name, part in shards.items():
        save_file({k: state[k] for k in part}, str(copy / name), metadata={"format": "pt"})
    (copy / "model.safetensors").unlink()
    index = {"metadata": {}, "weight_map": {k: name for name, part in shards.items() for k in part}}
    (copy / "model.safetensors.index.json").write_text(json.dumps(index))
    assert validate_base_model(copy).weights == tuple(copy / name for name in sorted(shards))
    (copy / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(BaseModelError, match="model-00002-of-00002.safetensors"):
        validate_base_model(copy)
