"""No file uses a name it never defines or imports.

Such a name fails only when its line runs, and some lines run only on a GPU (``dataclasses.replace`` under Low on a
card under 8 GB crashed every small card until the H200 run of 2026-11-27 found it). pyflakes reads every file
without running it, so this guard covers the branches no CPU test reaches. Other pyflakes findings (unused imports
and the like) are style, not crashes, and are left to review.
"""

from __future__ import annotations

from pathlib import Path

from pyflakes import api, messages
from pyflakes.reporter import Reporter

ROOT = Path(__file__).resolve().parents[2]
CRASHES = (messages.UndefinedName, messages.UndefinedLocal, messages.UndefinedExport)


class _Collect(Reporter):
    def __init__(self) -> None:
        self.found: list[str] = []

    def flake(self, message) -> None:
        if isinstance(message, CRASHES):
            self.found.append(str(message))

    def syntaxError(self, filename, msg, lineno, offset, text) -> None:  # noqa: N802 (pyflakes' name)
        self.found.append(f"{filename}:{lineno}: {msg}")

    def unexpectedError(self, filename, msg) -> None:  # noqa: N802
        self.found.append(f"{filename}: {msg}")


def test_no_file_uses_an_undefined_name():
    reporter = _Collect()
    files = [p for folder in ("alltalk_gui", "benchmarks", "tests", "packaging") for p in (ROOT / folder).rglob("*.py")]
    assert len(files) > 300
    for path in files:
        api.checkPath(str(path), reporter)
    assert not reporter.found, "\n".join(reporter.found)


def test_the_guard_sees_a_name_used_only_in_a_rare_branch(tmp_path):
    source = tmp_path / "rare.py"
    source.write_text("def f(card_gib):\n    if card_gib < 8:\n        return dataclasses.replace(card_gib)\n    return 1\n")
    reporter = _Collect()
    api.checkPath(str(source), reporter)
    assert len(reporter.found) == 1 and "undefined name 'dataclasses'" in reporter.found[0]
