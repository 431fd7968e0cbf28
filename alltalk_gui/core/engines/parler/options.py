"""Parler-TTS's own settings: for training (``TrainConfig.options``) and for generation (``GenerationSettings.options``).

Training needs one thing of its own: the description of the voice the fine-tune learns (empty: the project's,
which the Train page shows and the project keeps; see :mod:`.description`). Generation samples Parler's decoder
with Parler's own options; the defaults are those of Parler's README (sampling at temperature 1.0, transformers'
top-k of 50, no top-p cut, no repetition penalty) and its generation config's 30 s limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from alltalk_gui.core.engine_api.options import EngineOptions, setting


@dataclass
class ParlerTrainOptions(EngineOptions):
    description: str = setting(
        "", "Voice description",
        "The words the fine-tune learns the voice under, with the speaker's name in them ('Jenny speaks ...'). "
        "Empty: the project's description (measured from its recordings, editable on the Train page).")


@dataclass
class ParlerGenerationOptions(EngineOptions):
    temperature: float = setting(1.0, "Temperature", "Randomness of the sampling: lower is steadier and flatter "
                                 "(Parler samples at 1.0).", minimum=0.05, maximum=2.0, step=0.05, decimals=2)
    top_k: int = setting(50, "Top-k", "Sample among this many most likely codes.", minimum=1, maximum=1024, step=5)
    top_p: float = setting(1.0, "Top-p", "...and among those, the most likely ones holding this probability "
                           "(1: all of them).", minimum=0.01, maximum=1.0, step=0.05, decimals=2)
    repetition_penalty: float = setting(1.0, "Repetition penalty", "Discourages repeated codes (1: off, as Parler "
                                        "samples).", minimum=1.0, maximum=10.0, step=0.1, decimals=2)
    max_seconds: float = setting(30.0, "Longest take (s)", "One generation stops after this much audio (Parler's "
                                 "limit: 30 s); long text is spoken sentence by sentence.", minimum=0.2,
                                 maximum=30.0, step=1.0, decimals=1)
