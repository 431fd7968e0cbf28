"""Text that is safe to print to a terminal: control characters from file names shown, not obeyed.

File names, transcripts and project names come from users and shared projects. A name holding ``ESC [ 2 J``
clears the screen when printed raw, others can retitle the terminal, hide text, or reverse it with Unicode
direction overrides; a name that is not valid UTF-8 arrives as lone surrogates and made ``print`` crash. The
command line writes everything through :class:`EscapingWriter`, which shows such characters as Python escapes
(``\\x1b``, ``\\u202e``, ``\\udcff``), keeping newlines and tabs, and a carriage return at the start of a write
(the progress lines that redraw themselves).
"""

from __future__ import annotations

import io
from typing import TextIO


def escape(text: str) -> str:
    """``text`` with every non-printable character except newline and tab written as an escape."""
    if text.isprintable():
        return text
    return "".join(ch if ch in "\n\t " or ch.isprintable() else _escaped(ch) for ch in text)


def _escaped(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


class EscapingWriter(io.TextIOBase):
    """A text stream that passes everything written to ``stream`` through :func:`escape`."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream

    def write(self, text: str) -> int:
        redraw = text.startswith("\r")
        self.stream.write(("\r" if redraw else "") + escape(text[1:] if redraw else text))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.stream, "encoding", "utf-8")
