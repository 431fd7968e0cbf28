"""Fixtures of the core tests: the tiny random XTTS v2 base-model folder (one per test module, so a module may
break its copy without touching another's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from alltalk_gui.core.engines.xtts.tiny_model import build_tiny_xtts


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return build_tiny_xtts(tmp_path_factory.mktemp("tiny_xtts"))
