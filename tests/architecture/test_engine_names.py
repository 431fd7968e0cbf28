"""Neutral code names no engine: outside the engines' own packages, no code (names, imports, strings the program
uses; comments and docstrings are documentation and may give examples) spells ``xtts`` or ``f5``, except where this
file says why. A new engine then needs no edit to neutral code, and the toy engine in tests/toy_engine proves it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import alltalk_gui

PACKAGE = Path(alltalk_gui.__file__).parent
ENGINE_NAMES = re.compile(r"(?i)(?<![a-z0-9])(xtts|f5)(?![a-z0-9])")
NOT_NEUTRAL = ("core/engines/", "testing/")  # the engines themselves; the test helpers that build their tiny models

# (file, the code that names an engine): why it may.
ALLOWED = {
    ("core/engine_api/engine.py", "xtts"): "DEFAULT_ENGINE: the engine a new project starts with",
    ("core/project/folder.py", "xtts"): "UNNAMED_ENGINE: the engine of a project saved before projects named theirs "
                                        "(schema 1), fixed by history rather than by today's default",
    ("core/training/schedule.py", "XTTS_FINETUNE_WEBUI"): "xtts-finetune-webui, a project whose recipe the learning "
                                                          "rate is compared with, not the engine",
    ("core/training/schedule.py", "xtts-finetune-webui"): "the same project, by its name",
    # Bring-your-own datasets are named after the programs users bring them from, so that they recognise their
    # data: formats, not this app's engines (core/dataset/byo_layouts.py says so).
    ("core/dataset/byo_import.py", "f5"): "the key of F5-TTS's csv layout (metadata.csv with a header)",
    ("core/dataset/byo_layouts.py", "f5"): "the same key, with the layout's name",
    ("core/dataset/byo_layouts.py", "F5-TTS dataset (metadata.csv with an audio_file|text header)"): "its name",
    ("core/dataset/byo_layouts.py", "AllTalk / coqui XTTS: metadata_train.csv and metadata_eval.csv (AllTalk's "
                                    "finetune/<name>/ folder)"): "the coqui/AllTalk layout in the import dialog",
    ("core/dataset/byo_layouts.py", "F5-TTS: metadata.csv with the header audio_file|text"): "the same for F5-TTS",
    ("core/dataset/byo_layouts.py", "AllTalk / coqui, F5-TTS, LJSpeech, Hugging Face parquet, or audio files with "
                                    "a .txt or .lab beside each"): "the layouts in short (CLI list, tooltip)",
}


def _documentation(tree: ast.AST) -> set[int]:
    """The string constants that are docstrings or other bare string statements (attribute documentation)."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}


def _code_texts(tree: ast.AST):
    """(line, text) of every identifier, imported module and string constant that is code, not documentation."""
    docs = _documentation(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.lineno, node.value
        elif isinstance(node, ast.Name):
            yield node.lineno, node.id
        elif isinstance(node, ast.Attribute):
            yield node.lineno, node.attr
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.lineno, node.name
        elif isinstance(node, ast.ImportFrom):
            yield node.lineno, node.module or ""
        elif isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)


def neutral_files_naming_engines() -> dict[tuple[str, str], int]:
    """(file, text) -> line, for every engine name in neutral code."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith(NOT_NEUTRAL):
            continue
        for line, text in _code_texts(ast.parse(path.read_text(encoding="utf-8"))):
            if ENGINE_NAMES.search(text):
                found[(relative, text)] = line
    return found


def test_no_neutral_code_names_an_engine_but_the_documented_exceptions():
    found = neutral_files_naming_engines()
    unexplained = {f"{file}:{line}: {text[:80]!r}" for (file, text), line in found.items()
                   if (file, text) not in ALLOWED}
    assert unexplained == set()
    assert set(ALLOWED) <= set(found), "an exception that no longer occurs: remove it"


def test_the_scan_finds_engine_names_in_code_and_skips_documentation():
    tree = ast.parse('"""The XTTS v2 engine."""\nimport alltalk_gui.core.engines.f5\nx = "xtts"  # xtts\n'
                     'def f():\n    """F5."""\n    return x.F5_RATE\n')
    hits = [text for _line, text in _code_texts(tree) if ENGINE_NAMES.search(text)]
    assert sorted(hits) == ["F5_RATE", "alltalk_gui.core.engines.f5", "xtts"]
