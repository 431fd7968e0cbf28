"""Bring your own transcript: import a folder that already is a dataset, one clip per row, with its text.

Three layouts are recognised (the first found wins, in the folder or up to two levels below it):

* coqui's ``metadata_train.csv`` (+ ``metadata_eval.csv``): header ``audio_file|text|speaker_name``, paths
  relative to the folder (``wavs/x.wav``). AllTalk's fine-tuning output (``finetune/<name>/`` or ``tmp-trn/``)
  is this layout too, with a ``lang.txt`` naming its language.
* LJSpeech's ``metadata.csv``: no header, ``id|text`` or ``id|text|normalised text``, audio in ``wavs/<id>.wav``
  (the normalised text is preferred: numbers are already words).

Every row is checked on its own: a missing or unreadable wav, empty text, text XTTS cannot encode in the
project's language, or a malformed line is reported with its file and line, and the other rows are imported.
A dataset may come from someone else, so a row's audio must lie inside the dataset folder once links are
followed (:func:`alltalk_gui.core.safe_paths.resolved_inside`): an absolute path, ``..``, a Windows drive or
UNC path, or a link to a file elsewhere is refused like any other bad row ("outside the dataset folder"), and
the real file checked is the one imported. The search for the metadata and AllTalk's ``lang.txt`` stay inside
the folder the user chose.
Each good row's wav goes through the normal import (copied, analysed, working copy made) and becomes one
recording with one clip spanning it, carrying the row's text; the clips are added to the project's transcript.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from alltalk_gui.core import atomic, safe_paths
from alltalk_gui.core.dataset.metadata import EVAL_CSV, HEADER, TRAIN_CSV
from alltalk_gui.core.project.importer import import_files

LJSPEECH_CSV = "metadata.csv"
ALLTALK_LANGUAGE_FILE = "lang.txt"
_SEARCH_DEPTH = 2
_PLACE = "the dataset folder"
_LANGUAGE_FILE_BYTES = 64  # lang.txt holds a language code; more is not one


class DatasetImportError(Exception):
    """The folder is no dataset at all (no metadata file found); the message says what was looked for."""


@dataclass(frozen=True)
class DatasetRow:
    """One clip of a dataset folder: its wav, its text, and where it came from (file and line)."""

    audio: Path
    text: str
    where: str


@dataclass
class DatasetImportReport:
    layout: str = ""                                     # "coqui" or "ljspeech"
    folder: Path | None = None                           # where the metadata was found
    language: str | None = None                          # from AllTalk's lang.txt, if any (a known code)
    imported: list[str] = field(default_factory=list)    # clip ids added
    problems: list[str] = field(default_factory=list)    # one sentence per refused row


def find_dataset(folder: str | os.PathLike[str]) -> tuple[str, Path]:
    """The layout (``coqui`` or ``ljspeech``) and the folder holding its metadata, searching ``folder`` and up to
    two levels below it (AllTalk keeps its output in ``finetune/<name>/``).

    Raises:
        DatasetImportError: no metadata_train.csv or metadata.csv found.
    """
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise DatasetImportError(f"{root} is not a folder.")
    level = [root]
    for _depth in range(_SEARCH_DEPTH + 1):
        for candidate in level:
            if (candidate / TRAIN_CSV).is_file() or (candidate / EVAL_CSV).is_file():
                return "coqui", candidate
            if (candidate / LJSPEECH_CSV).is_file():
                return "ljspeech", candidate
        # A linked folder that leads out of the chosen folder is not searched: nothing outside it is read.
        level = sorted(child for parent in level for child in parent.iterdir()
                       if child.is_dir() and not child.name.startswith(".") and safe_paths.is_inside(child, root))
    raise DatasetImportError(f"{root} holds no dataset: expected {TRAIN_CSV} / {EVAL_CSV} (coqui, AllTalk) or "
                             f"{LJSPEECH_CSV} with wavs/ (LJSpeech), in the folder or up to two levels below.")


def read_rows(layout: str, folder: Path) -> tuple[list[DatasetRow], list[str]]:
    """The rows of a dataset folder and a sentence for each line that cannot be read (the rest still count)."""
    if layout == "coqui":
        rows: list[DatasetRow] = []
        problems: list[str] = []
        for name in (TRAIN_CSV, EVAL_CSV):
            if (folder / name).is_file():
                more, bad = _read_coqui(folder / name)
                rows += more
                problems += bad
        return rows, problems
    return _read_ljspeech(folder / LJSPEECH_CSV)


def check_rows(rows: list[DatasetRow], problem: Callable[[str], str | None]) -> tuple[list[DatasetRow], list[str]]:
    """Split rows into usable ones and one sentence per refused row (missing wav, empty text, text ``problem``
    objects to). ``problem`` is a text check such as :meth:`TextChecker.problem`."""
    good: list[DatasetRow] = []
    problems: list[str] = []
    seen: set[Path] = set()
    for row in rows:
        if not row.audio.is_file():
            problems.append(f"{row.where}: the audio file {row.audio.name} does not exist.")
        elif not row.text.strip():
            problems.append(f"{row.where}: the text is empty.")
        elif row.audio.resolve() in seen:
            problems.append(f"{row.where}: {row.audio.name} is listed twice; the first row was kept.")
        elif (reason := problem(row.text)) is not None:
            problems.append(f"{row.where}: {reason}")
        else:
            seen.add(row.audio.resolve())
            good.append(row)
    return good, problems


def import_dataset(project: Any, folder: str | os.PathLike[str], vocab_file: str | os.PathLike[str] | None = None,
                   progress: Callable[[int, int, str], None] | None = None) -> DatasetImportReport:
    """Import the dataset in ``folder`` into ``project`` as recordings with one clip each (see the module text).

    Args:
        vocab_file: the base model's vocab.json, for the exact text check; None checks the language's letters.
        progress: called with (done, total, file name) as the wavs are imported.

    Raises:
        DatasetImportError: the folder holds no dataset.
    """
    from alltalk_gui.core.transcript.segments import Segment, SegmentList, checker_for, new_segment_id

    layout, where = find_dataset(folder)
    language, language_problems = _alltalk_language(where, Path(folder).expanduser())
    report = DatasetImportReport(layout=layout, folder=where, language=language)
    rows, report.problems = read_rows(layout, where)
    report.problems += language_problems
    existing = SegmentList.open(project, vocab_file=vocab_file) if project.segments_file.exists() else None
    # The project's engine judges the clips; an existing transcript keeps its clip length range.
    clip_checker = existing.checker if existing is not None else checker_for(project, vocab_file=vocab_file)
    rows, refused = check_rows(rows, clip_checker.text_checker.problem)
    report.problems += refused
    segments = list(existing) if existing is not None else []
    number = existing.next_number if existing is not None else 1
    new: list[Segment] = []
    for index, row in enumerate(rows):
        if progress:
            progress(index, len(rows), row.audio.name)
        result = import_files(project, [row.audio])
        if result.rejected:
            report.problems.append(f"{row.where}: {result.rejected[0].reason}")
            continue
        source = result.imported[0]
        new.append(Segment(new_segment_id(number), source.id, 0, int(round(source.duration_s * 1000)), row.text))
        number += 1
    project.save()
    if new:
        meta = dict(existing.meta) if existing is not None else {}
        meta.setdefault("imported_datasets", []).append({"folder": str(where), "layout": layout, "clips": len(new)})
        if existing is not None:  # the transcript as it was, like a new transcription keeps it
            atomic.copy_file(project.segments_file, project.root / "segments.json.bak")
        SegmentList.create(project, segments + new, meta=meta, checker=clip_checker)
    report.imported = [s.id for s in new]
    if progress:
        progress(len(rows), len(rows), "")
    return report


# -- internals -------------------------------------------------------------------------------------------------
def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8-sig", errors="replace").splitlines()


def _read_coqui(path: Path) -> tuple[list[DatasetRow], list[str]]:
    lines = _lines(path)
    if not lines or [h.strip() for h in lines[0].split("|")][:2] != ["audio_file", "text"]:
        return [], [f"{path.name}: the first line must be the header '{HEADER}'; the file was skipped."]
    rows, problems = [], []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        cells = line.split("|")
        where = f"{path.name} line {number}"
        if len(cells) < 2 or not cells[0].strip():
            problems.append(f"{where}: expected 'audio_file|text|speaker_name', found '{line[:80]}'.")
            continue
        try:
            audio = safe_paths.resolved_inside(path.parent, cells[0].strip(), "the audio file", _PLACE)
        except safe_paths.UnsafePathError as exc:
            problems.append(f"{where}: {exc}")
            continue
        rows.append(DatasetRow(audio, cells[1].strip(), where))
    return rows, problems


def _read_ljspeech(path: Path) -> tuple[list[DatasetRow], list[str]]:
    rows, problems = [], []
    for number, line in enumerate(_lines(path), start=1):
        if not line.strip():
            continue
        cells = line.split("|")
        where = f"{path.name} line {number}"
        if len(cells) < 2 or not cells[0].strip():
            problems.append(f"{where}: expected 'id|text' or 'id|text|normalised text', found '{line[:80]}'.")
            continue
        name = cells[0].strip()
        file_name = name if name.lower().endswith(".wav") else f"{name}.wav"
        try:  # the id itself first: "C:\\x" or "/abs/x" must not become a name below wavs/
            safe_paths.inside(path.parent, name, "the id", _PLACE)
            audio = safe_paths.resolved_inside(path.parent, f"wavs/{file_name}", "the audio file", _PLACE)
        except safe_paths.UnsafePathError as exc:
            problems.append(f"{where}: {exc}")
            continue
        text = (cells[2] if len(cells) > 2 and cells[2].strip() else cells[1]).strip()
        rows.append(DatasetRow(audio, text, where))
    return rows, problems


def _alltalk_language(folder: Path, chosen: Path) -> tuple[str | None, list[str]]:
    """The language code in AllTalk's ``lang.txt`` beside the metadata or one folder up (never above the folder
    the user chose), and a sentence when the file holds no language this app knows (it is then ignored)."""
    from alltalk_gui.core.engine_api.languages import UnknownLanguage, normalise

    candidates = [folder] + ([folder.parent] if folder.resolve() != chosen.resolve() else [])
    for parent in candidates:
        candidate = parent / ALLTALK_LANGUAGE_FILE
        if not candidate.is_file() or not safe_paths.is_inside(candidate, chosen):
            continue
        try:
            with open(candidate, "rb") as f:
                text = f.read(_LANGUAGE_FILE_BYTES + 1).decode("utf-8", errors="replace").strip()
        except OSError as exc:
            return None, [f"{ALLTALK_LANGUAGE_FILE}: cannot be read ({exc.strerror or exc}); it was ignored."]
        try:
            if len(text) > _LANGUAGE_FILE_BYTES:
                raise UnknownLanguage(text)
            return normalise(text.lower()), []
        except UnknownLanguage:
            shown = text[:20].encode("unicode_escape").decode("ascii")
            return None, [f"{candidate}: '{shown}' is not a language code; it was ignored."]
    return None, []
