"""SNAC, the audio codec Orpheus speaks through: loading it, its facts, and audio to codes and back.

Orpheus 3B 0.1 reads and writes SNAC 24 kHz codes (hubertsiuzdak/snac_24khz, MIT, 19.8 M parameters, PyPI
``snac``): an encoder with a total stride of 512 samples, then three residual quantizers at strides 4, 2 and 1
of that, so 24,000 / 512 / 4 = 11.7 coarse frames a second, each holding 1 + 2 + 4 = 7 codes (82 codes a
second). The facts come from the codec folder's ``config.json`` (:class:`CodecFacts`), so a tiny test codec with
the same conventions and a small codebook works the same way.

The weights (``pytorch_model.bin``) are read with ``torch.load(weights_only=True)`` into ``SNAC.from_config``'s
model: snac's own ``from_pretrained`` would unpickle anything.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alltalk_gui.core.engine_api.engine import BaseModelError

CODEC_DIR = "snac"
CODEC_FILES = ("config.json", "pytorch_model.bin")
LEVEL_WIDTHS = (1, 2, 4)   # codes per coarse frame at each level: Orpheus's 7-token frame needs exactly these


@dataclass(frozen=True)
class CodecFacts:
    """What the app needs to know of a SNAC codec without loading it."""

    sample_rate: int
    hop_length: int            # samples per code of the finest level
    vq_strides: tuple[int, ...]
    codebook_size: int

    @property
    def samples_per_frame(self) -> int:
        """Audio samples per coarse frame (one Orpheus frame of 7 codes)."""
        return self.hop_length * self.vq_strides[0]

    @property
    def frame_rate(self) -> float:
        return self.sample_rate / self.samples_per_frame

    @property
    def codes_per_frame(self) -> int:
        return sum(self.vq_strides[0] // s for s in self.vq_strides)

    @property
    def tokens_per_second(self) -> float:
        return self.frame_rate * self.codes_per_frame

    def frames(self, samples: int) -> int:
        """Coarse frames SNAC gives for ``samples`` of audio (it pads to whole frames)."""
        return math.ceil(samples / self.samples_per_frame)


def read_codec_facts(folder: str | os.PathLike[str]) -> CodecFacts:
    """The facts of the SNAC codec in ``folder`` (its ``config.json``).

    Raises:
        BaseModelError: a file is missing, or the codec does not have Orpheus's three levels of 1, 2 and 4 codes.
    """
    folder = Path(folder)
    for name in CODEC_FILES:
        if not (folder / name).is_file():
            raise BaseModelError(f"The SNAC codec file {name} is missing from {folder}.")
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        rates = [int(r) for r in config.get("encoder_rates", [3, 3, 7, 7])]
        strides = tuple(int(s) for s in config.get("vq_strides", [8, 4, 2, 1]))
        facts = CodecFacts(int(config.get("sampling_rate", 44100)), math.prod(rates), strides,
                           int(config.get("codebook_size", 4096)))
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        raise BaseModelError(f"{folder / 'config.json'} is not a SNAC configuration: {exc}") from exc
    if tuple(facts.vq_strides[0] // s for s in facts.vq_strides) != LEVEL_WIDTHS:
        raise BaseModelError(f"The SNAC codec in {folder} has quantizer strides {list(facts.vq_strides)}; Orpheus "
                             "speaks in SNAC 24 kHz codes (strides 4, 2, 1: 7 codes a frame).")
    return facts


def load_codec(folder: str | os.PathLike[str], device: Any = "cpu"):
    """The SNAC model of ``folder`` in eval mode on ``device``.

    Raises:
        BaseModelError: missing or damaged files, or weights that do not fit the configuration.
    """
    import torch
    from snac import SNAC

    folder = Path(folder)
    read_codec_facts(folder)
    try:
        model = SNAC.from_config(str(folder / "config.json"))
        state = torch.load(folder / "pytorch_model.bin", map_location="cpu", weights_only=True)
        model.load_state_dict(state)
    except Exception as exc:  # torch.load and load_state_dict raise many types for a damaged or foreign file
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BaseModelError(f"The SNAC codec in {folder} cannot be loaded: {first}") from exc
    return model.eval().requires_grad_(False).to(device)


def encode(codec, samples) -> tuple[list[int], list[int], list[int]]:
    """SNAC codes of mono float32 ``samples`` at the codec's rate: its three levels as lists of ints."""
    import numpy as np
    import torch

    device = next(codec.parameters()).device
    audio = torch.from_numpy(np.ascontiguousarray(samples, dtype=np.float32)).to(device)[None, None]
    with torch.inference_mode():
        levels = codec.encode(audio)
    return tuple(level[0].tolist() for level in levels)  # type: ignore[return-value]


def decode(codec, levels) -> Any:
    """Audio (mono float32 numpy at the codec's rate) of SNAC ``levels``; empty for no frames."""
    import numpy as np
    import torch

    if not levels[0]:
        return np.zeros(0, np.float32)
    device = next(codec.parameters()).device
    codes = [torch.tensor(level, dtype=torch.long, device=device)[None] for level in levels]
    with torch.inference_mode():
        audio = codec.decode(codes)
    return audio[0, 0].float().cpu().numpy().astype(np.float32)
