"""Bring your own transcript: import a dataset the user already has, one clip per row, with its text.

One entry point, :func:`import_dataset`: the layout is detected (:func:`find_dataset`), its rows read by the
layout's reader, then every layout goes through the same checks and the same import. Layouts, as our users bring
them (the first found wins, in the folder or up to three levels below it; the last one anywhere below it):

* coqui / AllTalk: ``metadata_train.csv`` (+ ``metadata_eval.csv``), header ``audio_file|text|speaker_name``.
  AllTalk's fine-tuning output (``finetune/<name>/``) is this layout, with a ``lang.txt`` naming its language.
* F5-TTS: ``metadata.csv`` whose first line is a header (``audio_file|text``), paths relative or absolute.
* LJSpeech: ``metadata.csv`` without a header, ``id|text|normalised text``, audio in ``wavs/<id>.wav``.
* Hugging Face parquet (Orpheus-TTS, Parler-TTS): ``*.parquet`` with an ``audio`` column (bytes + path) and a text
  column, or the ``.arrow`` files of ``load_dataset``'s cache and ``save_to_disk``; the user may pick one file or
  the folder holding them.
* A folder of audio files with a text file beside each (``clip.wav`` + ``clip.txt`` / ``clip.lab`` /
  LibriTTS's ``clip.normalized.txt``), in any sub-folders.

The readers live in :mod:`byo_csv`, :mod:`byo_parquet` and :mod:`byo_sidecar`. A dataset that names several
speakers (coqui's third column, a parquet's ``speaker``/``source`` column) is imported one speaker at a time: the
user picks one (:func:`survey` counts the clips of each).

Every row is checked on its own: missing or undecodable audio, empty text, a row listed twice, text the project's
engine cannot read in the project's language, or a malformed line is reported with its file and line, and the
other rows are imported. A dataset may come from someone else, so a row's audio must lie inside the dataset folder
once links are followed (:func:`alltalk_gui.core.dataset.byo_rows.audio_in`): ``..``, a Windows drive or UNC
path, an absolute path elsewhere or a link to a file elsewhere is refused like any other bad row ("outside the
dataset folder"). The search for the dataset and AllTalk's ``lang.txt`` stay inside the folder the user chose.
Each good row's audio goes through the normal import (copied, analysed, working copy made; :func:`import_files`)
and becomes one recording with one clip spanning it, carrying the row's text; the clips are added to the
project's transcript. A parquet's audio is first written to a hidden staging folder inside the project, removed
afterwards.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from alltalk_gui.core import atomic, safe_paths
from alltalk_gui.core.dataset import byo_csv, byo_parquet, byo_sidecar
from alltalk_gui.core.dataset.byo_layouts import LAYOUT_NAMES, SUPPORTED_LAYOUTS
from alltalk_gui.core.dataset.byo_rows import DatasetImportError, DatasetRow
from alltalk_gui.core.dataset.metadata import EVAL_CSV, TRAIN_CSV
from alltalk_gui.core.project.importer import import_files

__all__ = ["DatasetImportError", "DatasetImportReport", "DatasetRow", "DatasetSurvey", "LAYOUT_NAMES",
           "SUPPORTED_LAYOUTS", "SpeakerChoiceError", "check_rows", "find_dataset", "import_dataset", "read_rows",
           "survey"]

LJSPEECH_CSV = "metadata.csv"
ALLTALK_LANGUAGE_FILE = "lang.txt"
STAGING_PREFIX = ".dataset-import-"  # a hidden folder inside the project holding a parquet's audio while imported
_SEARCH_DEPTH = 3  # the Hugging Face cache: datasets--owner--name/snapshots/<revision>/data/
_LANGUAGE_FILE_BYTES = 64  # lang.txt holds a language code; more is not one



class SpeakerChoiceError(DatasetImportError):
    """The dataset names several speakers and none (or one it does not name) was chosen; ``speakers`` counts
    each one's clips."""

    def __init__(self, message: str, speakers: Counter[str]) -> None:
        super().__init__(message)
        self.speakers = speakers


