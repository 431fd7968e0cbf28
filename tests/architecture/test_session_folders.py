"""A session-scoped fixture makes its folder with ``session_folder`` (tests/conftest.py), never with
``tmp_path_factory.mktemp`` itself: the autouse module fixture there removes, when a module ends, every folder made
during it that is not named as a session's, so the module that first asked for a session fixture took the folder
with it and later modules found it gone (the GPU run of 2026-11-27 lost its voice project so: 5 failures, 3 errors).
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _session_scoped(function: ast.FunctionDef) -> bool:
    for decorator in function.decorator_list:
        if isinstance(decorator, ast.Call) and any(
                keyword.arg == "scope" and isinstance(keyword.value, ast.Constant) and keyword.value.value == "session"
                for keyword in decorator.keywords):
            return True
    return False


def _direct_mktemp(function: ast.FunctionDef) -> list[int]:
    return [node.lineno for node in ast.walk(function)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "mktemp"]


def test_session_fixtures_make_their_folders_with_session_folder():
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and _session_scoped(node):
                offenders += [f"{path.relative_to(TESTS.parent)}:{line} ({node.name})" for line in _direct_mktemp(node)]
    assert not offenders, "a session fixture's folder made with mktemp goes when its first module ends: " + \
        ", ".join(offenders)


def test_the_check_finds_a_session_fixture_that_calls_mktemp():
    source = ('import pytest\n@pytest.fixture(scope="session")\ndef made(tmp_path_factory):\n'
              '    return tmp_path_factory.mktemp("x")\n')
    function = ast.parse(source).body[1]
    assert _session_scoped(function) and _direct_mktemp(function) == [4]
    module = ast.parse(source.replace('scope="session"', 'scope="module"')).body[1]
    assert not _session_scoped(module)
