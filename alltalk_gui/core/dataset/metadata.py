"""coqui/AllTalk dataset metadata: ``metadata_train.csv`` and ``metadata_eval.csv``.

The format is the one coqui-tts's ``coqui`` formatter reads: a header line ``audio_file|text|speaker_name`` and
one clip per line, ``wavs/clip.wav|The spoken text.|speaker``, with ``audio_file`` relative to the dataset
folder. Both the dataset export (writer) and the training data loader (reader) use this module, so a
hand-written dataset folder works exactly like an exported one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from alltalk_gui.core import atomic, safe_paths

HEADER = "audio_file|text|speaker_name"
TRAIN_CSV = "metadata_train.csv"
EVAL_CSV = "metadata_eval.csv"


class MetadataError(ValueError):
    """A metadata CSV is malformed; the message names the file and line."""


@dataclass(frozen=True)
class MetadataRow:
    audio_file: str  # relative to the dataset folder, forward slashes
    text: str
    speaker_name: str


def read_metadata(path: str | os.PathLike[str]) -> list[MetadataRow]:
    """Read a metadata CSV.

    Raises:
        MetadataError: missing file, missing/unknown header, a line without audio_file or text, an audio_file
            that is absolute, climbs out of the dataset folder with ``..`` or is a link to a file outside it.
    """
    path = Path(path)
    if not path.is_file():
        raise MetadataError(f"{path} does not exist.")
    # utf-8-sig: a CSV saved by Notepad or Excel on Windows as "UTF-8 with BOM" starts with one; the header holds
    # no BOM in its first name then.
    lines = path.read_text(encoding="utf-8-sig").splitlines()
    if not lines:
        raise MetadataError(f"{path} is empty; it needs the header line '{HEADER}'.")
    header = [h.strip() for h in lines[0].split("|")]
    if header[:2] != ["audio_file", "text"]:
        raise MetadataError(f"{path}: the first line must be the header '{HEADER}', found '{lines[0]}'.")
    rows: list[MetadataRow] = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        cells = line.split("|")
        if len(cells) < 2 or not cells[0].strip() or not cells[1].strip():
            raise MetadataError(f"{path}, line {number}: expected 'audio_file|text|speaker_name', found '{line}'.")
        speaker = cells[2].strip() if len(cells) > 2 and cells[2].strip() else "speaker"
        try:  # a shared dataset must not point training or preview at files outside it, as written or by a link
            safe_paths.resolved_inside(path.parent, cells[0].strip(), "audio_file", "the dataset folder")
        except safe_paths.UnsafePathError as exc:
            raise MetadataError(f"{path}, line {number}: {exc}") from exc
        rows.append(MetadataRow(cells[0].strip(), cells[1].strip(), speaker))
    return rows


def write_metadata(path: str | os.PathLike[str], rows: list[MetadataRow]) -> None:
    """Write a metadata CSV atomically (UTF-8, ``\\n`` line ends, header first).

    Raises:
        MetadataError: a field contains ``|`` or a line break, which the format cannot hold.
    """
    out = [HEADER]
    for row in rows:
        for value in (row.audio_file, row.text, row.speaker_name):
            if "|" in value or "\n" in value or "\r" in value:
                raise MetadataError(f"Cannot write {value!r}: the metadata format does not allow '|' or line breaks.")
        out.append(f"{row.audio_file}|{row.text}|{row.speaker_name}")
    atomic.write_text(path, "\n".join(out) + "\n")
