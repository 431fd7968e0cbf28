"""F5-TTS model and loss for a training loop: CFM + DiT from a model folder, LoRA, checkpointing, EMA.

What a loop needs from the engine, and nothing about the loop itself (accelerate, optimizers, schedules and
events belong to the training package):

* :func:`load_f5` builds ``CFM(DiT)`` with f5-tts's own classes and the folder's architecture and loads its
  (EMA) weights strictly, so a tensor that does not fit is an error, not silently random.
* :func:`loss` is CFM's own flow-matching loss (MSE of the predicted flow over a random masked span of 70-100 %
  of each clip; 30 % of steps drop the audio condition and 20 % drop audio and text, for classifier-free
  guidance), on a batch from :mod:`alltalk_gui.core.engines.f5.data`.
* :func:`set_checkpointing` switches DiT's per-block activation checkpointing (recompute in backward: the
  activations of 22 blocks shrink to one block's, for about a third more time per step).
* :func:`add_lora` wraps the DiT blocks' attention and feed-forward projections with peft LoRA adapters
  (:data:`LORA_TARGETS`); only the adapters train. F5 upstream has no LoRA (#621), so the targets are ours:
  every Linear inside the 22 blocks that carries the content (q/k/v/out, the feed-forward in and out); the
  AdaLN modulation, text embedding and input/output projections stay frozen.
* :class:`EmaOptions` / :func:`make_ema`: F5's Trainer keeps an EMA with decay 0.9999 from step 0, which in a
  fine-tune of a few hundred steps moves the EMA 1-(0.9999^500) = 5 % of the way: the export would be the base
  model. F5's own notes say EMA can hurt early fine-tunes. Our default is no EMA (export the trained weights);
  when chosen (``TrainConfig.ema_decay``, e.g. 0.999), the decay of update t ramps up as (1 + t) / (10 + t),
  capped at the chosen one (the rule of TensorFlow's ExponentialMovingAverage with num_updates and timm's
  ModelEma): the first updates follow the weights closely, so even a short run's EMA is its own, not the base.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alltalk_gui.core.engines.f5.files import MEL, build_cfm, cfm_state, load_weights, validate_base_model  # noqa: F401  (build_cfm re-exported)

# peft ``target_modules`` (suffixes matched inside every DiT block): attention q/k/v and output projection,
# feed-forward in (ff.ff.0.0: Linear inside Sequential(Linear, GELU)) and out (ff.ff.2).
LORA_TARGETS = ("attn.to_q", "attn.to_k", "attn.to_v", "attn.to_out.0", "ff.ff.0.0", "ff.ff.2")
TEXT_EMBEDDING = "transformer.text_embed.text_embed"  # grows when characters are added to the vocabulary


def load_f5(folder: str | os.PathLike[str], checkpoint_activations: bool = False, need_vocoder: bool = False):
    """Build CFM+DiT from an F5 model folder and load its weights strictly (fp32, CPU).

    Returns:
        (cfm, info): the model in train mode, and the folder's :class:`F5ModelInfo`.
    Raises:
        BaseModelError: the folder does not validate.
    """
    info = validate_base_model(folder, need_vocoder=need_vocoder)
    cfm = build_cfm(info.arch, {t: i for i, t in enumerate(info.vocab)}, checkpoint_activations)
    state, _ = cfm_state(load_weights(info.weights))
    cfm.load_state_dict(state, strict=True)
    return cfm.train(), info


def loss(cfm, batch: dict[str, Any]):
    """CFM's flow-matching loss on a batch (``mel`` b x n x 100, ``text`` b x nt token ids, -1 padded,
    ``mel_lengths`` b): a scalar tensor."""
    value, _cond, _pred = cfm(batch["mel"], batch["text"], lens=batch["mel_lengths"])
    return value


def set_checkpointing(cfm, enabled: bool) -> None:
    """Recompute each DiT block's activations in the backward pass (saves memory, costs time)."""
    cfm.transformer.checkpoint_activations = bool(enabled)


