"""XTTS v2 model pieces for training and inference, built from coqui-tts classes (never copies of them).

Training only updates the GPT (coqui's ``GPT``); the DVAE that turns audio into codes and the mel front ends are
frozen, as in coqui's ``GPTTrainer``, and run once per clip before training (:mod:`.front_end`). This module
provides:

* :func:`build_gpt` / :func:`load_gpt` - the GPT with the base model's (or a checkpoint's) weights;
* :func:`gpt_loss` - the weighted text + mel cross entropy exactly as ``GPTTrainer.train_step`` defines it;
* :func:`enable_activation_checkpointing` - recompute GPT-2 block activations in the backward pass;
* :func:`add_lora_adapters` - peft LoRA adapters on the GPT-2 blocks (the "low" profile trains only these);
  :func:`load_gpt` merges them back into plain weights when it reads a LoRA checkpoint;
* :func:`load_inference_model` / :func:`synthesize` - a full ``Xtts`` with fine-tuned GPT weights, for previews
  and export.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from alltalk_gui.core.engines.xtts.files import (
    BaseModelError,
    load_checkpoint,
    load_tokenizer,
    load_xtts_config,
    missing_files_message,
    model_files,
    read_model_state,
)
from alltalk_gui.core.engines.xtts.gpt import build_gpt, build_gpt_from_args  # noqa: F401  (re-exported)

SAMPLE_RATE = 22050  # the GPT, the DVAE and the conditioning front end all work at 22 050 Hz
VOICE_FILES = ("model.pth", "config.json", "vocab.json", "mel_stats.pth")  # what synthesis reads (not the DVAE)


def import_coqui_trainer():
    """Import coqui's ``gpt_trainer`` module and undo its side effect on the thread count.

    Importing ``TTS.tts.layers.xtts.trainer.dataset`` calls ``torch.set_num_threads(1)`` at import time, which
    would make every CPU step run on one core.
    """
    threads = torch.get_num_threads()
    from TTS.tts.layers.xtts.trainer import gpt_trainer

    torch.set_num_threads(threads)
    return gpt_trainer


def gpt_state_from_model_file(path: str | os.PathLike[str]) -> dict[str, torch.Tensor]:
    """The ``gpt.*`` tensors of a coqui ``model.pth`` or Trainer save, without the prefix (memory-mapped: the rest
    of the file, a Trainer save's optimizer state, is never read)."""
    state = read_model_state(path)
    return {k[4:]: v for k, v in state.items() if k.startswith("gpt.") and not k.startswith("gpt.gpt_inference.")}


def load_gpt(base_model: str | os.PathLike[str], gpt_weights: str | os.PathLike[str] | None = None):
    """Build the GPT and load weights: the base model's (its ``model.pth``, or a Trainer folder's save: see
    :mod:`.layout`), or ``gpt_weights`` (a training checkpoint's ``model.safetensors`` or any ``.pth`` with GPT
    weights) when given. LoRA adapters in a checkpoint are merged.

    Returns:
        ``(gpt, config, tokenizer)``
    """
    base_model = Path(base_model)
    if gpt_weights is None:
        return _gpt_with_state(base_model, gpt_state_from_model_file(model_files(base_model).weights))
    gpt_weights = Path(gpt_weights)
    return _gpt_with_state(base_model, _read_gpt_weights(gpt_weights), gpt_weights)


def gpt_state(base_model: str | os.PathLike[str], gpt_weights: str | os.PathLike[str]) -> dict[str, torch.Tensor]:
    """The plain GPT tensors of a checkpoint's ``gpt_weights``: as stored, or with LoRA adapters merged in."""
    gpt_weights = Path(gpt_weights)
    state = _read_gpt_weights(gpt_weights)
    if not _lora_rank(state):
        return state
    return _gpt_with_state(Path(base_model), state, gpt_weights)[0].state_dict()


def _read_gpt_weights(gpt_weights: Path) -> dict[str, torch.Tensor]:
    """The GPT tensors of a checkpoint (``model.safetensors``: as stored) or of a coqui ``.pth`` (``gpt.*``)."""
    if gpt_weights.suffix == ".safetensors":
        return load_checkpoint(gpt_weights)
    return {k.removeprefix("gpt."): v for k, v in read_model_state(gpt_weights).items() if k.startswith("gpt.")}


def _gpt_with_state(base_model: Path, state: dict[str, torch.Tensor], gpt_weights: Path | None = None):
    """``(gpt, config, tokenizer)`` with ``state`` loaded strictly; LoRA adapters in it are merged into plain weights
    (their alpha is read beside ``gpt_weights``)."""
    config = load_xtts_config(base_model)
    tokenizer = load_tokenizer(base_model)
    gpt = build_gpt(config, tokenizer)
    lora = _lora_rank(state)
    tuner = add_lora_adapters(gpt, lora, _lora_alpha(gpt_weights)) if lora else None
    try:
        gpt.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        raise BaseModelError(f"The GPT weights do not fit the model in {base_model}: {str(exc).splitlines()[0]}") from exc
    if tuner is not None:
        gpt = tuner.merge_and_unload()  # W + B·A·alpha/rank: a plain GPT that inference and export can use
    return gpt, config, tokenizer


# -- LoRA (peft) -----------------------------------------------------------------------------------------------

# The four linear layers of every GPT-2 block: attention in/out and the MLP. The conditioning encoder, the
# perceiver and the text/mel heads stay as they are.
LORA_TARGETS = r"gpt\.h\.\d+\.(attn\.c_attn|attn\.c_proj|mlp\.c_fc|mlp\.c_proj)"


# Trained in full beside the adapters, as LoRA fine-tunes of language models train their output head and final
# norm: the mel head (1024 x 1026 + bias, about 1.05 M parameters in XTTS v2, 17 MB of fp32 gradients and AdamW
# state) maps the GPT's output to audio codes and is where a voice's code statistics live; the final norm (2,048) is
# free. Their keys stay as in the base model, so a checkpoint loads and merges as before.
LORA_FULLY_TRAINED = ("mel_head", "final_norm")


def add_lora_adapters(gpt: nn.Module, rank: int, alpha: float, dropout: float = 0.0):
    """Put rank-``rank`` LoRA adapters on the GPT-2 blocks, in place, and make only them and
    :data:`LORA_FULLY_TRAINED` trainable. ``dropout`` acts on the adapters' input during training only.

    Returns:
        peft's ``LoraModel`` around ``gpt``; its ``merge_and_unload()`` folds the adapters back into the weights.
    """
    from peft import LoraConfig
    from peft.tuners.lora import LoraModel

    # GPT-2 keeps these layers as transformers' Conv1D, whose weight is (in, out): fan_in_fan_out tells peft.
    config = LoraConfig(r=rank, lora_alpha=alpha, target_modules=LORA_TARGETS, fan_in_fan_out=True,
                        lora_dropout=dropout, bias="none")
    tuner = LoraModel(gpt, config, "default")
    for name in LORA_FULLY_TRAINED:
        getattr(gpt, name).requires_grad_(True)
    return tuner


def _lora_rank(state: dict[str, torch.Tensor]) -> int:
    """The adapters' rank if ``state`` holds LoRA adapters (peft's ``lora_A`` is rank x in), else 0."""
    first = next((v for k, v in state.items() if ".lora_A." in k), None)
    return int(first.shape[0]) if first is not None else 0


def _lora_alpha(gpt_weights: Path | None) -> float:
    """A LoRA checkpoint's alpha, from the training config saved beside its weights."""
    from alltalk_gui.core.training.checkpoints import CONFIG_FILE

    if gpt_weights is None:
        raise BaseModelError("The base model's GPT weights hold LoRA adapters, which a base model never has.")
    config = gpt_weights.parent / CONFIG_FILE
    try:
        return float(json.loads(config.read_text(encoding="utf-8"))["lora_alpha"])
    except (OSError, ValueError, KeyError) as exc:
        raise BaseModelError(f"{gpt_weights} holds LoRA adapters but {config} (which gives their lora_alpha) "
                             f"cannot be read: {exc}") from exc


@dataclass(frozen=True)
class LossWeights:
    """coqui's defaults (GPTArgs): the text loss only keeps the text embeddings from drifting."""

    text_ce: float = 0.01
    mel_ce: float = 1.0


def gpt_loss(gpt: nn.Module, inputs: dict[str, Any], weights: LossWeights = LossWeights(),
             eval_mode: bool = False) -> dict[str, torch.Tensor]:
    """The GPTTrainer objective: ``text_ce * w_text + mel_ce * w_mel``.

    ``gpt`` may be the bare GPT or its DDP/FSDP wrapper; call through the wrapper so gradients synchronise.
    The conditioning span of the clips marked in ``inputs["cond_mask"]`` is left out of the mel loss, per clip
    rather than coqui's last-clip-of-the-batch (see :mod:`conditioning_mask`). ``eval_mode`` drops the mask, as
    ``GPTTrainer.eval_step`` does, for comparable eval losses.

    Returns:
        ``{"loss", "loss_text_ce", "loss_mel_ce"}`` (the last two already weighted, like coqui's).
    """
    from alltalk_gui.core.engines.xtts import conditioning_mask

    # coqui would mask the last clip only, at the wrong scale: it gets no cond_idxs, and the mask is ours.
    loss_text, loss_mel, mel_logits = gpt(
        inputs["text_inputs"], inputs["text_lengths"], inputs["audio_codes"], inputs["wav_lengths"],
        cond_mels=inputs["cond_mels"], cond_idxs=None, cond_lens=inputs.get("cond_lens"),
    )
    masked = inputs.get("cond_mask")
    if not eval_mode and inputs.get("cond_idxs") is not None and masked is not None and bool(masked.any()):
        loss_mel = conditioning_mask.mel_loss(getattr(gpt, "module", gpt), mel_logits, inputs["audio_codes"],
                                              inputs["wav_lengths"], inputs["cond_idxs"], masked)
    text = loss_text * weights.text_ce
    mel = loss_mel * weights.mel_ce
    return {"loss": text + mel, "loss_text_ce": text, "loss_mel_ce": mel}


def enable_activation_checkpointing(gpt: nn.Module) -> int:
    """Recompute each GPT-2 block's activations in the backward pass instead of keeping them.

    Saves most of the activation memory (which grows with batch size x clip length) for about a third more
    compute. coqui's config has no switch for it, and ``gradient_checkpointing_enable()`` fails because coqui
    deletes the GPT-2 ``wte`` embedding, so it is turned on block by block, the way transformers' own
    ``GradientCheckpointingLayer`` expects.

    Returns:
        The number of blocks switched.
    """
    from torch.utils.checkpoint import checkpoint

    blocks = list(gpt.gpt.h)
    for block in blocks:
        block.gradient_checkpointing = True
        block._gradient_checkpointing_func = functools.partial(checkpoint, use_reentrant=False)
    gpt.gpt.config.use_cache = False
    return len(blocks)


# -- inference (previews, export) --------------------------------------------------------------------------------

def load_inference_model(base_model: str | os.PathLike[str], gpt_weights: str | os.PathLike[str] | None = None,
                         device: str | torch.device = "cpu"):
    """A full coqui ``Xtts`` (GPT + HiFi-GAN) ready for inference, with fine-tuned GPT weights if given.

    Loads ``model.pth`` (or a Trainer folder's save, :mod:`.layout`) weights-only ourselves: coqui's
    ``Xtts.load_checkpoint`` may rewrite an old ``model.pth`` in place, and a user's base model must never change.

    Raises:
        BaseModelError: a file synthesis reads is missing (named with where it comes from), or does not load.
    """
    from TTS.tts.models.xtts import Xtts

    base_model = Path(base_model)
    files = model_files(base_model)
    missing = [name for name in VOICE_FILES if not files.path(name).is_file()]
    if missing:
        raise BaseModelError(missing_files_message(files, missing))
    config = load_xtts_config(base_model)
    model = Xtts(config)
    model.tokenizer = load_tokenizer(base_model)
    model.init_models()
    state = read_model_state(files.weights)
    state = {k: v for k, v in state.items()
             if k.split(".")[0] not in ("torch_mel_spectrogram_style_encoder", "torch_mel_spectrogram_dvae", "dvae")}
    model.load_state_dict(state, strict=False)
    del state  # copied into the model: the memory-mapped file is let go
    model.mel_stats.copy_(load_checkpoint(files.path("mel_stats.pth")))
    if gpt_weights is not None:
        gpt, _, _ = load_gpt(base_model, gpt_weights)
        model.gpt.load_state_dict(gpt.state_dict())
    model.to(device)
    model.gpt.init_gpt_for_inference(kv_cache=config.model_args.kv_cache, use_deepspeed=False)
    model.hifigan_decoder.eval()
    model.gpt.eval()
    return model


@torch.inference_mode()
def synthesize(model, text: str, reference: torch.Tensor, language: str = "en", **generate: Any) -> torch.Tensor:
    """Speak ``text`` in the voice of ``reference`` (mono float tensor at 22 050 Hz, shape ``(1, samples)``).

    The reference is passed as samples (load it with soundfile) because coqui's path-based loader needs FFmpeg.
    ``generate`` goes to ``Xtts.inference`` (temperature, top_p, max_new_tokens, ...).

    Returns:
        The waveform at the model's output rate (24 000 Hz for XTTS v2), 1-D float tensor.
    """
    device = next(model.parameters()).device
    cond_latent = model.get_gpt_cond_latents(reference.to(device), SAMPLE_RATE, length=6, chunk_length=6)
    speaker = model.get_speaker_embedding(reference.to(device), SAMPLE_RATE)
    out = model.inference(text, language, cond_latent, speaker, **generate)
    return torch.as_tensor(out["wav"])
