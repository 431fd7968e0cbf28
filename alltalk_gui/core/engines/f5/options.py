"""F5-TTS's own settings: for training (``TrainConfig.options``) and for generation (``GenerationSettings.options``).

Training adds the optional EMA of the weights (:mod:`.model`) and the vocabulary's growth (:mod:`.text`);
generation samples the flow ODE in ``steps`` steps (NFE), which decide how long a take takes
(:mod:`.synthesis` estimates it), and stretches the speech by ``speed``.
"""

from __future__ import annotations

from dataclasses import dataclass

from alltalk_gui.core.engine_api.options import EngineOptions, setting
from alltalk_gui.core.engines.f5.synthesis import DEFAULT_NFE, NFE_CHOICES


@dataclass
class F5TrainOptions(EngineOptions):
    ema_decay: float = setting(
        0.0, "EMA decay",
        "Keep an exponential moving average of the weights and export it instead of the trained weights. 0 = off "
        "(the default: F5's own 0.9999 barely moves in a fine-tune of a few hundred steps, and EMA can hurt early "
        "fine-tunes); 0.999 averages over about the last 1,000 steps. Costs one more fp32 copy of the model "
        "(1.3 GB for F5 v1 Base) in GPU memory and in every checkpoint.",
        minimum=0.0, maximum=0.9999, step=0.001, decimals=4)
    add_missing_characters: bool = setting(
        False, "Add missing characters",
        "Characters of the transcripts that the base model's vocabulary lacks are added to it, each learning from "
        "your clips alone (F5's own fine-tuning does the same). Off: such characters stop the run before it "
        "starts, with the list, so you can decide.")

    def extra_weight_copies(self) -> int:
        return 1 if self.ema_decay else 0


@dataclass
class F5GenerationOptions(EngineOptions):
    steps: int = setting(
        DEFAULT_NFE, "Sampling steps (NFE)",
        f"Steps of F5-TTS's sampling, each two passes of the model: more steps, cleaner speech, proportionally more "
        f"time ({DEFAULT_NFE} is F5-TTS's default; 16 is twice as fast and still clear).",
        minimum=1, maximum=128, choices=NFE_CHOICES, in_view=True)
    speed: float = setting(1.0, "Speed", "1.2 speaks 20 % faster, 0.8 slower.", minimum=0.25, maximum=4.0,
                           step=0.05, decimals=2)