def add_lora(cfm, rank: int = 16, alpha: float = 32.0, dropout: float = 0.0, also_train: tuple[str, ...] = ()):
    """Wrap the DiT blocks' attention and feed-forward Linears with LoRA adapters; freeze everything else.

    ``also_train``: module names (in ``cfm``) whose own weights keep training beside the adapters. After
    :func:`alltalk_gui.core.engines.f5.text.extend_vocabulary` pass :data:`TEXT_EMBEDDING`: the new
    characters' rows are random and learn nothing if the embedding is frozen (it is 1.3 M parameters).

    Returns the same CFM object, changed in place; only ``lora_`` parameters (and ``also_train``) have
    ``requires_grad``. :func:`merge_lora` folds the adapters back into plain weights for preview and export.
    """
    from peft import LoraConfig, inject_adapter_in_model

    if rank < 1:
        raise ValueError("LoRA rank must be at least 1")
    for parameter in cfm.parameters():
        parameter.requires_grad_(False)
    config = LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=dropout, target_modules=list(LORA_TARGETS))
    inject_adapter_in_model(config, cfm.transformer)  # in place: each target Linear becomes a lora.Linear
    for name, parameter in cfm.named_parameters():
        parameter.requires_grad_("lora_" in name or any(name.startswith(m + ".") for m in also_train))
    return cfm


def merge_lora(cfm):
    """Fold LoRA adapters into their base Linears in place and drop them; returns the CFM with plain keys."""
    from peft.tuners.lora import LoraLayer

    for name, module in list(cfm.transformer.named_modules()):
        if isinstance(module, LoraLayer):
            module.merge()
            parent_name, _, child = name.rpartition(".")
            parent = cfm.transformer.get_submodule(parent_name) if parent_name else cfm.transformer
            setattr(parent, child, module.get_base_layer())
    for parameter in cfm.parameters():
        parameter.requires_grad_(True)
    return cfm


def trainable_parameters(cfm) -> int:
    return sum(p.numel() for p in cfm.parameters() if p.requires_grad)


@dataclass(frozen=True)
class EmaOptions:
    """EMA of the weights, exported instead of the trained weights when ``enabled``.

    Off by default: short fine-tunes are better exported as trained (see the module docstring)."""

    enabled: bool = False
    decay: float = 0.999        # F5 pre-training uses 0.9999: in a 500-step fine-tune it moves only 5 %


def ema_decay(step: int, decay: float) -> float:
    """The decay of the ``step``-th update (from 1): (1 + step) / (10 + step), at most ``decay``."""
    return min(decay, (1.0 + step) / (10.0 + step))


class Ema:
    """A plain EMA of a model's floating-point state (the weights an export writes under ``ema_model.*``)."""

    def __init__(self, cfm, options: EmaOptions):
        self.options = options
        self.model = copy.deepcopy(cfm).eval().requires_grad_(False)
        self.step = 0

    def update(self, cfm) -> None:
        import torch

        self.step += 1
        decay = ema_decay(self.step, self.options.decay)
        with torch.no_grad():
            live = cfm.state_dict()
            for key, value in self.model.state_dict().items():
                if value.is_floating_point():
                    value.lerp_(live[key].to(value.dtype), 1.0 - decay)

    def state_dict(self) -> dict[str, Any]:
        return {"step": self.step, "model": self.model.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.step = int(state["step"])
        self.model.load_state_dict(state["model"])


def make_ema(cfm, options: EmaOptions) -> Ema | None:
    """An :class:`Ema` of ``cfm`` when ``options.enabled``, else None (export the trained weights)."""
    return Ema(cfm, options) if options.enabled else None


def export_state(cfm) -> dict[str, Any]:
    """The CFM's weights under ``ema_model.*``, as F5 checkpoints and AllTalk expect them (LoRA must be merged)."""
    state = cfm.state_dict()
    if any("lora_" in k for k in state):
        raise ValueError("merge_lora() the model before exporting it")
    return {f"ema_model.{k}": v.detach().to("cpu").contiguous() for k, v in state.items()}


def model_folder_info(folder: str | os.PathLike[str]):
    """Shortcut: validate without the vocoder (a training base needs only weights and vocabulary)."""
    return validate_base_model(Path(folder), need_vocoder=False)
