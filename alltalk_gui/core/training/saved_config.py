"""A run's saved ``train_config.json`` in today's shape, whichever version wrote it.

Before engines owned their settings, TrainConfig held every engine's fields side by side (XTTS v2's loss weights
and conditioning lengths next to F5-TTS's EMA), and each engine refused a change to the others'. Today an engine's
own settings are held by name in ``options`` (see :mod:`alltalk_gui.core.training.config`). :func:`upgraded` reads
the old shape as it ran: the run's engine's fields become its options, and another engine's fields, which that
version only allowed at their defaults, are dropped. Checkpoints (:mod:`.checkpoints`) and
``TrainConfig.from_dict`` both read through it.
"""

from __future__ import annotations

from typing import Any

from alltalk_gui.core.engine_api.engine import DEFAULT_ENGINE, EngineError, engine_names, get_engine


def upgraded(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with ``options``; a config without them (the old shape) converted, nothing else checked."""
    if "options" in data:
        return data
    engine = data.get("engine", DEFAULT_ENGINE)
    try:
        own = get_engine(engine).train_options.names()
    except EngineError:  # an engine this installation lacks: its fields stay where they are (and are refused)
        own = ()
    others = {name: get_engine(other).train_options() for other in engine_names() if other != engine
              for name in get_engine(other).train_options.names()}
    out: dict[str, Any] = {"options": {}}
    for key, value in data.items():
        if key in own:
            out["options"][key] = value
        elif key in others and key not in own and value == getattr(others[key], key):
            continue  # another engine's field at its default: the old config held them all
        else:
            out[key] = value
    return out
