"""A tiny, randomly initialised F5-TTS model folder for tests and smoke runs (it speaks noise, not a voice).

Same layout and loading path as a real base folder (:mod:`alltalk_gui.core.engines.f5.files`):
``model_0.safetensors`` (EMA keys ``ema_model.*``), ``vocab.txt``, ``model_cfg.yaml`` with the tiny
architecture, and ``vocos/config.yaml`` + ``vocos/pytorch_model.bin``. The DiT is
``DiT(dim=64, depth=2, heads=2, dim_head=32, ff_mult=2, text_dim=32, conv_layers=1)`` (``dim`` must be a
multiple of 16) with the real mel (24 kHz, 100 bands, hop 256), about 0.2 M parameters; the Vocos has width
32 and one layer. DiT zero-initialises its AdaLN modulation and output projection, which would make the
model's output zero whatever its input and hide a weight that was not loaded; the builder perturbs every
tensor that is all zeros so a round trip that drops one shows.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from alltalk_gui.core import atomic

TINY_ARCH: dict[str, Any] = {
    "dim": 64, "depth": 2, "heads": 2, "dim_head": 32, "ff_mult": 2, "text_dim": 32, "text_mask_padding": True,
    "qk_norm": None, "conv_layers": 1, "pe_attn_head": None, "attn_backend": "torch", "attn_mask_enabled": False,
    "checkpoint_activations": False,
}
TINY_VOCOS_CONFIG = {
    "feature_extractor": {"class_path": "vocos.feature_extractors.MelSpectrogramFeatures",
                          "init_args": {"sample_rate": 24000, "n_fft": 1024, "hop_length": 256, "n_mels": 100,
                                        "padding": "center"}},
    "backbone": {"class_path": "vocos.models.VocosBackbone",
                 "init_args": {"input_channels": 100, "dim": 32, "intermediate_dim": 64, "num_layers": 1}},
    "head": {"class_path": "vocos.heads.ISTFTHead",
             "init_args": {"dim": 32, "n_fft": 1024, "hop_length": 256, "padding": "center"}},
}
# Space first (token 0, what f5-tts maps unknown characters to), then what English/German/French test text needs.
TINY_VOCAB = [" "] + list("!'(),-.:;?") + [str(d) for d in range(10)] + [chr(c) for c in range(ord("A"), ord("Z") + 1)] \
    + [chr(c) for c in range(ord("a"), ord("z") + 1)] + list("äöüßéèàç")


def build_tiny_vocos(folder: str | os.PathLike[str], seed: int = 0) -> Path:
    """Write a tiny random Vocos (``config.yaml`` + ``pytorch_model.bin``) into ``folder``."""
    import torch
    import yaml
    from vocos import Vocos

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    atomic.write_text(folder / "config.yaml", yaml.safe_dump(TINY_VOCOS_CONFIG, sort_keys=False))
    torch.manual_seed(seed)
    vocos = Vocos.from_hparams(str(folder / "config.yaml"))
    with atomic.atomic_path(folder / "pytorch_model.bin") as tmp:
        torch.save(vocos.state_dict(), tmp)
    return folder


def build_tiny_f5(folder: str | os.PathLike[str], seed: int = 0) -> Path:
    """Write a tiny random F5-TTS model folder into ``folder`` (created if needed) and return the folder.

    Deterministic for a given ``seed``; takes well under a second after the imports.
    """
    import torch
    import yaml
    from safetensors.torch import save_file

    from alltalk_gui.core.engines.f5.files import ARCH_FILE, VOCAB_FILE, VOCOS_DIR, arch_document, write_vocab
    from alltalk_gui.core.engines.f5.model import build_cfm, export_state

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_vocab(folder / VOCAB_FILE, TINY_VOCAB)
    atomic.write_text(folder / ARCH_FILE, "# Tiny random F5-TTS test model: speaks noise, not a voice.\n"
                      + yaml.safe_dump(arch_document(TINY_ARCH, "F5TTS_tiny_test"), sort_keys=False))
    torch.manual_seed(seed)
    cfm = build_cfm(TINY_ARCH, {t: i for i, t in enumerate(TINY_VOCAB)})
    perturb_zero_weights(cfm, seed)
    with atomic.atomic_path(folder / "model_0.safetensors", suffix=".safetensors") as tmp:
        save_file(export_state(cfm), str(tmp))
    build_tiny_vocos(folder / VOCOS_DIR, seed)
    return folder


def perturb_zero_weights(model, seed: int = 0, scale: float = 0.02) -> int:
    """Give every all-zero floating-point parameter small random values; returns how many were changed."""
    import torch

    generator = torch.Generator().manual_seed(seed + 1)
    changed = 0
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.is_floating_point() and not parameter.any():
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * scale)
                changed += 1
    return changed
