"""The benchmark scripts as modules: they are files in benchmarks/, not a package, so tests load them by path."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_script(relative: str) -> ModuleType:
    """``benchmarks/<relative>`` (e.g. ``gpu/bundles.py``) imported as a module named after the file."""
    path = BENCHMARKS / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module  # as an import would: dataclasses look their module up there
    spec.loader.exec_module(module)
    return module
