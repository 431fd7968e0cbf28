"""Parler-TTS's model and loss for the training loop: Parler's own classes, a trainable view of them, the loss as
Parler's training script takes it, LoRA, activation checkpointing. Runs in the engine's environment.

* :func:`load_parler` is ``ParlerTTSForConditionalGeneration.from_pretrained`` on a checked folder (fp32, CPU).
* :class:`ParlerTrainable` is what the loop optimises, hands to accelerate and saves in checkpoints: the
  decoder, the transcript ("prompt") embedding and, for Large, the projection from T5's width to the decoder's.
  Flan-T5 and DAC are frozen in Parler's own recipe too; here they are not part of the module at all: the
  description is encoded once (:func:`encode_descriptions`) and the codes come from the cache
  (:mod:`.codes`), after which both leave memory. The view calls Parler's own ``forward`` with the description's
  states, the way Parler's script does it in its fp16 branch (projection, then the mask), so the loss is
  Parler's.
* :func:`loss`: Parler's summed cross-entropy over the 9 codebooks (mean over codebooks), divided by the
  batch's label positions, padding included: exactly the ``loss`` of Parler's ``train_step`` (its
  ``num_items_in_batch`` counts every label position), so the parity test can compare the two. Its parts are
  the per-codebook losses, named ``codebook_0`` (coarsest) to ``codebook_8``, normalised the same way (their
  mean is the loss).
* :func:`add_lora`: peft adapters on every decoder layer's self-attention, cross-attention (to the description)
  and feed-forward Linears. Upstream Parler has no LoRA (its LoRA pull requests, #183/#204, were never merged);
  the targets are ours. :func:`store_frozen_in_bf16` keeps the frozen base weights in bf16 under LoRA with bf16
  autocast: half their memory (0.9 GB instead of 1.8 for Mini's decoder, 3.8 instead of 7.6 GB for Large's),
  the adapters and their optimizer state stay fp32.
* :func:`set_checkpointing`: transformers' gradient checkpointing of the decoder layers (non-reentrant, so it
  works when only adapters need gradients).
"""

from __future__ import annotations

import os
from typing import Any

import torch

from alltalk_gui.core.engines.parler.files import validate_base_model

# peft target_modules: suffixes matched inside the decoder layers.
LORA_TARGETS = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.out_proj",
                "encoder_attn.q_proj", "encoder_attn.k_proj", "encoder_attn.v_proj", "encoder_attn.out_proj",
                "fc1", "fc2")
FROZEN_PARTS = ("text_encoder", "audio_encoder")
CODEBOOK_PARTS = tuple(f"codebook_{k}" for k in range(9))


def load_parler(folder: str | os.PathLike[str]):
    """Parler's model from a checked folder, fp32 on the CPU, in eval mode.

    Raises:
        BaseModelError: the folder does not validate (before anything loads), or the weights do not load.
    """
    from alltalk_gui.core.engine_api.engine import BaseModelError
    from alltalk_gui.core.engines.parler.upstream import model_class

    info = validate_base_model(folder)
    try:
        model = model_class().from_pretrained(str(info.folder), torch_dtype="float32")
    except (OSError, ValueError, RuntimeError) as exc:
        raise BaseModelError(f"The Parler-TTS model in {info.folder} cannot be loaded: {exc}") from exc
    return model.eval()


def load_tokenizer(folder: str | os.PathLike[str]):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(folder))


class ParlerTrainable(torch.nn.Module):
    """Parler's decoder, prompt embedding and projection: the part that trains (see the module docstring)."""

    def __init__(self, model) -> None:
        super().__init__()
        for name, child in model.named_children():
            if name not in FROZEN_PARTS and child is not None:
                self.add_module(name, child)
        self._parler = (model,)  # a tuple: the whole model is not a submodule (T5 and DAC stay out)

    @property
    def parler(self):
        return self._parler[0]

    def forward(self, labels, prompt_input_ids, prompt_attention_mask, description_states, description_mask):
        from transformers.modeling_outputs import BaseModelOutput

        states = description_states
        if hasattr(self, "enc_to_dec_proj"):
            states = self.enc_to_dec_proj(states)
        states = states * description_mask[..., None].to(states.dtype)
        return self.parler(encoder_outputs=BaseModelOutput(last_hidden_state=states), attention_mask=description_mask,
                           prompt_input_ids=prompt_input_ids, prompt_attention_mask=prompt_attention_mask,
                           labels=labels, loss_reduction="sum", use_cache=False)


