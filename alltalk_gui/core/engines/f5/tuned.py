"""The fine-tuned F5-TTS model of a training checkpoint, as preview and export need it: plain CFM weights.

A checkpoint (``runs/<run>/checkpoints/step_N/``, written by the training loop) holds the whole CFM as the
loop trained it in ``model.safetensors``: with LoRA that is the base weights plus the adapters (peft's
``base_layer`` / ``lora_A`` / ``lora_B`` keys), and with ``ema_decay`` set the EMA of those weights sits in
accelerate's ``custom_checkpoint_0.pkl`` (the engine's ``checkpointed`` object). A run that added characters
to the vocabulary keeps the grown vocabulary in ``runs/<run>/vocab.txt`` (:data:`RUN_VOCAB`), and its text
embedding has a row for each. :func:`tuned_cfm` rebuilds the model the run trained, loads the weights
strictly, folds the adapters in, and returns a CFM with F5's plain keys, which
:func:`alltalk_gui.core.engines.f5.model.export_state` writes as F5 and AllTalk expect.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alltalk_gui.core.engine_api.engine import BaseModelError
from alltalk_gui.core.engines.f5.files import build_cfm, read_vocab, validate_base_model

RUN_VOCAB = "vocab.txt"                  # beside the run's checkpoints/, when the run grew the vocabulary
EMA_STATE = "custom_checkpoint_0.pkl"    # accelerate's file for the first registered object: the EMA


@dataclass
class TunedModel:
    """A fine-tuned (or base) F5 model ready to speak or export."""

    cfm: Any                 # CFM in eval mode, LoRA merged, on the CPU
    vocab: list[str]         # the vocabulary it reads (the base model's, or the run's grown one)
    arch: dict[str, Any]
    step: int                # the training step the weights come from (0: the base model)
    ema: bool                # the weights are the EMA, not the last trained ones


def run_vocab(run_dir: Path, base_vocab: list[str]) -> list[str]:
    """The vocabulary a run trained with: its own ``vocab.txt`` when it grew one, else the base model's.

    Raises:
        BaseModelError: the run's vocabulary does not extend the base model's (another base model).
    """
    path = run_dir / RUN_VOCAB
    if not path.is_file():
        return list(base_vocab)
    vocab = read_vocab(path)
    if vocab[:len(base_vocab)] != list(base_vocab):
        raise BaseModelError(f"{path} does not start with the base model's vocabulary: the run was trained from "
                             "another F5-TTS base model.")
    return vocab


def tuned_cfm(base_model_dir: str | os.PathLike[str], checkpoint_dir: str | os.PathLike[str] | None) -> TunedModel:
    """The model of ``checkpoint_dir`` (None: the base model), LoRA merged, EMA chosen when the run kept one.

    Raises:
        BaseModelError: the base folder, the run's vocabulary or the checkpoint's weights do not fit together.
    """
    from alltalk_gui.core.engines.f5.model import add_lora, load_f5, merge_lora

    if checkpoint_dir is None:
        cfm, info = load_f5(base_model_dir)
        return TunedModel(cfm.eval(), info.vocab, info.arch, 0, ema=False)
    from alltalk_gui.core.training.checkpoints import CheckpointError, read_checkpoint

    try:
        checkpoint = read_checkpoint(checkpoint_dir)  # the loop's files: its settings, step and weights
    except CheckpointError as exc:
        raise BaseModelError(str(exc)) from exc
    config = checkpoint.config
    info = validate_base_model(base_model_dir, need_vocoder=False)
    vocab = run_vocab(checkpoint.path.parent.parent, info.vocab)
    cfm = build_cfm(info.arch, {t: i for i, t in enumerate(vocab)})
    if config.get("lora_rank"):
        add_lora(cfm, int(config["lora_rank"]), float(config.get("lora_alpha", 32.0)))
    ema = bool(checkpoint.engine_options().ema_decay) and (checkpoint.path / EMA_STATE).is_file()
    state = _ema_state(checkpoint.path) if ema else _weights(checkpoint.weights)
    try:
        cfm.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        raise BaseModelError(f"The checkpoint {checkpoint.path} does not fit the F5-TTS base model in "
                             f"{base_model_dir}: {str(exc).splitlines()[0]}") from exc
    if config.get("lora_rank"):
        merge_lora(cfm)
    cfm.requires_grad_(False)
    return TunedModel(cfm.eval(), vocab, info.arch, checkpoint.step, ema=ema)


def _weights(path: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    try:
        return load_file(str(path), device="cpu")
    except Exception as exc:  # safetensors raises several types for a damaged file
        raise BaseModelError(f"{path} cannot be loaded: {exc}") from exc


def _ema_state(checkpoint_dir: Path) -> dict[str, Any]:
    import torch

    path = checkpoint_dir / EMA_STATE
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
        return saved["model"]
    except Exception as exc:  # a damaged or foreign file
        raise BaseModelError(f"The EMA weights {path} cannot be loaded: {exc}") from exc
