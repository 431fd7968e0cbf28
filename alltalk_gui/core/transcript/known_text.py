"""A recording's known text: the exact words, aligned onto the clips Whisper cut, instead of Whisper's words.

Where Whisper is weak (many languages, accents, names) the person often has the script that was read. The clips
keep Whisper's timing (its word timestamps decide where each clip starts and ends); only their text is taken
from the known text. The two word sequences are aligned with :class:`difflib.SequenceMatcher` on normalised
tokens (case and punctuation ignored; characters in languages written without spaces), and each clip takes the
known words from where its first recognised word aligns up to where the next clip's first word aligns.

The known text lives in the project as ``known_text/<source id>.txt``. A ``.txt`` with the same name beside a
recording is copied there when the recording is imported (:mod:`alltalk_gui.core.project.importer`): the user
chose that folder. It is never read later through the source's ``original_path``, which a shared project's
``project.json`` could point at any file on this computer.
"""

from __future__ import annotations

import difflib
import unicodedata
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from alltalk_gui.core import atomic, safe_paths
from alltalk_gui.core.engine_api.languages import is_spaced
from alltalk_gui.core.transcript.segments import Segment


def known_text_file(project: Any, source_id: str) -> Path:
    """Where the known text of recording ``source_id`` is kept (the id checked: it names a file)."""
    return safe_paths.inside(project.known_text_dir, f"{safe_paths.plain_name(source_id, 'source id')}.txt")


def save_known_text(project: Any, source_id: str, text: str) -> Path:
    """Keep ``text`` as the known text of the recording ``source_id`` (an empty text removes it)."""
    path = known_text_file(project, source_id)
    if not text.strip():
        path.unlink(missing_ok=True)
        return path
    path.parent.mkdir(exist_ok=True)
    atomic.write_text(path, text.strip() + "\n")
    return path


def load_known_text(project: Any, source: Any) -> str | None:
    """The known text of ``source`` kept in the project, or None."""
    path = known_text_file(project, source.id)
    if not safe_paths.is_inside(path, project.root):  # a link in a shared project's known_text/ folder
        return None
    try:
        text = path.read_text(encoding="utf-8-sig").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text or None


def tokens(text: str, language: str) -> list[str]:
    """Units of ``text`` to align: words (with their punctuation) where words are spaced, else single letters
    with the punctuation that follows them (``好。`` stays one unit)."""
    if is_spaced(language):
        return text.split()
    out: list[str] = []
    for ch in text:
        if ch.isspace():
            continue
        if out and not _key(ch):  # punctuation joins the letter before it
            out[-1] += ch
        else:
            out.append(ch)
    return out


def align(segments: Sequence[Segment], known: str, language: str) -> list[str]:
    """The text each clip (of one recording, in time order) gets from ``known``.

    A clip without recognised words keeps its own text, unless it is the recording's only clip (an imported
    dataset row): then it takes the whole known text. The first clip with words also takes any known words
    before the first aligned one, the last any after the last.
    """
    known_units = tokens(known, language)
    if len(segments) == 1 and not (segments[0].words_inside() or segments[0].words):
        return [(" " if is_spaced(language) else "").join(known_units)]
    heard: list[str] = []
    first_unit: list[int | None] = []   # per clip: index of its first recognised unit in ``heard``
    for segment in segments:
        words = segment.words_inside() or segment.words
        units = [u for w in words for u in tokens(w.text, language)] if words else []
        first_unit.append(len(heard) if units else None)
        heard += units
    to_known = _map(heard, known_units)
    starts: list[int | None] = [None if f is None else to_known[f] for f in first_unit]
    first = next((i for i, s in enumerate(starts) if s is not None), None)
    if first is not None:
        starts[first] = 0
    joiner = " " if is_spaced(language) else ""
    texts = []
    for i, segment in enumerate(segments):
        if starts[i] is None:
            texts.append(segment.text)
            continue
        following = [s for s in starts[i + 1:] if s is not None]
        end = following[0] if following else len(known_units)
        texts.append(joiner.join(known_units[starts[i]:max(starts[i], end)]))
    return texts


def apply_known_text(segments: Sequence[Segment], known: str, language: str) -> list[Segment]:
    """``segments`` (one recording's, in time order) with their texts replaced by the aligned known text."""
    return [replace(s, text=t) for s, t in zip(segments, align(segments, known, language))]


def realign(clips: Any, source_id: str, known: str, language: str) -> list[Any]:
    """Give the kept clips of one recording in an open :class:`SegmentList` their text from ``known``; each
    changed clip is one saved, undoable edit. Returns the Changes (empty when nothing changed).

    A blank ``known`` changes nothing: it means "no known text" (:func:`save_known_text` forgets it), never "these
    clips say nothing", which would wipe every clip's words of a long recording at once."""
    if not known.strip():
        return []
    mine = [s for s in clips if s.source_id == source_id and not s.deleted]
    return [clips.set_text(s.id, text) for s, text in zip(mine, align(mine, known, language)) if text != s.text]


# -- internals -------------------------------------------------------------------------------------------------
def _key(unit: str) -> str:
    """A unit as compared: NFKC, case-folded, letters and digits only."""
    return "".join(ch for ch in unicodedata.normalize("NFKC", unit).casefold() if ch.isalnum())


def _map(heard: list[str], known: list[str]) -> list[int]:
    """For each heard unit, the index of the known unit it aligns with (monotonic; replaced runs spread evenly,
    a heard unit with nothing against it maps to the next known unit)."""
    matcher = difflib.SequenceMatcher(None, [_key(u) for u in heard], [_key(u) for u in known], autojunk=False)
    out = [0] * len(heard)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for k, i in enumerate(range(i1, i2)):
            if tag == "equal":
                out[i] = j1 + k
            elif tag == "replace":
                out[i] = j1 + (k * (j2 - j1)) // (i2 - i1)
            else:  # "delete": heard but not in the known text
                out[i] = j1
    return out

