"""The duplicate-text index of a transcript, kept up to date edit by edit.

Two kept clips with the same normalised text (see :func:`flags.normalise_for_duplicates`) are duplicates: the
first in list order is the original and every later one is flagged. Rebuilding that map after each edit costs a
pass over all clips; this index instead keeps each text's clips in list order, so an edit touches only the
groups of the texts it removed and added, and says whose "duplicate of" changed (their flags need a recompute).
"""

from __future__ import annotations

import bisect
from typing import Any, Iterable

from alltalk_gui.core.transcript.flags import normalise_for_duplicates


class DuplicateIndex:
    """Kept clips grouped by normalised text; each group sorted by the list's order key."""

    def __init__(self, items: Iterable[tuple[Any, str, str]] = ()) -> None:
        """``items``: (order key, clip id, text) of the kept clips."""
        self._groups: dict[str, list[tuple[Any, str]]] = {}
        self._entry: dict[str, tuple[str, Any]] = {}  # clip id -> (normalised text, order key)
        for order_key, clip_id, text in items:
            self.add(order_key, clip_id, text)

    def duplicate_of(self, clip_id: str) -> str | None:
        """The id of the first clip with the same text, or None (no twin, or this clip is the first)."""
        entry = self._entry.get(clip_id)
        if entry is None:
            return None
        first = self._groups[entry[0]][0][1]
        return None if first == clip_id else first

    def add(self, order_key: Any, clip_id: str, text: str) -> str | None:
        """Index a kept clip; returns its normalised text (None when empty: empty texts are never duplicates)."""
        key = normalise_for_duplicates(text)
        if not key:
            return None
        bisect.insort(self._groups.setdefault(key, []), (order_key, clip_id))
        self._entry[clip_id] = (key, order_key)
        return key

    def remove(self, clip_id: str) -> str | None:
        """Forget a clip (deleted, edited, split or merged away); returns the text key it had, if indexed."""
        entry = self._entry.pop(clip_id, None)
        if entry is None:
            return None
        key, order_key = entry
        group = self._groups[key]
        group.pop(bisect.bisect_left(group, (order_key, clip_id)))
        if not group:
            del self._groups[key]
        return key

    def first(self, key: str) -> str | None:
        group = self._groups.get(key)
        return group[0][1] if group else None

    def members(self, key: str) -> list[str]:
        return [clip_id for _order, clip_id in self._groups.get(key, [])]
