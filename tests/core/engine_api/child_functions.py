"""Functions the engine-child tests call in a child process (imported there by module name)."""

from __future__ import annotations

import os
import sys

import numpy as np

from alltalk_gui.core.engine_api.engine import BaseModelError, EngineError

_kept: dict[str, object] = {}


def echo(value):
    print("a library printing to stdout must not garble the answers")
    return value


def scale(samples, factor: float = 2.0):
    return {"samples": samples * factor, "length": int(samples.shape[0])}


def remember(key: str, value) -> None:
    _kept[key] = value


def recall(key: str):
    return _kept.get(key)


def steps(count: int, progress=None) -> int:
    for i in range(count):
        progress(f"step {i + 1}", (i + 1) / count)
    return count


def refuse_base_model(folder: str) -> None:
    raise BaseModelError(f"{folder} holds no model.json")


def refuse(text: str) -> None:
    raise EngineError(text)


def divide(a: float, b: float) -> float:
    return a / b


def die() -> None:
    print("dying now", file=sys.stderr, flush=True)
    os._exit(3)


def interpreter() -> str:
    return sys.executable
