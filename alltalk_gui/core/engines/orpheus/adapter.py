"""An Orpheus LoRA adapter folder made elsewhere (Unsloth's ``save_pretrained``, peft's) used as a base model.

Most Orpheus fine-tunes come out of Unsloth's notebook as an adapter folder, not a model::

    adapter_config.json             peft's LoraConfig: rank, target modules, base_model_name_or_path, ...
    adapter_model.safetensors       base_model.model.<module>.lora_A/lora_B.weight (+ modules_to_save in full)
    tokenizer.json, tokenizer_config.json, special_tokens_map.json   (Unsloth saves the tokenizer beside it)

Such a folder is accepted wherever a base-model folder is (training's base, ``preview --model``):
:func:`.files.validate_base_model` puts it on the **base model** the user chose for Orpheus (the app settings'
folder: ``base_model_name_or_path`` is only named in messages; a path in a file someone else wrote is not followed)
and checks it from JSON and safetensors headers only (:func:`check_fits`: every adapted module exists in
the base with the shapes the adapter was made for, full copies of ``modules_to_save`` such as
``embed_tokens``/``lm_head`` have the base's vocabulary; the adapter's tokenizer is the base's). The adapter is
merged in memory when a model loads (:func:`merge_adapter`: peft's
``PeftModel.from_pretrained(...).merge_and_unload()``). A training run then starts from the merged weights as from
any base: LoRA profiles put new adapters on them, full profiles train them, and the 4-bit profile merges in bf16
first and quantises the merged weights (:func:`.model.load_model`). Nothing is ever written into the adapter
folder or the base folder. This module reads no other module of the engine (files.py calls it).

The Hub name an adapter usually gives (``unsloth/orpheus-3b-0.1-ft``: Unsloth's copy of
``canopylabs/orpheus-3b-0.1-ft``) is not downloaded from here: the message says which model to get and where to
set it. Which base counts is decided by fit, not by name: a base of the same architecture, vocabulary and
tokenizer is what the adapter's deltas were computed against only if it is the same model, so the message and
the run's log name both folders.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alltalk_gui.core.engine_api.engine import BaseModelError

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
OLD_ADAPTER_WEIGHTS = "adapter_model.bin"      # peft before safetensors: a pickle, not read here
PEFT_PREFIX = "base_model.model."               # peft's prefix of every saved key
MAX_HEADER_BYTES = 100 << 20                    # safetensors' own limit of a header
# The modules whose full copy (modules_to_save) unties Orpheus's tied embedding and output projection in a merge.
VOCABULARY_MODULES = ("embed_tokens", "lm_head")
SAME_WEIGHTS = {"unsloth/orpheus-3b-0.1-ft": "canopylabs/orpheus-3b-0.1-ft",
                "unsloth/orpheus-3b-0.1-pretrained": "canopylabs/orpheus-3b-0.1-pretrained"}


@dataclass(frozen=True)
class AdapterInfo:
    """A checked adapter folder and the base folder it goes on."""

    folder: Path
    base_name: str                  # its base_model_name_or_path, as written
    base_folder: Path               # the local base folder it fits
    rank: int
    modules: tuple[str, ...]        # the modules it adds LoRA deltas to
    saved_modules: tuple[str, ...]  # the modules it carries in full (modules_to_save)
    base_source: str = ""           # the Hub repository the base folder was downloaded from, when the app did

    def describe(self) -> str:
        full = f", {' and '.join(self.saved_modules)} in full" if self.saved_modules else ""
        return (f"LoRA adapter in {self.folder} (rank {self.rank}, {len(self.modules)} modules{full}; made for "
                f"{self.base_name}) on the base model in {self.base_folder}{self.other_base()}")

    def other_base(self) -> str:
        """A caution when the base was downloaded from another model than the adapter names (same shapes, other
        weights: Orpheus's pretrained and fine-tuned models are both 3B with one tokenizer), else ""."""
        made_for, source = (SAME_WEIGHTS.get(name, name) for name in (self.base_name, self.base_source))
        if not self.base_source or made_for == source:
            return ""
        return (f" (downloaded from {self.base_source}, not {self.base_name}: it fits, but the adapter's changes were "
                "learnt on another model's weights)")


def read_adapter_config(folder: Path) -> dict[str, Any]:
    """``adapter_config.json`` of a LoRA adapter that names its base.

    Raises:
        BaseModelError: unreadable, not LoRA, or without ``base_model_name_or_path``.
    """
    try:
        config = json.loads((folder / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BaseModelError(f"{ADAPTER_CONFIG} in {folder} cannot be read: {exc}") from exc
    if not isinstance(config, dict):
        raise BaseModelError(f"{ADAPTER_CONFIG} in {folder} must hold a JSON object.")
    kind = config.get("peft_type", "LORA")
    if kind != "LORA":
        raise BaseModelError(f"{folder} holds a {kind} adapter; only LoRA adapters (Unsloth's, peft's LoRA) can be "
                             "used as an Orpheus base model.")
    if not str(config.get("base_model_name_or_path") or "").strip():
        raise BaseModelError(f"{ADAPTER_CONFIG} in {folder} does not say which model the adapter was made for "
                             "(base_model_name_or_path is missing), so its base cannot be checked. Save the adapter "
                             "again with peft or Unsloth (they write it), or choose the merged model instead.")
    return config


def header_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """Tensor names and shapes from a safetensors file's header (no tensor is read).

    The format: 8 bytes giving the length of a JSON header, the header (each tensor's dtype, shape and byte range
    in the data that follows), the data. Read here rather than with safetensors' ``safe_open``, which imports torch:
    the memory estimate asks on the Train page's GUI thread (:func:`.files.loaded_shape`). Raises ValueError (or
    KeyError, TypeError) for a damaged file, a file cut short included (callers say it in their words)."""
    size = path.stat().st_size
    with path.open("rb") as f:
        length = int.from_bytes(f.read(8), "little")
        if size < 8 or length > min(size - 8, MAX_HEADER_BYTES):
            raise ValueError("not a safetensors file (its header's length does not fit the file)")
        header = json.loads(f.read(length))
    if not isinstance(header, dict):
        raise ValueError("not a safetensors file (its header is not a JSON object)")
    shapes: dict[str, tuple[int, ...]] = {}
    end = 0
    for key, entry in header.items():
        if key == "__metadata__":
            continue
        shape, (begin, stop) = [int(n) for n in entry["shape"]], entry["data_offsets"]
        if not 0 <= int(begin) <= int(stop):
            raise ValueError(f"the byte range of {key} is not a range")
        shapes[key], end = tuple(shape), max(end, int(stop))
    if 8 + length + end > size:
        raise ValueError(f"incomplete: its tensors need {8 + length + end:,} bytes, the file has {size:,}")
    return shapes


def adapter_shapes(folder: Path) -> dict[str, tuple[int, ...]]:
    """Tensor names (peft's prefix removed) and shapes from the adapter's safetensors header.

    Raises:
        BaseModelError: no safetensors weights, or a damaged file.
    """
    path = folder / ADAPTER_WEIGHTS
    if not path.is_file():
        old = " (only the old pickled adapter_model.bin, which is not loaded: save it again with peft's default "\
              "safe_serialization)" if (folder / OLD_ADAPTER_WEIGHTS).is_file() else ""
        raise BaseModelError(f"The LoRA adapter in {folder} has no {ADAPTER_WEIGHTS}{old}.")
    try:
        shapes = {key.removeprefix(PEFT_PREFIX): shape for key, shape in header_shapes(path).items()}
    except Exception as exc:  # safetensors raises several types for a damaged file
        raise BaseModelError(f"{ADAPTER_WEIGHTS} in {folder} cannot be read (damaged or incomplete): "
                             f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from exc
    if not shapes:
        raise BaseModelError(f"{ADAPTER_WEIGHTS} in {folder} holds no tensors.")
    return shapes


def no_base_message(folder: Path, base_name: str, chosen: Path | None, problem: str = "") -> str:
    """The adapter's base model is not here: which model to get, and where the app looks for it (``chosen``: the
    Orpheus base-model folder of the app settings; ``problem``: why that folder is not a base)."""
    same = SAME_WEIGHTS.get(base_name, base_name)
    also = f" ({base_name} holds the same weights as {same})" if same != base_name else ""
    if problem:
        where = f"the Orpheus base-model folder of the app settings is not one: {problem}"
    elif chosen is not None and chosen.is_dir():
        where = f"the Orpheus base-model folder of the app settings is {chosen}, which is an adapter too"
    elif chosen is not None:
        where = f"the Orpheus base-model folder of the app settings, {chosen}, does not exist"
    else:
        where = "no Orpheus base-model folder is set in the app settings"
    named = Path(base_name).expanduser()
    if named.is_absolute() and named.is_dir():  # peft writes the folder a base was loaded from: not read unasked
        get = (f"The adapter names the folder {named}: if that is its base, make it Orpheus's base model (the Train "
               "page's Choose folder…, or 'alltalk-gui download-base-model' into a folder of your choice)")
    else:
        get = (f"The app cannot download {base_name} by itself: get {same}{also} with 'alltalk-gui "
               "download-base-model BASE_DIR --engine orpheus' (or the Train page's Download…), which makes BASE_DIR "
               "Orpheus's base model in the app settings")
    return (f"{folder} holds a LoRA adapter made for {base_name}; the app puts it on the Orpheus base model of its "
            f"settings, and {where}. {get}, then give the adapter as the run's base: 'alltalk-gui train PROJECT "
            f"--base-model {folder}'.")


def check_fits(adapter: Path, shapes: dict[str, tuple[int, ...]], base: Path,
               model_shapes: dict[str, tuple[int, ...]], vocab: int) -> tuple[tuple[str, ...], tuple[str, ...], int]:
    """Whether the adapter's tensors fit the base whose every weight has ``model_shapes`` (lm_head included);
    returns the adapted modules, the modules carried in full, and the rank.

    Raises:
        BaseModelError: a module the base lacks, or a shape made for another model (hidden size, vocabulary).
    """
    adapted: dict[str, int] = {}
    saved = carried_in_full(shapes)
    for key, shape in sorted(shapes.items()):
        module, part = _split(key)
        if module is None:
            raise BaseModelError(f"{ADAPTER_WEIGHTS} in {adapter} holds {key}, which is not a LoRA tensor peft "
                                 "writes; the adapter cannot be used.")
        weight = model_shapes.get(f"{module}.weight")
        if weight is None:
            raise BaseModelError(f"The LoRA adapter in {adapter} adapts {module}, which the Orpheus model in {base} "
                                 "does not have: it was made for another model.")
        if part == "weight":  # a module carried in full (modules_to_save: embed_tokens, lm_head)
            if shape != weight:
                raise BaseModelError(_misfit(adapter, base, module, shape, weight, vocab))
            continue
        out_features, in_features = weight
        rank = shape[0] if part in ("lora_A", "lora_embedding_A") else shape[1]
        made_for = {"lora_A": (rank, in_features), "lora_B": (out_features, rank),
                    "lora_embedding_A": (rank, out_features), "lora_embedding_B": (in_features, rank)}[part]
        if len(shape) != 2 or shape != made_for or adapted.setdefault(module, rank) != rank:
            raise BaseModelError(_misfit(adapter, base, module, shape, weight, vocab))
    if not adapted and not saved:
        raise BaseModelError(f"{ADAPTER_WEIGHTS} in {adapter} holds no LoRA tensors.")
    return tuple(sorted(adapted)), saved, max(adapted.values(), default=0)


def carried_in_full(shapes: dict[str, tuple[int, ...]]) -> tuple[str, ...]:
    """The modules (last names: ``embed_tokens``, ``lm_head``) the adapter whose tensors are ``shapes`` carries in
    full (peft's ``modules_to_save``), sorted."""
    return tuple(sorted({_split(key)[0].rpartition(".")[2] for key in shapes if _split(key)[1] == "weight"}))


def unties_embeddings(saved_modules: tuple[str, ...]) -> bool:
    """Whether merging an adapter that carries ``saved_modules`` in full leaves a tied base with two vocabulary
    matrices: the adapter's copy of one beside the base's other (:func:`merge_adapter` ties them again only where
    they are still equal, which only the values can tell)."""
    return bool(set(saved_modules) & set(VOCABULARY_MODULES))


def _split(key: str) -> tuple[str | None, str]:
    """``model.layers.0.self_attn.q_proj.lora_A.weight`` -> (module, "lora_A"); a full weight -> (module,
    "weight"); anything else -> (None, "")."""
    for part in ("lora_A", "lora_B"):
        if key.endswith(f".{part}.weight"):
            return key.removesuffix(f".{part}.weight"), part
    for part in ("lora_embedding_A", "lora_embedding_B"):
        if key.endswith(f".{part}"):
            return key.removesuffix(f".{part}"), part
    if key.endswith(".weight") and "lora_" not in key:
        return key.removesuffix(".weight"), "weight"
    return None, ""


def _misfit(adapter: Path, base: Path, module: str, shape: tuple[int, ...], weight: tuple[int, ...],
            vocab: int) -> str:
    """Why a tensor of the adapter does not fit its module in the base, said as the model size it was made for."""
    what = "vocabulary" if module.endswith(("embed_tokens", "lm_head")) else "model size (hidden or MLP width)"
    there = f"a vocabulary of {vocab:,}" if what == "vocabulary" else f"{module}'s weight of shape {weight}"
    return (f"The LoRA adapter in {adapter} does not fit the Orpheus model in {base}: its tensor for {module} has "
            f"shape {shape}, made for another {what}, and the base has {there}. Choose the base model the adapter "
            "was trained from.")


def tokenizer_misfit(adapter: Path, base: Path, tokens: int, base_tokens: int) -> str:
    """The adapter's own tokenizer (Unsloth saves it beside the adapter) is not its base's."""
    return (f"The tokenizer in {adapter} is not the one of the Orpheus model in {base} ({tokens:,} tokens against "
            f"{base_tokens:,}, or other special token ids): the adapter was trained with another tokenizer. Choose "
            "the base model it was trained from.")


def merge_adapter(lm, adapter: AdapterInfo, merge_layers=None):
    """``lm`` (the base, bf16 or fp32) with the adapter's deltas folded in and its full modules in place, through
    peft (``PeftModel.from_pretrained(...).merge_and_unload()``; the weights load from safetensors).
    ``merge_layers(model)``, when given, merges and unloads the LoRA layers of peft's model itself first (one at a
    time, quantising each: :func:`.model.load_model`); peft then unloads the rest. peft unties the embedding and
    the output projection when the adapter carries either in full; where both are still the same values they are
    tied again (half the memory in a full fine-tune, and the base's layout)."""
    import torch
    from peft import PeftModel

    tied = bool(lm.config.tie_word_embeddings)
    try:
        with_adapter = PeftModel.from_pretrained(lm, str(adapter.folder), is_trainable=False)
        if merge_layers is not None:
            merge_layers(with_adapter.get_base_model())
        merged = with_adapter.merge_and_unload()
    except Exception as exc:  # peft and torch raise many types for an adapter that cannot be applied
        raise BaseModelError(f"The LoRA adapter in {adapter.folder} cannot be put on the base model in "
                             f"{adapter.base_folder}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                             ) from exc
    embedding, head = merged.get_input_embeddings().weight, merged.lm_head.weight
    if tied and head is not embedding and torch.equal(head, embedding):
        merged.config.tie_word_embeddings = True
        merged.lm_head.weight = embedding
    for parameter in merged.parameters():  # peft froze it for inference; as load_lm's, the levers decide what trains
        parameter.requires_grad_(parameter.is_floating_point())  # (4-bit weights, packed in bytes, never train)
    return merged
