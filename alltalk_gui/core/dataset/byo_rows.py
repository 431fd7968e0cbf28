"""What every bring-your-own dataset layout reads into: rows (a clip's audio and its text), and the helpers the
layout readers share (text files read line by line as UTF-8, a row's audio path kept inside the dataset folder).

A dataset may come from someone else, so a path written in it must lead to a file inside the dataset folder once
links are followed (:mod:`alltalk_gui.core.safe_paths`); a path written relative to the folder is the usual case,
an absolute one (F5-TTS's csv allows it) is accepted only when it lies inside the folder too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from alltalk_gui.core import safe_paths

PLACE = "the dataset folder"
MAX_TEXT_FILE_BYTES = 64 * 1024  # a clip's text beside it: more is no clip's text (a book, a log)


class DatasetImportError(Exception):
    """The folder or file is no dataset this app reads, or one it cannot import as asked (several speakers and
    none chosen); the message says what was looked for or what to choose."""


@dataclass(frozen=True)
class DatasetRow:
    """One clip of a dataset: its audio file, its text, where it came from (file and line), its speaker when the
    layout names one, and the file the recording is said to come from when ``audio`` is only a staged copy."""

    audio: Path
    text: str
    where: str
    speaker: str | None = None
    origin: str = ""


def text_lines(path: Path) -> tuple[list[tuple[int, str]], list[str]]:
    """The lines of a text file with their numbers, and a sentence for each line that is not UTF-8.

    UTF-8 with or without a byte-order mark, and UTF-16 with one (what Windows editors call "Unicode"), with any
    line ending. A line in another encoding (a csv saved by an old Windows program as cp1252) is reported, not
    guessed at: a wrong guess would import wrong text without a word.
    """
    data = path.read_bytes()
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        try:
            return list(enumerate(data.decode("utf-16").splitlines(), start=1)), []
        except UnicodeDecodeError as exc:
            return [], [f"{path.name}: is not readable UTF-16 text ({exc.reason}); save it as UTF-8."]
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    lines: list[tuple[int, str]] = []
    problems: list[str] = []
    for number, raw in enumerate(data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n"), start=1):
        try:
            lines.append((number, raw.decode("utf-8")))
        except UnicodeDecodeError as exc:
            problems.append(f"{path.name} line {number}: is not UTF-8 text (byte 0x{raw[exc.start]:02x}); save the "
                            "file as UTF-8.")
    if lines and lines[-1][1] == "":
        lines.pop()
    return lines, problems


def read_clip_text(path: Path) -> str:
    """A clip's text file (``clip.txt``, ``clip.lab``): UTF-8, its lines joined by spaces.

    Raises:
        ValueError: the file is too large for one clip's text or not UTF-8 (the message says which).
    """
    size = path.stat().st_size
    if size > MAX_TEXT_FILE_BYTES:
        raise ValueError(f"{path.name} is {size // 1024} KB, too long for one clip's text.")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path.name} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x}); save it as UTF-8.") \
            from exc
    return " ".join(text.split())


def audio_in(folder: Path, written: str) -> Path:
    """The real file a row's audio path names, relative to ``folder`` (``wavs/a.wav``, ``wavs\\a.wav`` written on
    Windows) or absolute; refused unless it lies inside ``folder`` once links are followed.

    Raises:
        safe_paths.UnsafePathError: the path leads outside ``folder`` (the message says so).
    """
    native = Path(written)
    if native.is_absolute():
        if not safe_paths.is_inside(native, folder):
            raise safe_paths.UnsafePathError(
                f"the audio file {written!r} points outside {PLACE} ({folder}); only files inside it are used. "
                "Copy the file in to use it.")
        return safe_paths.check_resolved(native, folder, "the audio file", PLACE, written=written)
    return safe_paths.resolved_inside(folder, written, "the audio file", PLACE)


def cells(line: str) -> list[str]:
    """The ``|``-separated cells of a csv line, stripped; a cell written in double quotes (as Python's csv module
    and spreadsheets write a cell holding a quote) loses them, and its doubled quotes become one."""
    out = []
    for cell in line.split("|"):
        cell = cell.strip()
        if len(cell) >= 2 and cell[0] == cell[-1] == '"':
            cell = cell[1:-1].replace('""', '"')
        out.append(cell)
    return out
