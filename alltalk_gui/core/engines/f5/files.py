"""F5-TTS base-model folder: which files it holds, the architecture, the vocabulary, and how a folder is checked.

A base-model folder holds the DiT weights (``model_*.safetensors``, EMA weights under ``ema_model.*``, as
SWivid/F5-TTS publishes ``F5TTS_v1_Base/model_1250000.safetensors``), the character vocabulary ``vocab.txt``
(one token a line, line 0 a space, every line ending in a newline: f5-tts reads ``line[:-1]``), and the Vocos
vocoder in ``vocos/`` (``config.yaml`` + ``pytorch_model.bin`` from charactr/vocos-mel-24khz). That is the
layout AllTalk v2 uses under ``models/f5tts/<name>/`` too, so a base folder, an AllTalk export and the tiny
test model all validate the same way.

The architecture is F5TTS_v1_Base's unless the folder has ``model_cfg.yaml`` (the file f5-tts's
``infer_cli --model_cfg`` reads; our exports and the tiny model write it). :func:`validate_base_model` checks
every file and every tensor shape against that architecture on the meta device (nothing allocated) and raises
:class:`BaseModelError` naming the file at fault.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from alltalk_gui.core.engine_api.engine import BaseModelError  # noqa: F401  (re-exported)

BASE_MODEL_SETTING = "f5_base_model_dir"  # the app settings' key of the base-model folder chosen for this engine
VOCAB_FILE = "vocab.txt"
VOCOS_DIR = "vocos"
VOCOS_FILES = ("config.yaml", "pytorch_model.bin")
ARCH_FILE = "model_cfg.yaml"
EMA_PREFIX = "ema_model."
EMBED_KEY = "transformer.text_embed.text_embed.weight"  # rows: vocabulary size + 1 (row 0 is the filler)

# F5TTS_v1_Base (f5_tts/configs/F5TTS_v1_Base.yaml, model.arch); dim_head is DiT's default 64.
V1_BASE_ARCH: dict[str, Any] = {
    "dim": 1024, "depth": 22, "heads": 16, "ff_mult": 2, "text_dim": 512, "text_mask_padding": True,
    "qk_norm": None, "conv_layers": 4, "pe_attn_head": None, "attn_backend": "torch", "attn_mask_enabled": False,
    "checkpoint_activations": False,
}
# The mel every F5 v1 model and the Vocos vocoder share (model.mel_spec).
MEL = {"target_sample_rate": 24000, "n_mel_channels": 100, "hop_length": 256, "win_length": 1024, "n_fft": 1024,
       "mel_spec_type": "vocos"}
SAMPLE_RATE = MEL["target_sample_rate"]
HOP_LENGTH = MEL["hop_length"]


@dataclass(frozen=True)
class F5ModelInfo:
    """A validated F5 model folder."""

    folder: Path
    weights: Path
    arch: dict[str, Any]
    vocab: list[str]
    parameters: int
    ema_keys: bool  # True: keys under ema_model.* (a published/EMA checkpoint); False: bare CFM keys
    has_vocoder: bool = field(default=True)

    @property
    def vocoder_dir(self) -> Path:
        return self.folder / VOCOS_DIR


LAST_CHECKPOINT = "model_last.pt"  # F5-TTS's trainer: the newest save, beside model_<update>.pt


def find_weights(folder: Path) -> Path:
    """The folder's ``model_*.safetensors`` (the highest step if several), else the checkpoint F5-TTS's own trainer
    resumes from in a ``ckpts/<project>/`` folder: ``model_last.pt`` (its newest save), else the highest
    ``model_<update>.pt``. ``pretrained_*`` files there are the model it started from, never the fine-tune.

    Raises:
        BaseModelError: none, or only damaged names.
    """
    found = sorted(folder.glob("model_*.safetensors"), key=lambda p: (_step(p), p.name))
    if found:
        return found[-1]
    if (folder / LAST_CHECKPOINT).is_file():
        return folder / LAST_CHECKPOINT
    found = sorted(folder.glob("model_*.pt"), key=lambda p: (_step(p), p.name))
    if found:
        return found[-1]
    raise BaseModelError(f"{folder} has no F5-TTS weights: no model_*.safetensors (e.g. model_1250000.safetensors), "
                         f"nor a checkpoint of F5-TTS's trainer ({LAST_CHECKPOINT} or model_<update>.pt).")


def _step(path: Path) -> int:
    digits = path.stem.removeprefix("model_")
    return int(digits) if digits.isdigit() else -1


def read_vocab(path: str | os.PathLike[str]) -> list[str]:
    """Tokens of an F5 ``vocab.txt`` in file order, read exactly as f5-tts's ``get_tokenizer('custom')`` does.

    Raises:
        BaseModelError: missing, not UTF-8, or line 0 is not a space (f5-tts maps unknown characters to id 0).
    """
    path = Path(path)
    try:
        with open(path, encoding="utf-8") as f:
            tokens = [line[:-1] if line.endswith("\n") else line for line in f]
    except FileNotFoundError as exc:
        raise BaseModelError(f"{path.name} is missing from {path.parent}.") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise BaseModelError(f"{path.name} in {path.parent} is not a readable UTF-8 vocabulary: {exc}") from exc
    if not tokens or tokens[0] != " ":
        raise BaseModelError(f"{path.name} in {path.parent} must start with a line holding one space (token 0).")
    return tokens


def write_vocab(path: str | os.PathLike[str], tokens: list[str]) -> None:
    """Write ``tokens`` as an F5 ``vocab.txt``, atomically, with the final newline f5-tts's reader needs."""
    from alltalk_gui.core import atomic

    if len(set(tokens)) != len(tokens):
        raise ValueError("an F5 vocabulary cannot hold a token twice")
    atomic.write_text(path, "".join(f"{token}\n" for token in tokens))


