"""Small helpers for the app's sentences: a count with its noun in the right number ("1 clip", "54 clips"),
instead of the "clip(s)" the walk of 2026-11-26 found on every page; lists in words ("XTTS v2 or F5-TTS v1"), so a
text names every engine this install has rather than the first one alone."""

from __future__ import annotations

# Nouns whose plural is not the singular plus "s".
_IRREGULAR = {"this": "these", "was": "were", "has": "have", "is": "are", "entry": "entries"}


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """``count`` and the noun, singular for exactly one: ``plural(3, "clip")`` is "3 clips"."""
    return f"{count} {noun(count, singular, plural_form)}"


def in_words(items: list[str], conjunction: str = "or") -> str:
    """"A", "A or B", "A, B or C"."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {conjunction} {items[-1]}" if items else ""


def engine_titles() -> list[str]:
    """The titles of the engines this install has (the registry's order: the default first)."""
    from alltalk_gui.core.engine_api.engine import engine_names, get_engine

    return [get_engine(name).title for name in engine_names()]


def noun(count: int, singular: str, plural_form: str | None = None) -> str:
    """The noun alone, in the number ``count`` asks for (for a verb that follows: "1 file was", "2 files were")."""
    if count == 1:
        return singular
    return plural_form or _IRREGULAR.get(singular, f"{singular}s")
