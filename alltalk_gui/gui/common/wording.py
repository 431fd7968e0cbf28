"""Small helpers for the app's sentences: a count with its noun in the right number ("1 clip", "54 clips"),
instead of the "clip(s)" the walk of 2026-11-26 found on every page."""

from __future__ import annotations

# Nouns whose plural is not the singular plus "s".
_IRREGULAR = {"this": "these", "was": "were", "has": "have", "is": "are", "entry": "entries"}


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """``count`` and the noun, singular for exactly one: ``plural(3, "clip")`` is "3 clips"."""
    return f"{count} {noun(count, singular, plural_form)}"


def noun(count: int, singular: str, plural_form: str | None = None) -> str:
    """The noun alone, in the number ``count`` asks for (for a verb that follows: "1 file was", "2 files were")."""
    if count == 1:
        return singular
    return plural_form or _IRREGULAR.get(singular, f"{singular}s")
