"""Orpheus-TTS's own settings: for training (``TrainConfig.options``) and for generation (``GenerationSettings.options``).

Training adds how the base model's weights are stored while it trains (:mod:`.model`): 4-bit NF4 (the Low
profile, LoRA only), bf16 (Medium's LoRA, High's full fine-tune) or fp32 (exact, for the CPU). Generation samples
the language model (:mod:`.synthesis`) with Orpheus's own settings as defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

from alltalk_gui.core.engine_api.options import EngineOptions, setting

# How the base model's weights can be stored while it trains (model.load_lm). Here, not in model.py: the registry
# imports this module, and it must not pull in torch (Help > About, the set-up pages).
BASE_WEIGHTS = ("nf4", "bf16", "fp32")


@dataclass
class OrpheusTrainOptions(EngineOptions):
    base_weights: str = setting(
        "bf16", "Base weights",
        "How the 3.3 B weights are held while training. nf4: 4 bits a weight (bitsandbytes), 1.7 GB instead of "
        "6.6 GB, only with LoRA; the adapters learn against the quantised weights and are merged into the full "
        "ones on export. bf16: 6.6 GB. fp32: 13.2 GB, exact (the CPU's choice).",
        choices=BASE_WEIGHTS)


@dataclass
class OrpheusGenerationOptions(EngineOptions):
    temperature: float = setting(
        0.6, "Temperature", "Randomness of each sampled code: lower is steadier and flatter, higher livelier and "
        "more error-prone (Orpheus's default 0.6).", minimum=0.05, maximum=2.0, step=0.05, decimals=2)
    top_p: float = setting(
        0.95, "Top-p", "Sample among the most likely codes that together hold this probability.",
        minimum=0.05, maximum=1.0, step=0.05, decimals=2)
    repetition_penalty: float = setting(
        1.1, "Repetition penalty", "Discourages repeating codes (stutters, held sounds); Orpheus needs at least 1.1 "
        "for a steady voice.", minimum=1.0, maximum=2.0, step=0.05, decimals=2)
    max_seconds: float = setting(
        14.6, "Longest take (s)", "At most this much speech per sentence (Orpheus's own cap: 1,200 codes, 14.6 s; "
        "the model says 7 codes a frame, 82 a second); each take is also capped from its sentence's length, so an "
        "untrained model cannot run on.",
        minimum=0.1, maximum=90.0, step=0.5, decimals=1, in_view=True)
