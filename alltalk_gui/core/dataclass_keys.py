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
