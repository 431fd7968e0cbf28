"""A Parler-TTS base-model folder and its checks, without loading the model (and without Parler's code, so the app
itself can check a folder before anything starts).

A folder is what ``ParlerTTSForConditionalGeneration.save_pretrained`` writes plus the tokenizer, exactly the
Hub repositories ``parler-tts/parler-tts-mini-v1`` and ``-large-v1``:

``config.json``                 the composite config: ``text_encoder`` (Flan-T5), ``audio_encoder`` (DAC 44.1 kHz),
                                ``decoder`` (Parler's decoder over 9 DAC codebooks)
``model.safetensors``           every weight: T5 encoder, DAC, decoder, prompt embedding (or
                                ``model.safetensors.index.json`` with its shards, as Large v1 has)
``tokenizer.json`` (+ ``tokenizer_config.json``, ``special_tokens_map.json``, ``spiece.model``)
                                Flan-T5's tokenizer, used for both the description and the transcript
``generation_config.json``      optional: Parler's sampling defaults

:func:`validate_base_model` reads the config and the safetensors headers (names, shapes; a few kB) and checks that
they belong together, so a wrong or half-downloaded folder is refused with the file at fault named, in well under
a second even for Large v1's 9 GB.
"""

from __future__ import annotations

import json
import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alltalk_gui.core.engine_api.engine import BaseModelError

BASE_MODEL_SETTING = "parler_base_model_dir"  # the app settings' key of the base-model folder chosen for this engine
CONFIG_FILE = "config.json"
GENERATION_CONFIG = "generation_config.json"
WEIGHTS_FILE = "model.safetensors"
WEIGHTS_INDEX = "model.safetensors.index.json"
TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_FILES = (TOKENIZER_FILE, "tokenizer_config.json", "special_tokens_map.json")
SAMPLE_RATE = 44_100        # DAC 44.1 kHz: what the dataset is exported at and what Parler speaks
HOP_LENGTH = 512            # DAC's samples per code frame (2 x 4 x 8 x 8): 86.1 frames per second
NUM_CODEBOOKS = 9           # DAC 8 kbps: 9 residual codebooks ...
CODEBOOK_SIZE = 1024        # ... of 1024 codes each
# Trainable part of the model: the decoder, the transcript ("prompt") embedding and, when the T5 width differs from
# the decoder's (Large), the projection between them. T5 and DAC stay frozen (and out of checkpoints).
TRAINABLE_PREFIXES = ("decoder.", "embed_prompts.", "enc_to_dec_proj.")
BUFFERS = ("embed_positions.weights",)  # saved sinusoidal tables: not parameters

# The two published sizes, recognised by their decoder (for names and the memory estimate).
SIZES = {"mini": {"hidden_size": 1024, "num_hidden_layers": 24}, "large": {"hidden_size": 1536}}


@dataclass(frozen=True)
class ParlerModelInfo:
    """What a valid folder holds."""

    folder: Path
    config: dict[str, Any]
    weights: tuple[Path, ...]
    size: str                   # "mini", "large" or "custom"
    parameters: int             # trainable part: decoder + prompt embedding (+ projection)
    total_parameters: int       # with the T5 encoder and DAC
    has_generation_config: bool

    @property
    def decoder(self) -> dict[str, Any]:
        return self.config["decoder"]

    @property
    def title(self) -> str:
        return {"mini": "Parler-TTS Mini v1", "large": "Parler-TTS Large v1"}.get(self.size, "Parler-TTS (custom size)")


def read_safetensors_header(path: Path) -> dict[str, Any]:
    """The tensor table of a ``.safetensors`` file (name -> dtype, shape, offsets), read from its header only.

    Raises:
        BaseModelError: not a readable safetensors file.
    """
    try:
        with open(path, "rb") as f:
            raw = f.read(8)
            if len(raw) != 8:
                raise ValueError("shorter than a header")
            (length,) = struct.unpack("<Q", raw)
            if length > 100 << 20:
                raise ValueError(f"header length {length} is not plausible")
            header = json.loads(f.read(length))
        size = path.stat().st_size
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise BaseModelError(f"{path.name} in {path.parent} is not a readable safetensors file ({exc}); "
                             "download it again.") from exc
    header.pop("__metadata__", None)
    end = max((t["data_offsets"][1] for t in header.values()), default=0)
    if 8 + length + end > size:
        raise BaseModelError(f"{path.name} in {path.parent} is cut short ({size} of {8 + length + end} bytes): an "
                             "interrupted download? Download it again.")
    return header


