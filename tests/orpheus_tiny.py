"""The tiny random Orpheus-TTS base folder, built once per test session and shared by the engine, CLI and GUI tests
(building it encodes seconds of audio to seed the codec's codebooks). Tests must not change it; a test that needs
to break something copies it first."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import session_folder

_CACHE: dict[str, Path] = {}


def tiny_orpheus_folder(tmp_path_factory) -> Path:
    if "base" not in _CACHE:
        from alltalk_gui.core.engines.orpheus.tiny_model import build_tiny_orpheus

        root = session_folder(tmp_path_factory, "tiny_orpheus")
        _CACHE["base"] = build_tiny_orpheus(root / "orpheus_tiny")
    return _CACHE["base"]
