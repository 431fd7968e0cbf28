"""The registry finds engines as entry points (group ``alltalk_gui.engines``): the app's own two from its
pyproject.toml, any other package's the same way, and a broken plug-in is left out with the reason logged while
the others keep working."""

from __future__ import annotations

import logging
import sys

import pytest

from alltalk_gui.core.engine_api.engine import (
    DEFAULT_ENGINE, ENTRY_POINT_GROUP, EngineError, engine_name, engine_names, get_engine, skipped_engines,
)
from tests.engine_plugins import installed, plugin_site


def test_the_built_in_engines_are_entry_points_of_the_installed_package():
    import importlib.metadata

    points = {p.name: p.value for p in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
              if p.dist is not None and p.dist.name == "alltalk-gui"}
    assert set(points) >= {"xtts", "f5"}
    assert engine_names()[0] == DEFAULT_ENGINE and set(engine_names()) >= set(points)
    for name in points:
        assert get_engine(name).name == name


def test_aliases_come_from_the_engines():
    for name in engine_names():
        engine = get_engine(name)
        for alias in engine.aliases:
            assert engine_name(alias) == name and get_engine(alias) is engine


@pytest.fixture
def broken_module(tmp_path):
    """Importable modules that make bad plug-ins: one raising at import, one whose object lacks members."""
    (tmp_path / "bad_plugins").mkdir()
    (tmp_path / "bad_plugins" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "bad_plugins" / "crashes.py").write_text("raise RuntimeError('needs a GPU driver')\n",
                                                         encoding="utf-8")
    (tmp_path / "bad_plugins" / "partial.py").write_text(
        "class Half:\n    name = 'partial'\n    title = 'Half an engine'\n\nENGINE = Half()\n", encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    yield tmp_path
    sys.path.remove(str(tmp_path))
    for name in [m for m in sys.modules if m.startswith("bad_plugins")]:
        del sys.modules[name]


def test_a_broken_plugin_is_left_out_with_its_reason_and_the_others_still_load(broken_module, tmp_path, caplog):
    site = plugin_site(tmp_path / "site", {
        "crashes": "bad_plugins.crashes:ENGINE",
        "partial": "bad_plugins.partial:ENGINE",
        "missing": "bad_plugins.nowhere:ENGINE",
        "renamed": "alltalk_gui.core.engines.f5.engine:ENGINE",
        "xtts": "alltalk_gui.core.engines.xtts.engine:ENGINE",  # a second package declaring a taken name
    })
    with caplog.at_level(logging.WARNING), installed(site):
        assert engine_names() == ("xtts", "f5", "orpheus", "parler")
        assert get_engine("xtts").title == "XTTS v2"  # one of the two, the other left out
        skipped = skipped_engines()
        assert "RuntimeError: needs a GPU driver" in skipped["crashes"]
        assert "lacks" in skipped["partial"] and "synthesize" in skipped["partial"]
        assert "ModuleNotFoundError" in skipped["missing"]
        assert skipped["renamed"] == "its engine calls itself 'f5'"
        assert "already registered" in skipped["xtts"]
        with pytest.raises(EngineError, match=r"Unknown engine 'crashes' \(it cannot be loaded: RuntimeError"):
            get_engine("crashes")
    logged = caplog.text
    assert "'crashes'" in logged and "needs a GPU driver" in logged and "'partial'" in logged
    assert skipped_engines() == {} and engine_names() == ("xtts", "f5", "orpheus", "parler")  # gone with the site


def test_an_unknown_name_is_refused_naming_the_engines():
    with pytest.raises(EngineError, match="Unknown engine 'vall-e'; the engines are xtts, f5, orpheus, parler"):
        get_engine("vall-e")