def weight_files(folder: Path) -> tuple[Path, ...]:
    """The weight files: ``model.safetensors`` or the shards its index names.

    Raises:
        BaseModelError: neither is there, or the index is unreadable or names a missing shard.
    """
    if (folder / WEIGHTS_FILE).is_file():
        return (folder / WEIGHTS_FILE,)
    index = folder / WEIGHTS_INDEX
    if not index.is_file():
        raise BaseModelError(f"The Parler-TTS folder {folder} has no {WEIGHTS_FILE} (nor {WEIGHTS_INDEX} with "
                             "shards).")
    try:
        shards = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise BaseModelError(f"{WEIGHTS_INDEX} in {folder} is not a safetensors index: {exc}") from exc
    missing = [s for s in shards if not (folder / s).is_file() or "/" in s or "\\" in s]
    if missing:
        raise BaseModelError(f"{WEIGHTS_INDEX} in {folder} names {', '.join(missing)}, which is missing.")
    return tuple(folder / s for s in shards)


def read_config(folder: Path) -> dict[str, Any]:
    path = folder / CONFIG_FILE
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise BaseModelError(f"The Parler-TTS folder {folder} has no {CONFIG_FILE}.") from exc
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise BaseModelError(f"{CONFIG_FILE} in {folder} is not readable JSON: {exc}") from exc
    if not isinstance(config, dict) or config.get("model_type") != "parler_tts":
        kind = config.get("model_type") if isinstance(config, dict) else type(config).__name__
        raise BaseModelError(f"{CONFIG_FILE} in {folder} describes a '{kind}' model, not Parler-TTS "
                             "(model_type parler_tts).")
    for part in ("text_encoder", "audio_encoder", "decoder"):
        if not isinstance(config.get(part), dict):
            raise BaseModelError(f"{CONFIG_FILE} in {folder} has no '{part}' section.")
    return config


def _check_codec(config: dict[str, Any], folder: Path) -> None:
    audio, decoder = config["audio_encoder"], config["decoder"]
    facts = {"sampling_rate": (audio.get("sampling_rate"), SAMPLE_RATE),
             "num_codebooks": (audio.get("num_codebooks"), NUM_CODEBOOKS),
             "codebook_size": (audio.get("codebook_size"), CODEBOOK_SIZE),
             "decoder num_codebooks": (decoder.get("num_codebooks"), NUM_CODEBOOKS)}
    wrong = [f"{name} {have} (needs {want})" for name, (have, want) in facts.items() if have != want]
    if wrong or audio.get("model_type") not in ("dac", "dac_on_the_hub"):
        raise BaseModelError(f"{CONFIG_FILE} in {folder} is not a Parler-TTS v1 model with DAC 44.1 kHz: "
                             f"{'; '.join(wrong) or 'audio_encoder is ' + str(audio.get('model_type'))}.")
    if config["text_encoder"].get("model_type") != "t5":
        raise BaseModelError(f"{CONFIG_FILE} in {folder}: the description encoder is "
                             f"'{config['text_encoder'].get('model_type')}'; Parler-TTS v1 uses Flan-T5.")
    if not (decoder.get("vocab_size", 0) > CODEBOOK_SIZE + 1 and decoder.get("bos_token_id") == CODEBOOK_SIZE + 1
            and decoder.get("eos_token_id") == CODEBOOK_SIZE):
        raise BaseModelError(f"{CONFIG_FILE} in {folder}: the decoder's special codes (bos "
                             f"{decoder.get('bos_token_id')}, eos {decoder.get('eos_token_id')}) are not Parler's "
                             f"({CODEBOOK_SIZE + 1}, {CODEBOOK_SIZE}).")