@dataclass
class DatasetImportReport:
    layout: str = ""                                     # a key of LAYOUT_NAMES
    folder: Path | None = None                           # where the dataset was found (a parquet: file or folder)
    language: str | None = None                          # from AllTalk's lang.txt, if any (a known code)
    speaker: str | None = None                           # the speaker imported, when the dataset names several
    imported: list[str] = field(default_factory=list)    # clip ids added
    problems: list[str] = field(default_factory=list)    # one sentence per refused row

    @property
    def layout_name(self) -> str:
        return LAYOUT_NAMES.get(self.layout, self.layout)


@dataclass
class DatasetSurvey:
    """What a dataset holds, before importing it: its layout, where, and how many clips each speaker has (one
    entry, named "", when the dataset names no speakers)."""

    layout: str
    folder: Path
    speakers: Counter[str]

    @property
    def clips(self) -> int:
        return sum(self.speakers.values())

    @property
    def several_speakers(self) -> bool:
        return len(self.speakers) > 1

    @property
    def layout_name(self) -> str:
        return LAYOUT_NAMES.get(self.layout, self.layout)


def find_dataset(folder: str | os.PathLike[str]) -> tuple[str, Path]:
    """The layout (a key of :data:`LAYOUT_NAMES`) and where it is: the folder holding its metadata or parquet
    files (searched in ``folder`` and up to three levels below it: AllTalk keeps its output in
    ``finetune/<name>/``, a Hugging Face download its files in ``data/``, its cache in
    ``snapshots/<revision>/data/``), a parquet file given directly, or
    ``folder`` itself for audio files with their text beside them.

    Raises:
        DatasetImportError: none of the layouts found.
    """
    root = Path(folder).expanduser()
    if root.is_file() and root.suffix.lower() in byo_parquet.TABLE_SUFFIXES:
        return "parquet", root
    if not root.exists():
        raise DatasetImportError(f"There is no folder or file {root}: check the path.")
    if not root.is_dir():
        raise DatasetImportError(f"{root} is not a folder, a .parquet file or an .arrow file.")
    level = [root]
    links_out: list[Path] = []  # folders whose parquet files are all links leading out of the chosen folder
    for _depth in range(_SEARCH_DEPTH + 1):
        for candidate in level:
            if (candidate / TRAIN_CSV).is_file() or (candidate / EVAL_CSV).is_file():
                return "coqui", candidate
            if (candidate / LJSPEECH_CSV).is_file():
                return ("f5" if byo_csv.has_header(candidate / LJSPEECH_CSV) else "ljspeech"), candidate
            if byo_parquet.table_files(candidate, root):
                return "parquet", candidate
            if byo_parquet.table_files(candidate):
                links_out.append(candidate)
        # A linked folder that leads out of the chosen folder is not searched: nothing outside it is read.
        level = sorted(child for parent in level for child in parent.iterdir()
                       if child.is_dir() and not child.name.startswith(".") and safe_paths.is_inside(child, root))
    if byo_sidecar.has_texts(root):
        return "sidecar", root
    if links_out:
        raise DatasetImportError(f"The data files in {links_out[0]} are links to files outside {root} (the "
                                 "Hugging Face cache keeps them in blobs/ beside snapshots/). Choose the folder "
                                 "that holds both (datasets--owner--name), or copy the files into a folder of "
                                 "their own: only files inside the chosen folder are read.")
    raise DatasetImportError(f"{root} holds no dataset. Looked for: {TRAIN_CSV} / {EVAL_CSV} (AllTalk, coqui), "
                             f"{LJSPEECH_CSV} (with an audio_file|text header, or LJSpeech's with wavs/), "
                             ".parquet or .arrow files (Hugging Face), in the folder or up to three levels below; "
                             "or audio files with a .txt, .lab or .normalized.txt of the same name beside them.")


