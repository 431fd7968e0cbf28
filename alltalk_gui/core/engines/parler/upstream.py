"""Parler-TTS's own classes, imported in the engine's environment only (:mod:`.environment`).

Every module of this engine that needs ``parler_tts`` or ``dac`` goes through here, so that running one in the
app's own interpreter (transformers 5) fails with a sentence that says where it must run, instead of an
ImportError deep inside transformers.
"""

from __future__ import annotations

from typing import Any


class NotInParlerEnvironment(RuntimeError):
    """Parler-TTS's code was asked for in an interpreter that is not the engine's environment."""


def parler() -> Any:
    """The ``parler_tts`` package (registers its DAC wrapper with transformers' Auto classes on import)."""
    import transformers

    if not transformers.__version__.startswith("4.46."):
        raise NotInParlerEnvironment(
            f"Parler-TTS's model code runs in its own environment (transformers 4.46.1); this interpreter has "
            f"transformers {transformers.__version__}. Start it with the interpreter of "
            "alltalk_gui.core.engine_api.environment.python_for(the Parler engine).")
    import parler_tts

    return parler_tts


def model_class() -> Any:
    return parler().ParlerTTSForConditionalGeneration


def causal_lm_class() -> Any:
    return parler().ParlerTTSForCausalLM


def configs() -> tuple[Any, Any, Any]:
    """(ParlerTTSConfig, ParlerTTSDecoderConfig, DACConfig)."""
    p = parler()
    return p.ParlerTTSConfig, p.ParlerTTSDecoderConfig, p.DACConfig


def dac_model_class() -> Any:
    return parler().DACModel
