"""A folder of audio files with a text file beside each, in any sub-folders: ``clip.wav`` + ``clip.txt``,
Montreal Forced Aligner corpora (``clip.lab``), LibriTTS (``speaker/chapter/clip.wav`` + ``clip.normalized.txt``,
preferred over ``clip.original.txt``: numbers are already words).

Any audio format the app's importer reads counts (wav, flac, mp3, ogg, opus, m4a...). The walk does not enter
linked folders, and a linked file (audio or text) is used only when it leads to a file inside the chosen folder:
nothing outside the folder the user chose is read.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

from alltalk_gui.core import safe_paths
from alltalk_gui.core.audio.decode import AUDIO_EXTENSIONS
from alltalk_gui.core.dataset.byo_rows import PLACE, DatasetRow, read_clip_text

# The text beside ``clip.<ext>``, best first (LibriTTS's normalised text before its original).
TEXT_SUFFIXES = (".normalized.txt", ".txt", ".lab", ".original.txt")


def audio_files(root: Path) -> Iterator[Path]:
    """Audio files below ``root`` (hidden files and folders and linked folders left out), in a stable order."""
    for folder, folders, files in os.walk(root):  # followlinks=False: a linked folder is not entered
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        yield from (Path(folder) / f for f in sorted(files)
                    if not f.startswith(".") and Path(f).suffix.lower() in AUDIO_EXTENSIONS)


def text_beside(audio: Path) -> Path | None:
    """The text file of ``audio`` (see :data:`TEXT_SUFFIXES`), or None."""
    stem = audio.name[: -len(audio.suffix)]
    return next((audio.with_name(stem + suffix) for suffix in TEXT_SUFFIXES
                 if audio.with_name(stem + suffix).is_file()), None)


def has_texts(root: Path) -> bool:
    """Whether some audio file below ``root`` has its text beside it (the layout's sign; stops at the first)."""
    return any(text_beside(audio) is not None for audio in audio_files(root))


def read_sidecar(root: Path) -> tuple[list[DatasetRow], list[str]]:
    rows: list[DatasetRow] = []
    problems: list[str] = []
    for audio in audio_files(root):
        where = audio.relative_to(root).as_posix()
        text_file = text_beside(audio)
        if text_file is None:
            stem = audio.name[: -len(audio.suffix)]
            problems.append(f"{where}: no text file beside it ({stem}.txt, {stem}.lab or {stem}.normalized.txt).")
            continue
        try:
            real_audio = safe_paths.check_resolved(audio, root, "the audio file", PLACE, written=where)
            real_text = safe_paths.check_resolved(text_file, root, "the text file", PLACE,
                                                  written=text_file.relative_to(root).as_posix())
            text = read_clip_text(real_text)
        except (safe_paths.UnsafePathError, ValueError) as exc:
            problems.append(f"{where}: {exc}")
            continue
        except OSError as exc:
            problems.append(f"{where}: {text_file.name} cannot be read ({exc.strerror or exc}).")
            continue
        rows.append(DatasetRow(real_audio, text, where))
    return rows, problems
