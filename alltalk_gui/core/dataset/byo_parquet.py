"""Hugging Face datasets as parquet (what Orpheus-TTS and Parler-TTS users download: ``data/train-*.parquet``) or
as arrow files (``load_dataset``'s own cache, ``<name>-train.arrow``; ``save_to_disk``'s ``data-00000-of-00001.arrow``).

Each row holds its audio in a column ``audio``, a struct of the file's ``bytes`` and its original ``path`` (the
datasets library's Audio feature), and its words in a text column (``text``, ``normalized_text``,
``transcription``, ``sentence``... see :data:`TEXT_COLUMNS`, normalised text first). A ``speaker`` or ``source``
column names who speaks: a dataset with several speakers is imported one speaker at a time (:func:`speakers`
counts them).

The audio bytes are written into a staging folder the caller gives (inside the project, removed after the import)
and imported from there like any file. A row without bytes whose ``path`` names a file is read from the parquet's
folder, under the same containment rule as a csv row. pyarrow is imported here only, when such a file is read.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from alltalk_gui.core import safe_paths
from alltalk_gui.core.portability.portable_names import portable_name
from alltalk_gui.core.dataset.byo_rows import DatasetImportError, DatasetRow, audio_in

AUDIO_COLUMNS = ("audio", "audio_file", "speech", "wav")
TEXT_COLUMNS = ("normalized_text", "text_normalized", "normalised_text", "text", "transcription", "transcript",
                "sentence", "raw_text", "text_original", "original_text")
SPEAKER_COLUMNS = ("speaker", "speaker_name", "speaker_id", "source", "spk_id", "client_id")
TABLE_SUFFIXES = (".parquet", ".arrow")
_BATCH_ROWS = 64  # rows read at a time: a few tens of MB of audio at most
_DERIVED_ARROW = "cache-"  # datasets' .map()/.filter() results beside the dataset's own arrow files: not the data
_SIGNATURES = ((b"RIFF", ".wav"), (b"fLaC", ".flac"), (b"OggS", ".ogg"), (b"ID3", ".mp3"), (b"\xff\xfb", ".mp3"),
               (b"\xff\xf3", ".mp3"), (b"\xff\xf2", ".mp3"), (b"FORM", ".aiff"))


@dataclass(frozen=True)
class Columns:
    audio: str
    text: str
    speaker: str | None


def table_files(path: Path, root: Path | None = None) -> list[Path]:
    """The file itself, or the parquet files directly in a folder (sorted: train-00000-of-00002 first), else its
    arrow files (``cache-*.arrow``, derived tables, left out); with ``root``, only those inside it once links are
    followed (the Hugging Face hub cache keeps its files as links from ``snapshots/<revision>/`` to ``blobs/``: they
    count when the folder chosen holds both)."""
    if path.is_file():
        return [path]
    for suffix in TABLE_SUFFIXES:
        found = sorted(p for p in path.glob(f"*{suffix}")
                       if p.is_file() and not p.name.startswith((".", _DERIVED_ARROW))
                       and (root is None or safe_paths.is_inside(p, root)))
        if found:
            return found
    return []


def columns(files: list[Path]) -> Columns:
    """The audio, text and speaker columns of the dataset (its first file's schema).

    Raises:
        DatasetImportError: pyarrow is missing, the file is no parquet, or it has no audio or no text column.
    """
    try:
        schema = _schema(files[0])
    except DatasetImportError:
        raise
    except Exception as exc:  # pyarrow raises ArrowInvalid / OSError for a file that is no parquet or arrow
        raise DatasetImportError(f"{files[0].name} cannot be read as {_kind(files[0])} ({exc}).") from exc
    names = list(schema.names)
    lower = {n.lower(): n for n in names}

    def is_audio(name: str) -> bool:
        kind = schema.field(name).type
        return hasattr(kind, "get_field_index") and kind.get_field_index("bytes") >= 0

    audio = next((lower[n] for n in AUDIO_COLUMNS if n in lower and is_audio(lower[n])), None) or \
        next((n for n in names if is_audio(n)), None)
    text = next((lower[n] for n in TEXT_COLUMNS if n in lower), None)
    speaker = next((lower[n] for n in SPEAKER_COLUMNS if n in lower), None)
    shown = ", ".join(names)
    if audio is None:
        raise DatasetImportError(f"{files[0].name} has no audio column (a column such as 'audio' holding each "
                                 f"clip's bytes and path); its columns are: {shown}.")
    if text is None:
        raise DatasetImportError(f"{files[0].name} has no text column (expected one of: {', '.join(TEXT_COLUMNS)}); "
                                 f"its columns are: {shown}.")
    return Columns(audio, text, speaker)


def speakers(files: list[Path]) -> Counter[str]:
    """How many rows each speaker has (one empty name when the dataset names no speakers); reads that column only."""
    found = columns(files)
    if found.speaker is None:
        return Counter({"": sum(1 for _row in _rows(files, [found.text]))})
    counts: Counter[str] = Counter()
    for _file, _number, row in _rows(files, [found.speaker]):
        counts[_speaker(row[found.speaker])] += 1
    return counts


def read_parquet(files: list[Path], staging: Path, speaker: str | None) -> tuple[list[DatasetRow], list[str]]:
    """The rows of ``speaker`` (all rows when None), their audio written into ``staging``."""
    found = columns(files)
    wanted = [found.audio, found.text] + ([found.speaker] if found.speaker else [])
    rows: list[DatasetRow] = []
    problems: list[str] = []
    for file, number, row in _rows(files, wanted):
        who = _speaker(row.get(found.speaker)) if found.speaker else None
        if speaker is not None and who != speaker:
            continue
        where = f"{file.name} row {number}"
        text = " ".join(str(row[found.text] or "").split())
        try:
            audio = _audio_file(row[found.audio], file, number, staging)
        except (safe_paths.UnsafePathError, ValueError) as exc:
            problems.append(f"{where}: {exc}")
            continue
        rows.append(DatasetRow(audio, text, where, who, origin=str(file) if audio.parent == staging else ""))
    return rows, problems


# -- internals -------------------------------------------------------------------------------------------------
def _pyarrow() -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet  # noqa: F401  (pa.parquet)
    except ImportError as exc:  # a broken install: the app depends on pyarrow
        raise DatasetImportError("Reading parquet or arrow files needs pyarrow, which is missing from this "
                                 "installation: install it with 'pip install pyarrow'.") from exc
    return pa


def _kind(file: Path) -> str:
    return "arrow" if file.suffix.lower() == ".arrow" else "parquet"


def _schema(file: Path) -> Any:
    pa = _pyarrow()
    if _kind(file) == "parquet":
        return pa.parquet.read_schema(file)
    return _open_arrow(file).schema


def _open_arrow(file: Path) -> Any:
    """An arrow file's reader: the stream format the datasets library writes, else the random-access one."""
    pa = _pyarrow()
    try:
        return pa.ipc.open_stream(pa.memory_map(str(file)))
    except pa.ArrowInvalid:
        return pa.ipc.open_file(pa.memory_map(str(file)))


def _batches(file: Path, wanted: list[str]) -> Iterator[Any]:
    """The ``wanted`` columns of a file, at most :data:`_BATCH_ROWS` rows at a time."""
    if _kind(file) == "parquet":
        yield from _pyarrow().parquet.ParquetFile(file).iter_batches(batch_size=_BATCH_ROWS, columns=wanted)
        return
    reader = _open_arrow(file)
    batches = reader if hasattr(reader, "read_next_batch") else \
        (reader.get_batch(i) for i in range(reader.num_record_batches))
    for batch in batches:  # memory-mapped: a slice costs nothing until its rows are read
        batch = batch.select(wanted)
        for start in range(0, batch.num_rows, _BATCH_ROWS):
            yield batch.slice(start, _BATCH_ROWS)


def _rows(files: list[Path], wanted: list[str]) -> Iterator[tuple[Path, int, dict[str, Any]]]:
    """(file, row number from 1, row) for every row of every file, a batch at a time."""
    for file in files:
        try:
            number = 0
            for batch in _batches(file, wanted):
                for row in batch.to_pylist():
                    number += 1
                    yield file, number, row
        except DatasetImportError:
            raise
        except Exception as exc:  # a damaged file or a later file with other columns
            raise DatasetImportError(f"{file.name} cannot be read as {_kind(file)} ({exc}).") from exc


def _speaker(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _audio_file(cell: Any, file: Path, number: int, staging: Path) -> Path:
    """The file holding a row's audio: its bytes written into ``staging``, or the file its path names.

    Raises:
        ValueError: the row holds no audio.
        safe_paths.UnsafePathError: a path without bytes that leads outside the parquet's folder.
    """
    data = cell.get("bytes") if isinstance(cell, dict) else None
    written = (cell.get("path") or "") if isinstance(cell, dict) else ""
    if not data:
        if written:
            return audio_in(file.parent, written)
        raise ValueError("the row holds no audio (its audio cell is empty).")
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(written.replace("\\", "/")).stem).strip("._")[:80]
    stem = portable_name(stem, fallback="")  # "con" -> "con_": a device name on Windows
    suffix = next((s for magic, s in _SIGNATURES if data.startswith(magic)), None) or \
        (Path(written).suffix.lower() if re.fullmatch(r"\.[A-Za-z0-9]{1,5}", Path(written).suffix) else ".wav")
    target = staging / f"{stem}{suffix}"
    if not stem or target.exists():  # no path, or two rows whose paths share a name
        target = staging / f"{stem or file.stem}-row{number:06d}{suffix}"
    target.write_bytes(data)  # a staging copy, removed after the import: nothing to make atomic
    return target