def read_arch(folder: Path) -> dict[str, Any]:
    """The DiT architecture: ``model_cfg.yaml``'s ``model.arch`` when present, else F5TTS_v1_Base's."""
    path = folder / ARCH_FILE
    if not path.is_file():
        return dict(V1_BASE_ARCH)
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        arch = dict(data["model"]["arch"])
        backbone = data["model"].get("backbone", "DiT")
        mel = data["model"].get("mel_spec", MEL)
    except (OSError, UnicodeDecodeError, yaml.YAMLError, KeyError, TypeError) as exc:
        raise BaseModelError(f"{ARCH_FILE} in {folder} is not an F5 model config (model.arch): {exc}") from exc
    if backbone != "DiT":
        raise BaseModelError(f"{ARCH_FILE} in {folder} names backbone {backbone!r}; only DiT (F5-TTS v1) is supported.")
    if any(mel.get(k) != v for k, v in MEL.items()):
        raise BaseModelError(f"{ARCH_FILE} in {folder} uses a different mel ({mel}); the app trains the 24 kHz, "
                             "100-band Vocos mel only.")
    return arch


def arch_document(arch: dict[str, Any], name: str, vocab_path: str = VOCAB_FILE) -> dict[str, Any]:
    """A ``model_cfg.yaml`` in f5-tts's config layout (what ``f5-tts_infer-cli --model_cfg`` reads)."""
    return {"model": {"name": name, "tokenizer": "custom", "tokenizer_path": vocab_path, "backbone": "DiT",
                      "arch": dict(arch), "mel_spec": dict(MEL),
                      "vocoder": {"is_local": True, "local_path": VOCOS_DIR}}}


def load_weights(path: Path) -> dict[str, Any]:
    """The tensors in a ``model_*.safetensors`` (or the EMA/model dict in a ``model_*.pt``), on the CPU.

    Raises:
        BaseModelError: the file cannot be read.
    """
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            return load_file(str(path), device="cpu")
        import torch

        checkpoint = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        if isinstance(checkpoint, dict) and "ema_model_state_dict" in checkpoint:
            return checkpoint["ema_model_state_dict"]
        if isinstance(checkpoint, dict) and "model_state_dict" in checkpoint:
            return checkpoint["model_state_dict"]
        return checkpoint
    except Exception as exc:  # safetensors and torch raise many types for damaged files
        raise BaseModelError(f"{path.name} in {path.parent} cannot be loaded: {exc}") from exc