def expected_shapes(config: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """Shapes of the tensors that identify the architecture (one of each kind, every layer's first)."""
    d, t = config["decoder"], config["text_encoder"]
    hidden, vocab = d["hidden_size"], d["vocab_size"]
    shapes: dict[str, tuple[int, ...]] = {
        "embed_prompts.weight": (config.get("vocab_size", t.get("vocab_size")), hidden),
        "text_encoder.shared.weight": (t["vocab_size"], t["d_model"]),
    }
    for k in range(d["num_codebooks"]):
        shapes[f"decoder.model.decoder.embed_tokens.{k}.weight"] = (vocab + 1, hidden)
        shapes[f"decoder.lm_heads.{k}.weight"] = (vocab, hidden)
    for i in range(d["num_hidden_layers"]):
        shapes[f"decoder.model.decoder.layers.{i}.self_attn.q_proj.weight"] = (hidden, hidden)
        shapes[f"decoder.model.decoder.layers.{i}.fc1.weight"] = (d["ffn_dim"], hidden)
    for i in range(t["num_layers"]):
        shapes[f"text_encoder.encoder.block.{i}.layer.0.SelfAttention.q.weight"] = (
            t["num_heads"] * t["d_kv"], t["d_model"])
    for k in range(NUM_CODEBOOKS):
        shapes[f"audio_encoder.model.quantizer.quantizers.{k}.codebook.weight"] = (CODEBOOK_SIZE, 8)
    if t["d_model"] != hidden and d.get("cross_attention_hidden_size") is None:
        shapes["enc_to_dec_proj.weight"] = (hidden, t["d_model"])
    return shapes


def model_size(config: dict[str, Any]) -> str:
    d = config["decoder"]
    for name, facts in SIZES.items():
        if all(d.get(k) == v for k, v in facts.items()):
            return name
    return "custom"


def validate_base_model(folder: str | os.PathLike[str]) -> ParlerModelInfo:
    """Check that ``folder`` holds a usable Parler-TTS v1 model, reading only its config and headers.

    Checks, in order: the folder; ``config.json`` (a Parler-TTS v1 model with Flan-T5 and DAC 44.1 kHz, 9
    codebooks of 1024, Parler's special codes); the tokenizer files; the weights (present, readable, not cut
    short) hold every tensor the config calls for, with its shape.

    Raises:
        BaseModelError: naming the first file that is missing or does not fit.
    """
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise BaseModelError(f"The Parler-TTS model folder {folder} does not exist.")
    config = read_config(folder)
    _check_codec(config, folder)
    missing = [n for n in TOKENIZER_FILES if not (folder / n).is_file()]
    if missing:
        # ParlerTTSForConditionalGeneration.save_pretrained writes the model alone; the tokenizer is the base's.
        from alltalk_gui.core.engine_api.shared_files import where_to_get

        raise BaseModelError(f"The Parler-TTS folder {folder} is missing {', '.join(missing)} (Flan-T5's tokenizer, "
                             "which reads the description and the text). "
                             + where_to_get(missing, folder, BASE_MODEL_SETTING, "Parler-TTS", "parler"))
    files = weight_files(folder)
    tensors: dict[str, Any] = {}
    for path in files:
        tensors.update(read_safetensors_header(path))
    try:
        expected = expected_shapes(config)
    except (KeyError, TypeError) as exc:
        raise BaseModelError(f"{CONFIG_FILE} in {folder} lacks the architecture value {exc}.") from exc
    names = ", ".join(p.name for p in files)
    absent = sorted(set(expected) - set(tensors))
    if absent:
        raise BaseModelError(f"{names} in {folder} lacks {len(absent)} tensor(s) the config calls for (first: "
                             f"{absent[0]}): weights and config.json do not belong together.")
    for key, shape in expected.items():
        if tuple(tensors[key]["shape"]) != tuple(shape):
            raise BaseModelError(f"{names} in {folder}: {key} has shape {tuple(tensors[key]['shape'])} but "
                                 f"config.json calls for {tuple(shape)}.")
    trainable = sum(_numel(t["shape"]) for k, t in tensors.items()
                    if k.startswith(TRAINABLE_PREFIXES) and not k.endswith(BUFFERS))
    total = sum(_numel(t["shape"]) for k, t in tensors.items() if not k.endswith(BUFFERS))
    return ParlerModelInfo(folder=folder, config=config, weights=files, size=model_size(config), parameters=trainable,
                           total_parameters=total, has_generation_config=(folder / GENERATION_CONFIG).is_file())


def frames(samples: int) -> int:
    """DAC code frames for ``samples`` at 44.1 kHz (DAC pads the input up to a whole hop)."""
    return -(-samples // HOP_LENGTH)


def _numel(shape: list[int]) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


def is_layer_key(key: str) -> bool:
    return re.search(r"\.layers\.\d+\.", key) is not None
