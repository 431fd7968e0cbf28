"""The colours that say good, warning, problem, note or "less important" in text, one pair per meaning: the
light look's and the dark look's.

The pages wrote the light look's colours into their rich text (``#c62828`` red, ``#b26a00`` amber, ``#2e7d32``
green, ``#666`` grey). On the dark palette's ``#26282c`` those read at 2.6:1, 3.5:1, 2.9:1 and 2.6:1 (WCAG asks
4.5:1 for text), so "No dataset yet", the import verdicts, the profile estimates and the first-run checks were
hard to read. :func:`colour` gives the colour for the palette in use; text is coloured when it is written, so a
page that rewrites its text after a light/dark switch follows it.
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QWidget

GOOD, WARNING, PROBLEM, NOTE, QUIET = "good", "warning", "problem", "note", "quiet"

# Contrast with the palette's window colour (build_palette: light #f3f4f6, dark #26282c), measured as WCAG does:
# light: 5.1 (problem), 3.9 (warning, as it was), 4.7 (good), 5.2 (note), 5.2 (quiet); dark: 5.3, 8.5, 6.2, 6.7, 5.9.
LIGHT = {GOOD: "#2e7d32", WARNING: "#b26a00", PROBLEM: "#c62828", NOTE: "#1565c0", QUIET: "#666666"}
DARK = {GOOD: "#66bb6a", WARNING: "#ffb74d", PROBLEM: "#ff6b6b", NOTE: "#64b5f6", QUIET: "#a0a4ab"}


def is_dark(widget: QWidget | None = None) -> bool:
    """Whether the palette in use (``widget``'s, else the application's) is a dark one."""
    palette = widget.palette() if widget is not None else QApplication.palette()
    return palette.color(QPalette.ColorRole.Window).lightness() < 128


def colour(kind: str, widget: QWidget | None = None) -> str:
    """The colour name (``#rrggbb``) that means ``kind`` (GOOD, WARNING, PROBLEM, NOTE, QUIET) on the palette in use."""
    return (DARK if is_dark(widget) else LIGHT)[kind]


def qcolour(kind: str, widget: QWidget | None = None) -> QColor:
    return QColor(colour(kind, widget))


def span(kind: str, text: str, widget: QWidget | None = None) -> str:
    """``text`` (already HTML) in a span of ``kind``'s colour."""
    return f"<span style='color:{colour(kind, widget)}'>{text}</span>"


# The duration guidance's levels (core.project.duration_guidance) as colours: too short, enough, more than needed.
GUIDANCE = {"short": WARNING, "good": GOOD, "long": NOTE}


def guidance_colour(level: str, widget: QWidget | None = None) -> str:
    """The colour of the duration guidance at ``level`` ("empty" is the palette's quiet mid tone)."""
    return colour(GUIDANCE[level], widget) if level in GUIDANCE else "palette(mid)"
