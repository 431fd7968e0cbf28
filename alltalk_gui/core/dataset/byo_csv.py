"""The ``|``-separated metadata files of coqui/AllTalk, LJSpeech and F5-TTS datasets, read into rows.

* coqui's ``metadata_train.csv`` / ``metadata_eval.csv``: header ``audio_file|text|speaker_name``, paths relative
  to the folder (``wavs/x.wav``). AllTalk's fine-tuning output is this layout.
* F5-TTS's ``metadata.csv`` (what its ``prepare_csv_wavs.py`` reads): a header line (``audio_file|text``) and then
  ``path|text``, the path relative to the csv's folder or absolute.
* LJSpeech's ``metadata.csv``: no header, ``id|text`` or ``id|text|normalised text`` (the normalised text is
  preferred: numbers are already words), audio in ``wavs/<id>.wav``. A first cell written as a path
  (``wavs/x.wav``) is read as one, relative to the csv's folder.

The two ``metadata.csv`` are told apart by the first line alone (:func:`has_header`): F5's names its columns,
LJSpeech's is already a clip.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from alltalk_gui.core import safe_paths
from alltalk_gui.core.dataset.byo_rows import PLACE, DatasetRow, audio_in, cells, text_lines
from alltalk_gui.core.dataset.metadata import HEADER

# The first cell of a header line (what F5-TTS, coqui and common scripts call the audio column), and the second.
AUDIO_HEADERS = frozenset({"audio_file", "audio", "audio_path", "audio_filepath", "path", "file", "file_name",
                           "filename", "wav", "wav_path", "wav_file", "wav_filename"})
TEXT_HEADERS = frozenset({"text", "transcription", "transcript", "sentence", "normalized_text", "normalised_text"})


def has_header(path: Path) -> bool:
    """Whether the csv's first line names its columns (F5-TTS) instead of being a clip (LJSpeech): its first
    cell is a usual name of the audio column or its second one of the text column, and no clip of that name
    exists (an LJSpeech clip ``wav|text`` whose words are "text" stays a clip)."""
    lines, _ = text_lines(path)
    first = next((line for _number, line in lines if line.strip()), "")
    names = cells(first)
    named = bool(names) and (names[0].lower() in AUDIO_HEADERS or (len(names) > 1 and names[1].lower() in TEXT_HEADERS))
    if not named:
        return False
    clip = names[0] if names[0].lower().endswith(".wav") else f"{names[0]}.wav"
    return not (safe_paths.is_inside(path.parent / "wavs" / clip, path.parent)
                and (path.parent / "wavs" / clip).is_file())


def read_coqui(path: Path) -> tuple[list[DatasetRow], list[str]]:
    lines, problems = text_lines(path)
    if not lines or [h.lower() for h in cells(lines[0][1])][:2] != ["audio_file", "text"]:
        return [], problems + [f"{path.name}: the first line must be the header '{HEADER}'; the file was skipped."]
    return _rows(path, lines[1:], "audio_file|text|speaker_name", problems,
                 lambda parts: (audio_in(path.parent, parts[0]), parts[1], parts[2] if len(parts) > 2 else None))


def read_with_header(path: Path) -> tuple[list[DatasetRow], list[str]]:
    """F5-TTS's csv: its first line is the header (:func:`has_header` said so), then ``path|text``."""
    lines, problems = text_lines(path)
    return _rows(path, lines[1:], "audio_file|text", problems,
                 lambda parts: (audio_in(path.parent, parts[0]), parts[1], None))


def read_ljspeech(path: Path) -> tuple[list[DatasetRow], list[str]]:
    lines, problems = text_lines(path)
    return _rows(path, lines, "id|text' or 'id|text|normalised text", problems,
                 lambda parts: (_ljspeech_audio(path.parent, parts[0]),
                                parts[2] if len(parts) > 2 and parts[2] else parts[1], None))


def _ljspeech_audio(folder: Path, name: str) -> Path:
    if "/" in name or "\\" in name:  # written as a path (wavs/x.wav): relative to the csv's folder
        return audio_in(folder, name)
    # an id: its wav in wavs/ ("C:x" or "/abs" must not become a name below wavs/)
    safe_paths.inside(folder, name, "the id", PLACE)
    file_name = name if name.lower().endswith(".wav") else f"{name}.wav"
    return safe_paths.resolved_inside(folder, f"wavs/{file_name}", "the audio file", PLACE)


def _rows(path: Path, lines: list[tuple[int, str]], expected: str, problems: list[str],
          row_of: Callable[[list[str]], tuple[Path, str, str | None]]) -> tuple[list[DatasetRow], list[str]]:
    """The csv's lines as rows, ``row_of(cells)`` giving (audio, text, speaker); a line with fewer than two cells or
    whose audio lies outside the folder adds a sentence to ``problems`` instead."""
    rows = []
    for number, line in lines:
        if not line.strip():
            continue
        parts = cells(line)
        where = f"{path.name} line {number}"
        if len(parts) < 2 or not parts[0]:
            problems.append(f"{where}: expected '{expected}', found '{line[:80]}'.")
            continue
        try:
            audio, text, speaker = row_of(parts)
        except safe_paths.UnsafePathError as exc:
            problems.append(f"{where}: {exc}")
            continue
        rows.append(DatasetRow(audio, text, where, speaker or None))
    return rows, problems
