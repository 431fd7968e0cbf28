"""Strict loading of saved dataclasses: a key the dataclass does not have is an error, never silently dropped.

project.json sources, train_config.json and preview settings all load this way, so a hand-edited file with a
typo is reported instead of half-applied.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any


def unknown_keys(cls: type, data: dict[str, Any]) -> list[str]:
    """The keys of ``data`` that are not fields of the dataclass ``cls``, sorted."""
    known = {f.name for f in fields(cls)}
    return sorted(set(data) - known)


def wrong_types(cls: type, data: dict[str, Any]) -> list[str]:
    """``"key must be int, found str"`` for each value of ``data`` whose JSON type does not fit the field's plain
    type (bool, int, float, str, or one of them ``| None``); an int is accepted for a float, a bool for nothing
    else. Fields of other types are not checked here."""
    from typing import get_args, get_type_hints

    hints = get_type_hints(cls)
    problems = []
    for key, value in data.items():
        allowed = set(get_args(hints.get(key)) or (hints.get(key),))
        if not allowed <= {bool, int, float, str, type(None)}:
            continue
        if float in allowed:
            allowed.add(int)
        if type(value) not in allowed:
            names = " or ".join(sorted(t.__name__ for t in allowed if t is not type(None)))
            problems.append(f"{key} must be {names}, found {type(value).__name__}")
    return problems
