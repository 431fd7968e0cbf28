"""The package's shape, as issue #14 set it: few files at the top of core/, coqui-tts only behind the engine boundary,
and every registered engine reachable through the registry."""

from __future__ import annotations

from pathlib import Path

import grimp

import alltalk_gui
from alltalk_gui.core.engine_api.engine import engine_names, get_engine, interface_members

CORE = Path(alltalk_gui.__file__).parent / "core"


def test_at_most_eight_files_stand_directly_in_core():
    files = sorted(p.name for p in CORE.iterdir() if p.is_file() and p.suffix == ".py")
    assert len(files) <= 8, files


def test_only_the_engines_and_the_test_helpers_import_coqui_tts():
    graph = grimp.build_graph("alltalk_gui", include_external_packages=True)
    allowed = ("alltalk_gui.core.engines.", "alltalk_gui.testing")
    importers = {m for m in graph.find_modules_that_directly_import("TTS") if not m.startswith(allowed)}
    assert importers == set()


def test_every_registered_engine_has_the_interface():
    # Attributes and methods of the Protocol; a registered engine that lacks one would fail only when used.
    names = interface_members()
    assert {"name", "aliases", "synthesize", "export"} <= set(names)
    for name in engine_names():
        engine = get_engine(name)
        assert engine.name == name
        assert [n for n in names if not hasattr(engine, n)] == []
