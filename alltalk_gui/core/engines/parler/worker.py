"""What the app asks of Parler-TTS across the process boundary, run in the engine's environment.

The app (transformers 5) cannot import Parler's classes, so the engine (:mod:`.engine`) runs these functions in a
child started with the environment's interpreter (:class:`alltalk_gui.core.engine_api.engine_child.EngineChild`):
a voice is loaded once per child and speaks many times; an export or a test model is one call. Arguments and
results are plain values and numpy arrays.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Callable

_voices: dict[str, Any] = {}


def quiet() -> None:
    """transformers' and Parler's advice about deprecated arguments is not for the app's users."""
    import logging
    import warnings

    import transformers

    transformers.logging.set_verbosity_error()
    logging.getLogger("parler_tts").setLevel(logging.ERROR)  # Parler's loggers are not under transformers' root
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=UserWarning)


def make_tiny_model(folder: str, seed: int = 0) -> str:
    from alltalk_gui.core.engines.parler.tiny_model import build_tiny_parler

    quiet()
    return str(build_tiny_parler(folder, seed=seed))


def load_voice(base_model_dir: str, checkpoint_dir: str | None, device: str) -> dict[str, Any]:
    """Load (once per child) the base model or a checkpoint's; returns its key, step and trained description."""
    from alltalk_gui.core.engines.parler.model import load_tokenizer
    from alltalk_gui.core.engines.parler.tuned import tuned_model

    quiet()
    key = f"{base_model_dir}|{checkpoint_dir}|{device}"
    if key not in _voices:
        tuned = tuned_model(base_model_dir, checkpoint_dir)
        _voices[key] = (tuned.model.to(device), load_tokenizer(base_model_dir), device, tuned)
    tuned = _voices[key][3]
    return {"key": key, "step": tuned.step, "description": tuned.description}


def synthesize(key: str, description: str, pieces: list[str], sampling: dict[str, Any]) -> Any:
    from alltalk_gui.core.engines.parler.synthesis import Sampling, speak

    model, tokenizer, device, _ = _voices[key]
    return speak(model, tokenizer, description, pieces, Sampling(**sampling), device)


def write_model(base_model_dir: str, checkpoint_dir: str, folder: str, half: bool,
                progress: Callable[[str, float], None] | None = None) -> dict[str, Any]:
    """Write the checkpoint's model into ``folder`` as Parler's ``save_pretrained`` does, with the base's
    tokenizer and generation config; returns the step and the description the run trained with."""
    import torch

    from alltalk_gui.core.engines.parler.files import TOKENIZER_FILES, validate_base_model
    from alltalk_gui.core.engines.parler.tuned import tuned_model

    quiet()
    say = progress or (lambda _what, _fraction: None)
    say("Reading the weights", 0.1)
    tuned = tuned_model(base_model_dir, checkpoint_dir)
    model = tuned.model.to(torch.float16) if half else tuned.model
    say("Writing the model", 0.4)
    model.save_pretrained(folder, safe_serialization=True)
    base = validate_base_model(base_model_dir).folder
    for name in (*TOKENIZER_FILES, "spiece.model", "preprocessor_config.json"):
        if (base / name).is_file():
            shutil.copy2(base / name, Path(folder) / name)
    return {"step": tuned.step, "description": tuned.description}
