"""XTTS v2's own settings: for training (``TrainConfig.options``) and for generation (``GenerationSettings.options``).

The training defaults are coqui's GPTArgs / recipe values; the generation defaults are those of XTTS v2's
released ``config.json``, which :meth:`XttsGenerationOptions.for_base_model` reads from the base model itself
(what coqui's ``Xtts.synthesize`` and AllTalk use).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from alltalk_gui.core.engine_api.options import EngineOptions, OptionError, setting


@dataclass
class XttsTrainOptions(EngineOptions):
    freeze_conditioning: bool = setting(
        False, "Freeze conditioning",
        "Keep the voice-prompt encoder and perceiver resampler (46 M parameters) as the base model learned them and "
        "run them without autograd: saves their gradients, optimizer state and activations (about 1 GiB with "
        "AdamW).")
    max_text_tokens: int = setting(
        200, "Max text tokens", "Longest transcript accepted, in tokens (coqui: 200); longer clips are left out.",
        minimum=1, maximum=402)
    min_conditioning_seconds: float = setting(
        3.0, "Min voice prompt (s)", "The voice prompt is a random slice of the same clip, at least this long "
        "(coqui: 3 s).", minimum=0.1, maximum=30.0, step=0.5, decimals=1)
    max_conditioning_seconds: float = setting(
        6.0, "Max voice prompt (s)", "... and at most this long (coqui: 6 s).", minimum=0.1, maximum=30.0, step=0.5,
        decimals=1)
    text_ce_weight: float = setting(
        0.01, "Text loss weight", "Weight of the text-token loss; it only regularises (coqui: 0.01).", minimum=0.0,
        maximum=10.0, step=0.01, decimals=3)
    mel_ce_weight: float = setting(
        1.0, "Audio loss weight", "Weight of the audio-code loss, the one that fits the voice (coqui: 1).",
        minimum=0.0, maximum=10.0, step=0.1, decimals=2)

    def validate(self) -> None:
        super().validate()
        if self.min_conditioning_seconds > self.max_conditioning_seconds:
            raise OptionError("min_conditioning_seconds must be at most max_conditioning_seconds "
                              f"({self.min_conditioning_seconds} > {self.max_conditioning_seconds}).")


@dataclass
class XttsGenerationOptions(EngineOptions):
    temperature: float = setting(0.75, "Temperature", "Randomness of the voice: lower is steadier and flatter.",
                                 minimum=0.01, maximum=2.0, step=0.05, decimals=2)
    length_penalty: float = setting(1.0, "Length penalty", "Only matters with beam search; XTTS samples.",
                                    minimum=-5.0, maximum=5.0, step=0.1, decimals=2)
    repetition_penalty: float = setting(5.0, "Repetition penalty",
                                        "Discourages repeated sounds: stutters and long 'uhhh's.", minimum=1.0,
                                        maximum=50.0, step=0.5, decimals=1)
    top_k: int = setting(50, "Top-k", "Sample among this many most likely sounds.", minimum=1, maximum=1000, step=5)
    top_p: float = setting(0.85, "Top-p", "...and among those, the most likely ones holding this probability.",
                           minimum=0.01, maximum=1.0, step=0.05, decimals=2)
    speed: float = setting(1.0, "Speed", "1.2 speaks 20 % faster, 0.8 slower.", minimum=0.25, maximum=4.0,
                           step=0.05, decimals=2)
    max_new_tokens: int = setting(0, "Max audio codes", "Cap on audio codes (about 1/21 s each); 0 = the model's "
                                  "own limit.", minimum=0, maximum=100000, step=50)

    @classmethod
    def for_base_model(cls, base_model_dir: str | os.PathLike[str] | None) -> "XttsGenerationOptions":
        """The base model's sampling defaults from its config.json (plain JSON: no torch, no coqui)."""
        defaults = cls()
        try:
            config = json.loads((Path(base_model_dir or "") / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return defaults
        changes: dict[str, Any] = {}
        for name in ("temperature", "length_penalty", "repetition_penalty", "top_p"):
            if isinstance(config.get(name), (int, float)) and not isinstance(config.get(name), bool):
                changes[name] = float(config[name])
        if isinstance(config.get("top_k"), int) and not isinstance(config.get("top_k"), bool):
            changes["top_k"] = int(config["top_k"])
        return replace(defaults, **changes)

    def generate_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of coqui's ``Xtts.inference``."""
        kwargs: dict[str, Any] = {k: getattr(self, k) for k in
                                  ("temperature", "length_penalty", "repetition_penalty", "top_k", "top_p", "speed")}
        if self.max_new_tokens:
            kwargs["max_new_tokens"] = self.max_new_tokens
        return kwargs
