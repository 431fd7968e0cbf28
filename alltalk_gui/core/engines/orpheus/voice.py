"""An Orpheus voice loaded for previews and the judge: the checkpoint's model (LoRA merged), its tokenizer and the
SNAC codec on one device.

On a card the 3.3 B weights are held in bf16 (6.6 GB instead of 13.2, and the card's bf16 matrix units); on the CPU
in fp32, which most CPUs multiply faster than bf16. Only the held dtype differs: :func:`load_voice_as` builds both
the same way, so the CPU tests can load and speak with the card's bf16 weights too.
"""

from __future__ import annotations

from pathlib import Path

from alltalk_gui.core.engines.orpheus.synthesis import OrpheusVoice


def voice_weights(device) -> str:
    """How a voice's weights are held on ``device``: "bf16" on a CUDA card, "fp32" elsewhere."""
    import torch

    return "bf16" if torch.device(device).type == "cuda" else "fp32"


def load_voice_as(base_model_dir: Path, weights: Path | None, device, held: str) -> OrpheusVoice:
    """The voice of the checkpoint whose weights file is ``weights`` (None: the base model) on ``device``, its
    model's weights held as ``held`` ("fp32" or "bf16").

    Raises:
        BaseModelError: the base folder or the checkpoint cannot be loaded, or they do not fit together.
    """
    from alltalk_gui.core.engines.orpheus.codec import load_codec
    from alltalk_gui.core.engines.orpheus.files import load_tokenizer, special_tokens, validate_base_model
    from alltalk_gui.core.engines.orpheus.tuned import tuned_lm

    info = validate_base_model(base_model_dir)
    model = tuned_lm(base_model_dir, weights.parent if weights is not None else None, weights=held, device=device)
    tokenizer = load_tokenizer(info.folder)
    return OrpheusVoice(model.lm, tokenizer, special_tokens(info.folder, info.codec, tokenizer),
                        load_codec(info.codec_dir, device), info.codec, info.context, model.speakers)
