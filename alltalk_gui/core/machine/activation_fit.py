"""Activation memory per sequence position, measured once and fitted, for the engines' memory estimates.

An engine's estimate (F5-TTS, Orpheus-TTS, Parler-TTS) measures on the CPU what autograd saves for its model at a
few lengths (random weights at the real width, depth 1 and 2: a layer is the difference), fits each series as
a + b*n + c*n^2 (:func:`fit`), and keeps the fits with the measured bytes in a calibration file beside its profiles
(:func:`write`, read back by :func:`read`). Its estimate then takes the per-position part (:func:`at`) at the
clip's length. What is measured, and how it is split into series, stays the engine's own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Sequence


def fit(lengths: Sequence[int], series: dict[str, list[float]]) -> dict[str, Any]:
    """Each series fitted as a + b*n + c*n^2 through ``lengths`` (coefficients from the constant up), with the
    measured bytes beside them under ``measured_bytes`` (length, as text, to bytes)."""
    import numpy as np

    fits: dict[str, Any] = {key: [float(c) for c in np.polyfit(lengths, values, 2)[::-1]]
                            for key, values in series.items()}
    fits["measured_bytes"] = {key: dict(zip(map(str, lengths), values)) for key, values in series.items()}
    return fits


def at(coefficients: Sequence[float], n: int) -> float:
    """The bytes a fit gives for ``n`` positions, without its constant term: that is the weights autograd also
    saves (and their autocast copies), which an estimate counts under weights already, and a zero-length clip
    keeps no activations."""
    _a, b, c = coefficients
    return max(0.0, b * n + c * n * n)


def read(path: Path | None, parts: tuple[str, ...], key: str) -> Any | None:
    """``key`` of the calibration file at ``path`` (default: the resource ``parts``), or None when the file is
    missing, unreadable or lacks it (the engine then uses its fallback figures)."""
    from alltalk_gui.core.resources import resource_path

    try:
        return json.loads((path or resource_path(*parts)).read_text(encoding="utf-8"))[key]
    except (OSError, KeyError, ValueError):  # FileNotFoundError included
        return None


def write(path: Path, fields: dict[str, Any], key: str, measure: Callable[[], Any]) -> dict[str, Any]:
    """Write a calibration file atomically: the date, ``fields`` (what was measured, on what, by which command),
    torch's version, ``key``: ``measure()``, and the seconds measuring took; returns what was written."""
    import time

    import torch

    from alltalk_gui.core import atomic

    start = time.perf_counter()
    document = {"date": time.strftime("%Y-%m-%d"), **fields, "torch": torch.__version__, key: measure()}
    document["seconds"] = round(time.perf_counter() - start, 1)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_json(path, document)
    return document
