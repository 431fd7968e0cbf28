"""A Stop pressed during a long take, as the tests press it: the progress callback raises when the take says it
has reached a given part of its text (the one safe point, ``before_piece``), and keeps what it was told."""

from __future__ import annotations

from collections.abc import Callable

LONG_TEXT = " ".join(["The first hall of the museum shows old maps of the city and its harbour."] * 12)


class Stopped(Exception):
    """What the stopping progress callback raises."""


def stop_at_part(part: int = 2) -> tuple[list[str], Callable[[str, float], None]]:
    """(the messages told so far, a progress callback that raises :class:`Stopped` at "part ``part`` of")."""
    told: list[str] = []

    def progress(what: str, _fraction: float) -> None:
        told.append(what)
        if f"part {part} of" in what:
            raise Stopped

    return told, progress
