"""The fine-tuned Orpheus model of a training checkpoint, as preview and export need it: a plain LlamaForCausalLM.

A checkpoint (``runs/<run>/checkpoints/step_N/``, written by the training loop) holds what trained, under the
loop's module names (``lm.`` + transformers' keys): with LoRA only the adapters (:mod:`.model` leaves the frozen
base out of checkpoints), after a full fine-tune the whole model. Several GPUs with FSDP save the model sharded
(``pytorch_model_fsdp_0/``, torch's distributed checkpoint format) instead of ``model.safetensors``; its shards are
gathered into one full state dict here (accelerate's ``merge_fsdp_weights``), on the CPU, in one process.

:func:`tuned_lm` loads the base folder the run names, puts the checkpoint's weights into it strictly (every
adapter or every weight must be there), folds LoRA in and returns a model with transformers' plain keys, which
``save_pretrained`` writes as Orpheus publishes its own.

The speaker names a run trained with are kept beside its checkpoints in ``speakers.json``
(:func:`write_speakers`), so preview and export can offer them without reading the dataset again.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alltalk_gui.core import atomic
from alltalk_gui.core.engine_api.engine import BaseModelError

FSDP_WEIGHTS = "pytorch_model_fsdp_0"   # accelerate's folder for the first model's sharded state
SPEAKERS_FILE = "speakers.json"        # in the run folder
PREFIX = "lm."                          # the training module's name for the causal LM (model.OrpheusLM.lm)


@dataclass
class TunedModel:
    """A fine-tuned (or base) Orpheus model ready to speak or export."""

    lm: Any                     # LlamaForCausalLM, eval mode, LoRA merged
    step: int                   # the training step of the weights (0: the base model)
    config: dict[str, Any]      # the run's TrainConfig as saved ({} for the base model)
    speakers: list[str]         # the speaker names the run trained with
    lora_rank: int
    lora_alpha: float


def write_speakers(run_dir: Path, speakers: list[str]) -> None:
    atomic.write_json(run_dir / SPEAKERS_FILE, sorted(set(speakers)))


def read_speakers(run_dir: Path) -> list[str]:
    """The speaker names of a run ([] when unknown)."""
    try:
        names = json.loads((run_dir / SPEAKERS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


def checkpoint_state(checkpoint_dir: Path) -> dict[str, Any]:
    """The module state of a checkpoint, FSDP shards gathered into one (on the CPU).

    Raises:
        BaseModelError: no weights, or a damaged file.
    """
    from safetensors.torch import load_file

    sharded = checkpoint_dir / FSDP_WEIGHTS
    try:
        if sharded.is_dir():
            from accelerate.utils import merge_fsdp_weights

            with tempfile.TemporaryDirectory(prefix="orpheus-gather-") as tmp:
                merge_fsdp_weights(str(sharded), tmp, safe_serialization=True)
                return load_file(str(Path(tmp) / "model.safetensors"), device="cpu")
        return load_file(str(checkpoint_dir / "model.safetensors"), device="cpu")
    except Exception as exc:  # safetensors and torch's checkpoint reader raise many types for damaged files
        raise BaseModelError(f"The weights of the checkpoint {checkpoint_dir} cannot be loaded: "
                             f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from exc


def load_into(lm, state: dict[str, Any], checkpoint_dir: Path, *, lora: bool) -> None:
    """Put a checkpoint's state into ``lm``: with ``lora`` exactly its adapters, else every weight.

    Raises:
        BaseModelError: the checkpoint lacks some of them or holds others (another model or run).
    """
    own = {k.removeprefix(PREFIX): v for k, v in state.items()}
    expected = {k for k in lm.state_dict() if not lora or "lora_" in k}
    if lm.config.tie_word_embeddings:
        expected.discard("lm_head.weight")  # the embedding's matrix: safetensors keeps one name
        own.pop("lm_head.weight", None)
    missing, unexpected = sorted(expected - set(own)), sorted(set(own) - expected)
    if missing or unexpected:
        what = f"lacks {missing[0]}" if missing else f"holds {unexpected[0]}, which the model has not"
        raise BaseModelError(f"The checkpoint {checkpoint_dir} does not fit its base model: it {what} "
                             f"({len(missing)} missing, {len(unexpected)} unexpected).")
    lm.load_state_dict(own, strict=False)
    if lm.config.tie_word_embeddings:
        lm.tie_weights()


def tuned_lm(base_model_dir: str | os.PathLike[str], checkpoint_dir: str | os.PathLike[str] | None,
             weights: str = "fp32", device: Any = "cpu") -> TunedModel:
    """The model of ``checkpoint_dir`` (None: the base model), LoRA merged, weights stored as ``weights`` (fp32 or
    bf16: a 4-bit base is not merged into, LoRA trained on one is merged into the full-precision weights).
    ``base_model_dir`` is the folder the run was given, a LoRA adapter folder too (merged into its base first).

    Raises:
        BaseModelError: the base folder or the checkpoint cannot be loaded, or they do not fit together.
    """
    import torch

    from alltalk_gui.core.engines.orpheus.files import validate_base_model
    from alltalk_gui.core.engines.orpheus.model import add_lora, load_model, merge_lora

    info = validate_base_model(base_model_dir)
    if checkpoint_dir is None:
        lm = load_model(info, weights)
        return TunedModel(lm.eval().to(device), 0, {}, [], 0, 0.0)
    from alltalk_gui.core.training.checkpoints import CheckpointError, read_checkpoint

    try:
        checkpoint = read_checkpoint(checkpoint_dir)
    except CheckpointError as exc:
        raise BaseModelError(str(exc)) from exc
    config = checkpoint.config
    rank, alpha = int(config.get("lora_rank") or 0), float(config.get("lora_alpha") or 32.0)
    lm = load_model(info, weights)
    if rank:
        add_lora(lm, rank, alpha)
    load_into(lm, checkpoint_state(checkpoint.path), checkpoint.path, lora=bool(rank))
    if rank:
        merge_lora(lm)
    lm.requires_grad_(False)
    if weights != "fp32":
        lm.to(dtype=torch.bfloat16)  # adapters were fp32; the merged weights are the base's type
    speakers = read_speakers(checkpoint.path.parent.parent)
    return TunedModel(lm.eval().to(device), checkpoint.step, config, speakers, rank, alpha)