def survey(folder: str | os.PathLike[str]) -> DatasetSurvey:
    """The dataset's layout and its clips per speaker, without importing anything (reads the metadata only; a
    parquet's speaker column only).

    Raises:
        DatasetImportError: no dataset found, or a parquet that cannot be read.
    """
    layout, where = find_dataset(folder)
    if layout == "parquet":
        files = byo_parquet.table_files(where, Path(folder).expanduser())
        return DatasetSurvey(layout, where, byo_parquet.speakers(files))
    rows, _problems = read_rows(layout, where)
    return DatasetSurvey(layout, where, Counter(row.speaker or "" for row in rows))


def read_rows(layout: str, folder: Path, staging: Path | None = None, speaker: str | None = None,
              root: Path | None = None) -> tuple[list[DatasetRow], list[str]]:
    """The rows of a dataset and a sentence for each line that cannot be read (the rest still count). A parquet's
    audio is written into ``staging`` (only ``speaker``'s rows when given), from its files inside ``root`` (the
    folder the user chose)."""
    if layout == "coqui":
        rows: list[DatasetRow] = []
        problems: list[str] = []
        for name in (TRAIN_CSV, EVAL_CSV):
            if (folder / name).is_file():
                more, bad = byo_csv.read_coqui(folder / name)
                rows += more
                problems += bad
        return rows, problems
    if layout == "f5":
        return byo_csv.read_with_header(folder / LJSPEECH_CSV)
    if layout == "ljspeech":
        return byo_csv.read_ljspeech(folder / LJSPEECH_CSV)
    if layout == "sidecar":
        return byo_sidecar.read_sidecar(folder)
    if layout == "parquet":
        if staging is None:
            raise ValueError("a parquet dataset needs a staging folder for its audio")
        return byo_parquet.read_parquet(byo_parquet.table_files(folder, root), staging, speaker)
    raise ValueError(f"unknown dataset layout {layout!r}")


