"""Hugging Face datasets saved as parquet (what Orpheus-TTS and Parler-TTS users download: ``data/train-*.parquet``).

Each row holds its audio in a column ``audio``, a struct of the file's ``bytes`` and its original ``path`` (the
datasets library's Audio feature), and its words in a text column (``text``, ``normalized_text``,
``transcription``, ``sentence``... see :data:`TEXT_COLUMNS`, normalised text first). A ``speaker`` or ``source``
column names who speaks: a dataset with several speakers is imported one speaker at a time (:func:`speakers`
counts them).

The audio bytes are written into a staging folder the caller gives (inside the project, removed after the import)
and imported from there like any file. A row without bytes whose ``path`` names a file is read from the parquet's
folder, under the same containment rule as a csv row. pyarrow is imported here only, when a parquet is read.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from alltalk_gui.core import safe_paths
from alltalk_gui.core.dataset.byo_rows import DatasetImportError, DatasetRow, audio_in

AUDIO_COLUMNS = ("audio", "audio_file", "speech", "wav")
TEXT_COLUMNS = ("normalized_text", "text_normalized", "normalised_text", "text", "transcription", "transcript",
                "sentence", "raw_text", "text_original", "original_text")
SPEAKER_COLUMNS = ("speaker", "speaker_name", "speaker_id", "source", "spk_id", "client_id")
_BATCH_ROWS = 64  # rows read at a time: a few tens of MB of audio at most
_SIGNATURES = ((b"RIFF", ".wav"), (b"fLaC", ".flac"), (b"OggS", ".ogg"), (b"ID3", ".mp3"), (b"\xff\xfb", ".mp3"),
               (b"\xff\xf3", ".mp3"), (b"\xff\xf2", ".mp3"), (b"FORM", ".aiff"))


@dataclass(frozen=True)
class Columns:
    audio: str
    text: str
    speaker: str | None


def parquet_files(path: Path, root: Path | None = None) -> list[Path]:
    """The parquet file itself, or the parquet files directly in a folder (sorted: train-00000-of-00002 first);
    with ``root``, only those inside it once links are followed (the Hugging Face cache keeps its files as links
    from ``snapshots/<revision>/`` to ``blobs/``: they count when the folder chosen holds both)."""
    if path.is_file():
        return [path]
    return sorted(p for p in path.glob("*.parquet") if p.is_file() and not p.name.startswith(".")
                  and (root is None or safe_paths.is_inside(p, root)))


def columns(files: list[Path]) -> Columns:
    """The audio, text and speaker columns of the dataset (its first file's schema).

    Raises:
        DatasetImportError: pyarrow is missing, the file is no parquet, or it has no audio or no text column.
    """
    pq = _pyarrow_parquet()
    try:
        schema = pq.read_schema(files[0])
    except Exception as exc:  # pyarrow raises ArrowInvalid / OSError for a file that is no parquet
        raise DatasetImportError(f"{files[0].name} cannot be read as parquet ({exc}).") from exc
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
        return Counter({"": sum(_pyarrow_parquet().ParquetFile(f).metadata.num_rows for f in files)})
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
def _pyarrow_parquet() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:  # a broken install: the app depends on pyarrow
        raise DatasetImportError("Reading parquet needs pyarrow, which is missing from this installation: "
                                 "install it with 'pip install pyarrow'.") from exc
    return pq


def _rows(files: list[Path], wanted: list[str]) -> Iterator[tuple[Path, int, dict[str, Any]]]:
    """(file, row number from 1, row) for every row of every file, a batch at a time."""
    pq = _pyarrow_parquet()
    for file in files:
        try:
            reader = pq.ParquetFile(file)
            number = 0
            for batch in reader.iter_batches(batch_size=_BATCH_ROWS, columns=wanted):
                for row in batch.to_pylist():
                    number += 1
                    yield file, number, row
        except DatasetImportError:
            raise
        except Exception as exc:  # a damaged file or a later file with other columns
            raise DatasetImportError(f"{file.name} cannot be read as parquet ({exc}).") from exc


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
    suffix = next((s for magic, s in _SIGNATURES if data.startswith(magic)), None) or \
        (Path(written).suffix.lower() if re.fullmatch(r"\.[A-Za-z0-9]{1,5}", Path(written).suffix) else ".wav")
    target = staging / f"{stem}{suffix}"
    if not stem or target.exists():  # no path, or two rows whose paths share a name
        target = staging / f"{stem or file.stem}-row{number:06d}{suffix}"
    target.write_bytes(data)  # a staging copy, removed after the import: nothing to make atomic
    return target
