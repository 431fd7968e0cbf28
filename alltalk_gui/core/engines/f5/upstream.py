"""Import F5-TTS's model classes (``CFM``, ``DiT``) without its Trainer.

``f5_tts/model/__init__.py`` imports ``f5_tts.model.trainer``, which imports wandb, datasets and ema_pytorch at
module level; with f5-tts installed ``--no-deps`` (see the package docstring) those are absent and
``from f5_tts.model import CFM`` fails, and even where they are present they cost seconds of start-up.
Python runs a package's ``__init__`` before any of its submodules, so the only way around it is to register
``f5_tts.model`` ourselves: a plain module whose ``__path__`` is the real folder. Its submodules
(``cfm``, ``backbones.dit``, ``modules``, ``utils``) then import normally and unchanged. The stand-in carries
``CFM`` and ``DiT`` as attributes, so f5-tts's own code that says ``from f5_tts.model import CFM``
(``f5_tts.infer.utils_infer``, used by the export tests) works too; the other names of the real ``__init__``
(``MMDiT``, ``UNetT``, ``Trainer``) are imported on first access, so nothing that worked before breaks.

When ``f5_tts.model`` was already imported the normal way (a full f5-tts install), it is used as it is.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

_LAZY = {"MMDiT": "f5_tts.model.backbones.mmdit", "UNetT": "f5_tts.model.backbones.unett",
         "Trainer": "f5_tts.model.trainer"}


class F5NotInstalled(ImportError):
    """The f5-tts package (or one of the few packages its model classes import) is missing."""


def _register_model_package() -> types.ModuleType:
    spec = importlib.util.find_spec("f5_tts")
    if spec is None or not spec.submodule_search_locations:
        raise F5NotInstalled("The f5-tts package is not installed: pip install --no-deps f5-tts==1.1.22 "
                             "(its model classes also need x-transformers, torchdiffeq, vocos, rjieba, pypinyin).")
    folder = Path(list(spec.submodule_search_locations)[0]) / "model"
    module = types.ModuleType("f5_tts.model", "f5_tts.model without its Trainer (see alltalk_gui f5 upstream).")
    module.__path__ = [str(folder)]
    module.__package__ = "f5_tts.model"
    module.__file__ = str(folder / "__init__.py")

    def __getattr__(name: str) -> Any:
        if name in _LAZY:
            value = getattr(importlib.import_module(_LAZY[name]), name)
            setattr(module, name, value)
            return value
        raise AttributeError(f"module 'f5_tts.model' has no attribute {name!r}")

    module.__getattr__ = __getattr__  # type: ignore[attr-defined]
    sys.modules["f5_tts.model"] = module
    return module


def f5_model_package() -> types.ModuleType:
    """``f5_tts.model`` with ``CFM`` and ``DiT`` importable and the Trainer not imported.

    Raises:
        F5NotInstalled: f5-tts or one of the packages its model modules import is missing.
    """
    module = sys.modules.get("f5_tts.model")
    if module is not None and hasattr(module, "CFM") and hasattr(module, "DiT"):
        return module
    if module is None:
        module = _register_model_package()
    try:
        cfm = importlib.import_module("f5_tts.model.cfm")
        dit = importlib.import_module("f5_tts.model.backbones.dit")
    except ImportError as exc:
        sys.modules.pop("f5_tts.model", None)
        raise F5NotInstalled(f"F5-TTS's model classes cannot be imported: {exc}. Install alltalk-gui's "
                             "dependencies (f5-tts is installed with --no-deps; see pyproject.toml).") from exc
    module.CFM = cfm.CFM
    module.DiT = dit.DiT
    return module


def cfm_class():
    """F5-TTS's ``CFM`` (conditional flow matching wrapper: the loss and the ODE sampler)."""
    return f5_model_package().CFM


def dit_class():
    """F5-TTS's ``DiT`` backbone."""
    return f5_model_package().DiT


def f5_utils():
    """``f5_tts.model.utils`` (tokenizer helpers: ``convert_char_to_pinyin``, ``list_str_to_idx``)."""
    f5_model_package()
    return importlib.import_module("f5_tts.model.utils")