def check_rows(rows: list[DatasetRow], problem: Callable[[str], str | None]) -> tuple[list[DatasetRow], list[str]]:
    """Split rows into usable ones and one sentence per refused row (missing audio, empty text, a file listed
    twice, text ``problem`` objects to). ``problem`` is a text check such as :meth:`TextChecker.problem`."""
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
                   progress: Callable[[int, int, str], None] | None = None,
                   speaker: str | None = None) -> DatasetImportReport:
    """Import the dataset in ``folder`` (a folder, or a .parquet or .arrow file) into ``project`` as recordings with
    one clip each (see the module text).

    Args:
        vocab_file: the base model's vocab.json, for the exact text check; None checks the language's letters.
        progress: called with (done, total, file name) as the audio files are imported.
        speaker: the speaker to import from a dataset that names several (see :func:`survey`); a dataset of one
            speaker needs none.

    Raises:
        DatasetImportError: no dataset found, several speakers and none (or an unknown one) chosen, a parquet that
            cannot be read. Nothing was imported then.
    """
    from alltalk_gui.core.transcript.segments import Segment, SegmentList, checker_for, new_segment_id

    project.check_writable()
    layout, where = find_dataset(folder)
    chosen = Path(folder).expanduser()
    language, language_problems = _alltalk_language(where, chosen) if where.is_dir() else (None, [])
    report = DatasetImportReport(layout=layout, folder=where, language=language)
    _remove_staging(project)  # what a killed import left
    staging = project.root / f"{STAGING_PREFIX}{uuid.uuid4().hex[:8]}"
    try:
        if layout == "parquet":  # choose before reading: only the chosen speaker's audio is written out
            report.speaker = _chosen_speaker(byo_parquet.speakers(byo_parquet.table_files(where, chosen)), speaker)
            try:
                staging.mkdir()
                rows, report.problems = read_rows(layout, where, staging, report.speaker, root=chosen)
            except OSError as exc:  # a full disk while the audio is written out: nothing was imported yet
                raise DatasetImportError(f"The parquet's audio could not be written into the project "
                                         f"({exc.strerror or exc}); nothing was imported.") from exc
        else:
            rows, report.problems = read_rows(layout, where)
            report.speaker = _chosen_speaker(Counter(row.speaker or "" for row in rows), speaker)
            if report.speaker is not None:
                rows = [row for row in rows if (row.speaker or "") == report.speaker]
        report.problems += language_problems
        existing = SegmentList.open(project, vocab_file=vocab_file) if project.segments_file.exists() else None
        # The project's engine judges the clips; an existing transcript keeps its clip length range.
        clip_checker = existing.checker if existing is not None else checker_for(project, vocab_file=vocab_file)
        rows, refused = check_rows(rows, clip_checker.text_checker.problem)
        report.problems += refused
        result = import_files(project, [row.audio for row in rows], progress=progress)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    imported = {Path(source.original_path).absolute(): source for source in result.imported}
    rejected = {Path(rejection.path).absolute(): rejection.reason for rejection in result.rejected}
    segments = list(existing) if existing is not None else []
    number = existing.next_number if existing is not None else 1
    new: list[Segment] = []
    for row in rows:
        source = imported.get(row.audio.absolute())
        if source is None:
            reason = rejected.get(row.audio.absolute(), "it could not be imported.")
            report.problems.append(f"{row.where}: {reason}")
            continue
        if row.origin:  # a staged copy: say where the recording really came from
            source.original_path = row.origin
        new.append(Segment(new_segment_id(number), source.id, 0, int(round(source.duration_s * 1000)), row.text))
        number += 1
    project.save()
    if new:
        meta = dict(existing.meta) if existing is not None else {}
        record = {"folder": str(where), "layout": layout, "clips": len(new)}
        if report.speaker is not None:
            record["speaker"] = report.speaker
        meta.setdefault("imported_datasets", []).append(record)
        if existing is not None:  # the transcript as it was, like a new transcription keeps it
            atomic.copy_file(project.segments_file, project.root / "segments.json.bak")
        SegmentList.create(project, segments + new, meta=meta, checker=clip_checker)
    report.imported = [s.id for s in new]
    report.problems.sort(key=_in_file_order)
    return report


# -- internals -------------------------------------------------------------------------------------------------
def speaker_list(speakers: Counter[str]) -> str:
    """``Anna (120 clips), Ben (80 clips)``: the speakers, most clips first."""
    return ", ".join(f"{name or '(no speaker named)'} ({count} clip{'s' if count != 1 else ''})"
                     for name, count in speakers.most_common())


def _chosen_speaker(speakers: Counter[str], speaker: str | None) -> str | None:
    """The speaker whose rows are imported (None: all rows, the dataset names at most one speaker).

    Raises:
        SpeakerChoiceError: several speakers and none chosen, or a speaker the dataset does not name.
    """
    if speaker is not None and speaker not in speakers:
        raise SpeakerChoiceError(f"The dataset has no speaker '{speaker}'. Its speakers: {speaker_list(speakers)}.",
                                 speakers)
    if len(speakers) <= 1:
        return None
    if speaker is None:
        raise SpeakerChoiceError(f"The dataset holds {len(speakers)} speakers; a voice is one speaker, so choose "
                                 f"one: {speaker_list(speakers)}.", speakers)
    return speaker


def _in_file_order(problem: str) -> tuple[str, int, str]:
    """Sort key: a problem's file, then its line or row number as a number (line 10 after line 9)."""
    found = re.match(r"(.*?) (?:line|row) (\d+):", problem)
    return (found.group(1), int(found.group(2)), "") if found else (problem, 0, problem)


def _remove_staging(project: Any) -> None:
    for leftover in project.root.glob(f"{STAGING_PREFIX}*"):
        shutil.rmtree(leftover, ignore_errors=True)


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