def cfm_state(weights: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """CFM state-dict keys from an EMA (``ema_model.*``) or plain checkpoint, as f5-tts's ``load_checkpoint``
    reads it (``initted``/``step`` dropped). Returns (state, had_ema_prefix)."""
    ema = any(k.startswith(EMA_PREFIX) for k in weights)
    state = {k.removeprefix(EMA_PREFIX): v for k, v in weights.items() if k not in ("initted", "step")}
    for legacy in ("mel_spec.mel_stft.mel_scale.fb", "mel_spec.mel_stft.spectrogram.window"):
        state.pop(legacy, None)
    return state, ema


def validate_base_model(folder: str | os.PathLike[str], need_vocoder: bool = True) -> F5ModelInfo:
    """Check that ``folder`` holds a usable F5-TTS model without loading it onto a device.

    Checks, in order: the folder exists; it has weights, ``vocab.txt`` and (unless ``need_vocoder`` is False)
    ``vocos/config.yaml`` + ``vocos/pytorch_model.bin``, none empty; the vocabulary reads; the weights load and
    every tensor of the architecture is there with its shape (the text embedding must have one row more than
    the vocabulary has tokens).

    Raises:
        BaseModelError: with a message naming the file at fault.
    """
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise BaseModelError(f"The F5-TTS model folder {folder} does not exist.")
    weights_path = find_weights(folder)
    needed = [weights_path, folder / VOCAB_FILE]
    if need_vocoder:
        needed += [folder / VOCOS_DIR / name for name in VOCOS_FILES]
    missing = [str(p.relative_to(folder)) for p in needed if not p.is_file()]
    if missing:
        raise BaseModelError(_missing_message(folder, missing))
    empty = [str(p.relative_to(folder)) for p in needed if p.stat().st_size == 0]
    if empty:
        raise BaseModelError(f"{', '.join(empty)} in {folder} is empty (an interrupted download?).")

    vocab = read_vocab(folder / VOCAB_FILE)
    arch = read_arch(folder)
    state, ema = cfm_state(load_weights(weights_path))
    embed = state.get(EMBED_KEY)
    if embed is None:
        raise BaseModelError(f"{weights_path.name} in {folder} holds no F5 DiT weights (no {EMA_PREFIX}{EMBED_KEY}).")
    if embed.shape[0] != len(vocab) + 1:
        raise BaseModelError(
            f"{VOCAB_FILE} in {folder} has {len(vocab)} tokens but {weights_path.name} was trained with "
            f"{embed.shape[0] - 1}: the vocabulary belongs to a different model. Use the vocab.txt that came "
            "with the weights.")
    expected = expected_state_shapes(arch, len(vocab))
    missing_keys = sorted(set(expected) - set(state))
    if missing_keys:
        raise BaseModelError(f"{weights_path.name} in {folder} lacks {len(missing_keys)} tensors the architecture "
                             f"calls for (first: {missing_keys[0]}); is it an F5-TTS v1 model? "
                             f"{'(architecture from ' + ARCH_FILE + ')' if (folder / ARCH_FILE).is_file() else ''}")
    for key, shape in expected.items():
        if tuple(state[key].shape) != shape:
            raise BaseModelError(f"{weights_path.name} in {folder}: {key} has shape {tuple(state[key].shape)} but "
                                 f"the architecture calls for {shape}; weights and architecture do not belong together.")
    return F5ModelInfo(folder=folder, weights=weights_path, arch=arch, vocab=vocab,
                       parameters=sum(_numel(shape) for shape in expected.values()), ema_keys=ema,
                       has_vocoder=all((folder / VOCOS_DIR / n).is_file() for n in VOCOS_FILES))


def _missing_message(folder: Path, missing: list[str]) -> str:
    """Which files ``folder`` lacks, and where each comes from: F5-TTS's trainer keeps a fine-tune's vocabulary
    beside its dataset, not beside its checkpoints; the vocoder is the base model's."""
    from alltalk_gui.core.engine_api.shared_files import where_to_get
    message = (f"The F5-TTS model folder {folder} is missing {', '.join(missing)}. It needs model_*.safetensors "
               f"(or F5-TTS's {LAST_CHECKPOINT}), {VOCAB_FILE} and {VOCOS_DIR}/{' + '.join(VOCOS_FILES)}.")
    if VOCAB_FILE in missing:
        message += (f" {VOCAB_FILE}: the vocabulary the weights were trained with; F5-TTS's fine-tuning keeps it in "
                    f"data/<project>_pinyin/ (or _char/), and it is the base model's own when the vocabulary was "
                    f"not extended.")
    vocoder = [name for name in missing if name.startswith(f"{VOCOS_DIR}/")]
    if vocoder:
        message += " " + where_to_get(vocoder, folder, BASE_MODEL_SETTING, "F5-TTS", "f5")
    return message


def expected_state_shapes(arch: dict[str, Any], vocab_size: int) -> dict[str, tuple[int, ...]]:
    """Shapes of every CFM state-dict tensor for ``arch`` and a vocabulary of ``vocab_size`` tokens (meta device)."""
    import torch

    with torch.device("meta"):
        cfm = build_cfm(arch, vocab={str(i): i for i in range(vocab_size)})
    return {k: tuple(v.shape) for k, v in cfm.state_dict().items()}


def build_cfm(arch: dict[str, Any], vocab: dict[str, int], checkpoint_activations: bool = False):
    """A randomly initialised ``CFM(DiT(**arch))`` for a vocabulary (token -> id), with F5's vocos mel. Here, not in
    model.py, because checking a folder's weight shapes builds one too (on the meta device)."""
    from alltalk_gui.core.engines.f5.upstream import cfm_class, dit_class

    arch = dict(arch, checkpoint_activations=checkpoint_activations)
    dit = dit_class()(**arch, text_num_embeds=len(vocab), mel_dim=MEL["n_mel_channels"])
    mel_kwargs = {k: MEL[k] for k in ("n_fft", "hop_length", "win_length", "n_mel_channels",
                                      "target_sample_rate", "mel_spec_type")}
    return cfm_class()(transformer=dit, mel_spec_kwargs=mel_kwargs, odeint_kwargs={"method": "euler"},
                       vocab_char_map=vocab)


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n