def trainable_view(model):
    """The trainable view of a loaded model (shares its weights)."""
    if getattr(model.config, "prompt_cross_attention", False):
        from alltalk_gui.core.engine_api.engine import BaseModelError

        raise BaseModelError("This Parler-TTS model reads the text through cross-attention (prompt_cross_attention); "
                             "the app trains Parler-TTS v1 models, which do not.")
    return ParlerTrainable(model)


def drop_frozen_parts(model) -> None:
    """Take T5 and DAC out of the model once the descriptions and codes are computed: they are not needed again
    in training and would take 1.7 GB (Mini) of memory."""
    for name in FROZEN_PARTS:
        setattr(model, name, None)


def encode_descriptions(model, tokenizer, texts: list[str], device) -> dict[str, Any]:
    """Flan-T5's last hidden states of each distinct description (fp32, on the CPU): text -> tokens x width.

    In eval mode: the description's clean encoding, the same in every step. (Parler's script leaves the frozen
    T5 in train mode, so its dropout, 0.1 in Flan-T5, adds noise to the conditioning each step; a fine-tune on one
    fixed description has no use for that noise.)"""
    encoder = model.text_encoder.to(device).eval()
    states = {}
    with torch.no_grad():
        for text in dict.fromkeys(texts):
            tokens = tokenizer(text, return_tensors="pt").to(device)
            out = encoder(input_ids=tokens.input_ids, attention_mask=tokens.attention_mask).last_hidden_state
            states[text] = out[0].float().cpu()
    encoder.to("cpu")
    return states


def loss(model, batch: dict[str, Any]) -> dict[str, Any]:
    """Parler's loss on a batch (see the module docstring): ``loss`` and ``codebook_0`` .. ``codebook_8``."""
    from alltalk_gui.core.engines.parler.data import positions

    out = model(**batch)
    n = positions(batch)
    parts = {name: part / n for name, part in zip(CODEBOOK_PARTS, out.per_codebook_losses)}
    return {"loss": out.loss / n, **parts}


def set_checkpointing(trainable, enabled: bool) -> None:
    """Recompute each decoder layer's activations in the backward pass (saves memory, costs about a third more time)."""
    decoder = trainable.decoder
    if enabled:
        decoder.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    elif decoder.is_gradient_checkpointing:
        decoder.gradient_checkpointing_disable()


def add_lora(trainable, rank: int = 16, alpha: float = 32.0, dropout: float = 0.0):
    """Wrap the decoder layers' attention and feed-forward Linears with LoRA adapters; freeze everything else.
    Returns the same module, changed in place; only ``lora_`` parameters train."""
    from peft import LoraConfig, inject_adapter_in_model

    if rank < 1:
        raise ValueError("LoRA rank must be at least 1")
    for parameter in trainable.parameters():
        parameter.requires_grad_(False)
    config = LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=dropout, target_modules=list(LORA_TARGETS))
    inject_adapter_in_model(config, trainable.decoder)
    for name, parameter in trainable.named_parameters():
        parameter.requires_grad_("lora_" in name)
    return trainable


def merge_lora(module):
    """Fold LoRA adapters into their base Linears in place and drop them (plain Parler keys again)."""
    from peft.tuners.lora import LoraLayer

    for name, layer in list(module.named_modules()):
        if isinstance(layer, LoraLayer):
            layer.merge()
            parent_name, _, child = name.rpartition(".")
            parent = module.get_submodule(parent_name) if parent_name else module
            setattr(parent, child, layer.get_base_layer())
    return module


def store_frozen_in_bf16(trainable) -> int:
    """Keep the frozen floating-point weights in bf16 (LoRA with bf16 autocast); returns the bytes saved."""
    saved = 0
    for parameter in trainable.parameters():
        if not parameter.requires_grad and parameter.dtype == torch.float32:
            saved += parameter.numel() * 2
            parameter.data = parameter.data.to(torch.bfloat16)
    return saved


def trainable_parameters(module) -> int:
    return sum(p.numel() for p in module.parameters() if p.requires_grad)
