"""packaging/alltalk_gui.spec, read as PyInstaller reads it (executed with its build steps recording what they get;
PyInstaller itself and a 10-minute build are not needed for what the spec decides): on Windows the app is a
windowed program, so no console window opens beside it, and the CLI is a console program beside it in the same
folder; elsewhere both are console programs (the flag changes nothing there)."""

from __future__ import annotations

import sys
import types

import pytest

from tests.packaging.conftest import ROOT

SPEC = ROOT / "packaging" / "alltalk_gui.spec"


def read_spec(monkeypatch, platform: str) -> dict:
    """The spec executed on ``platform``: what it passed to each EXE (by name) and to COLLECT."""
    hooks = types.ModuleType("PyInstaller.utils.hooks")
    hooks.collect_data_files = lambda package, **kw: []
    hooks.collect_submodules = lambda package, **kw: []
    hooks.copy_metadata = lambda dist, **kw: []
    for name in ("PyInstaller", "PyInstaller.utils"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "PyInstaller.utils.hooks", hooks)
    monkeypatch.setattr(sys, "platform", platform)
    made: dict = {"exe": {}}

    def exe(*parts, **options):
        made["exe"][options["name"]] = options
        return ("EXE", options["name"])

    def collect(*parts, **options):
        made["collect"] = (parts, options)

    namespace = {"SPECPATH": str(SPEC.parent), "Analysis": lambda *a, **k: types.SimpleNamespace(
        pure=[], scripts=[], binaries=[], datas=[]), "PYZ": lambda *a, **k: "PYZ", "EXE": exe, "COLLECT": collect}
    exec(compile(SPEC.read_text(encoding="utf-8"), str(SPEC), "exec"), namespace)
    return made


@pytest.mark.parametrize("platform, app_console", [("win32", False), ("linux", True), ("darwin", True)])
def test_the_app_opens_no_console_on_windows_and_the_cli_is_a_console_program(monkeypatch, platform, app_console):
    made = read_spec(monkeypatch, platform)
    assert set(made["exe"]) == {"alltalk-gui", "alltalk-gui-cli"}
    assert made["exe"]["alltalk-gui"]["console"] is app_console
    assert made["exe"]["alltalk-gui-cli"]["console"] is True
    parts, options = made["collect"]
    # One folder: both programs share its Python, Qt and torch.
    assert parts[:2] == (("EXE", "alltalk-gui"), ("EXE", "alltalk-gui-cli")) and options["name"] == "alltalk-gui"
