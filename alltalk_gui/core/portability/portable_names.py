"""File and folder names made from what people type or say, usable on Windows as on Linux and macOS.

A project folder is named after the voice, an export folder after the voice's name, a source after the recording
it copies, a reference clip after its speaker. Windows refuses in a name the characters ``< > : " / \\ | ? *`` and
control characters, drops dots and spaces at its end (``"voice."`` and ``"voice"`` are one folder), and reserves
device names in every folder, with any extension: ``CON``, ``PRN``, ``AUX``, ``NUL``, ``COM0``-``COM9``,
``LPT0``-``LPT9`` (and the superscript ¹²³ forms), ``CONIN$``, ``CONOUT$`` (``nul.wav`` opens the null device;
``con.json`` the console). Its disks ignore case, so ``Anna.wav`` and ``anna.wav`` are one file: two names made
in one folder must differ by more than case, or the second overwrites the first. A project made on Linux is copied
to Windows too, so the rule holds on every system. This module is the one home of that rule.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Iterable

_DIGITS = "0123456789\u00b9\u00b2\u00b3"
WINDOWS_DEVICES = frozenset({"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$",
                             *(f"COM{d}" for d in _DIGITS), *(f"LPT{d}" for d in _DIGITS)})
REFUSED = '<>:"/\\|?*'  # besides the control characters 0-31
_REFUSED_RE = re.compile(r'[<>:"/\\|?*\x00-\x1f]')
MAX_NAME = 255  # characters in one name (NTFS, ext4 in bytes)


def is_device_name(name: str) -> bool:
    """Whether Windows takes ``name`` for a device: a reserved name alone or before an extension (``nul.wav``),
    in any case, spaces before the dot included (``"CON .txt"``)."""
    return name.split(".")[0].rstrip(" ").upper() in WINDOWS_DEVICES


def windows_problem(name: str) -> str | None:
    """Why Windows would refuse or change ``name`` as a file or folder name, in words; None when it takes it."""
    if not name or name in (".", ".."):
        return "it is empty" if not name else f"'{name}' is not a name"
    bad = sorted(set(_REFUSED_RE.findall(name)))
    if bad:
        shown = " ".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in bad)
        return f"Windows does not allow {shown} in a name"
    if name[-1] in ". ":
        return "Windows drops a dot or space at the end of a name"
    if is_device_name(name):
        return f"{name.split('.')[0].rstrip(' ')} is a device name on Windows"
    if len(name) > MAX_NAME:
        return f"it is longer than {MAX_NAME} characters"
    return None


def portable_name(text: str, fallback: str = "untitled", *, max_length: int = 100) -> str:
    """``text`` as a name every system takes, changed no more than needed: what Windows refuses becomes ``_``,
    spaces and dots go from the ends, a device name gets ``_`` after it (``CON`` -> ``CON_``, ``nul.wav`` ->
    ``nul_.wav``), at most ``max_length`` characters (an extension kept), ``fallback`` when nothing is left.
    Letters of every language stay (composed, NFC, as Windows and Linux store what people type)."""
    name = _REFUSED_RE.sub("_", unicodedata.normalize("NFC", text)).strip(" .")
    if len(name) > max_length:
        stem, dot, suffix = name.rpartition(".")
        keep = dot + suffix if stem and 0 < len(suffix) <= 10 else ""
        name = (name[:max_length - len(keep)].rstrip(" .") + keep) if keep else name[:max_length].rstrip(" .")
    if not name.strip("._ "):
        name = fallback
    if is_device_name(name):
        stem, dot, rest = name.partition(".")
        name = f"{stem.rstrip(' ')}_{dot}{rest}"
    return name


def unique_name(name: str, taken: Iterable[str], *, separator: str = "-") -> str:
    """``name``, or ``stem-2.ext``, ``stem-3.ext``... until it differs from every name in ``taken`` by more than
    case (Windows' and macOS' disks ignore case)."""
    used = {t.casefold() for t in taken}
    if name.casefold() not in used:
        return name
    stem, dot, suffix = name.rpartition(".")
    if not stem:  # no extension (or a leading dot only)
        stem, dot, suffix = name, "", ""
    n = 2
    while f"{stem}{separator}{n}{dot}{suffix}".casefold() in used:
        n += 1
    return f"{stem}{separator}{n}{dot}{suffix}"
