"""F5 model folders: the import without f5-tts's Trainer, the tiny model, and validation messages."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
import torch

from alltalk_gui.core.engines.f5.files import (
    BaseModelError,
    V1_BASE_ARCH,
    expected_state_shapes,
    read_vocab,
    validate_base_model,
    write_vocab,
)


def test_model_classes_import_without_the_trainer():
    code = ("import sys; from alltalk_gui.core.engines.f5.upstream import cfm_class, dit_class; cfm_class(); "
            "dit_class(); bad = [m for m in ('wandb', 'datasets', 'ema_pytorch', 'gradio', 'f5_tts.model.trainer') "
            "if m in sys.modules]; print(bad); assert not bad")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]


def test_tiny_model_validates_with_its_architecture(tiny_f5):
    info = validate_base_model(tiny_f5)
    assert info.arch["dim"] == 64 and info.arch["depth"] == 2
    assert info.ema_keys and info.has_vocoder
    assert info.weights.name == "model_0.safetensors"
    assert read_vocab(tiny_f5 / "vocab.txt")[0] == " "
    assert 150_000 < info.parameters < 300_000


def test_v1_base_shapes_match_the_published_model():
    """337 M parameters (DiT dim 1024, depth 22) with the 2,545-token vocabulary: shapes only, nothing allocated."""
    shapes = expected_state_shapes(V1_BASE_ARCH, 2545)
    total = sum(torch.Size(s).numel() for s in shapes.values())
    assert 330e6 < total < 345e6
    from alltalk_gui.core.engines.f5.memory_estimate import V1_BASE_PARAMETERS

    assert total == V1_BASE_PARAMETERS
    assert shapes["transformer.text_embed.text_embed.weight"] == (2546, 512)


def test_missing_files_are_named(tiny_f5, tmp_path):
    copy = shutil.copytree(tiny_f5, tmp_path / "copy")
    (copy / "vocos" / "pytorch_model.bin").unlink()
    with pytest.raises(BaseModelError, match="vocos/pytorch_model.bin"):
        validate_base_model(copy)
    assert validate_base_model(copy, need_vocoder=False).vocab[0] == " "
    (copy / "model_0.safetensors").unlink()
    with pytest.raises(BaseModelError, match="model_\\*.safetensors"):
        validate_base_model(copy)


def test_vocabulary_of_another_model_is_refused(tiny_f5, tmp_path):
    copy = shutil.copytree(tiny_f5, tmp_path / "copy")
    write_vocab(copy / "vocab.txt", read_vocab(copy / "vocab.txt") + ["ß2"])
    with pytest.raises(BaseModelError, match="vocabulary belongs to a different model"):
        validate_base_model(copy)
    (copy / "vocab.txt").write_text("a\nb\n", encoding="utf-8")
    with pytest.raises(BaseModelError, match="one space"):
        validate_base_model(copy)


def test_architecture_mismatch_is_refused(tiny_f5, tmp_path):
    copy = shutil.copytree(tiny_f5, tmp_path / "copy")
    (copy / "model_cfg.yaml").unlink()  # falls back to v1 Base, which the tiny weights do not fit
    with pytest.raises(BaseModelError, match="model_0.safetensors"):
        validate_base_model(copy)


def test_damaged_weights_are_named(tiny_f5, tmp_path):
    copy = shutil.copytree(tiny_f5, tmp_path / "copy")
    (copy / "model_0.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(BaseModelError, match="cannot be loaded"):
        validate_base_model(copy)
