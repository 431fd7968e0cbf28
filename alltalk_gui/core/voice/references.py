"""Reference clips: the few seconds of the speaker's voice that the model conditions every generation on.

Preview and export both need them. XTTS v2 reads the audio only; F5-TTS continues a clip and needs exactly what
is said in it: :func:`reference_text` finds it (a dataset clip's transcript, or a text file beside the clip). :func:`choose_references` picks them from the project's training dataset
(``dataset/metadata_train.csv`` and ``metadata_eval.csv``): clips of 3 to 10 seconds that carry none of the
audio flags the transcript editor uses (clipping, noise-like audio; same thresholds as
:mod:`alltalk_gui.core.transcript.flags`), cleanest first. The user can replace them with any files.

:func:`load_references` decodes them with :mod:`alltalk_gui.core.audio.decode` (no FFmpeg needed; coqui's own loader
needs a system FFmpeg) into one mono signal at the rate of the engine that conditions on it (its
:attr:`~alltalk_gui.core.engine_api.engine.Engine.sample_rate`, which the caller names): the clips one after
another with a short pause between. XTTS uses the first seconds of that signal for the GPT's style latents and all
of it for the speaker embedding.
No torch here: the GUI calls this on its own thread.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from alltalk_gui.core.audio import decode as audio
from alltalk_gui.core.audio.clips import measure
from alltalk_gui.core.transcript.flags import CLIPPED_FRACTION_ABOVE, NOISE_FLATNESS_ABOVE
from alltalk_gui.core.dataset.metadata import EVAL_CSV, TRAIN_CSV, MetadataError, read_metadata

MIN_S = 3.0
MAX_S = 10.0
DEFAULT_COUNT = 3
GAP_S = 0.2  # silence between concatenated references, so one clip's last word does not run into the next


class ReferenceClipError(Exception):
    """No usable reference audio: none in the dataset, or a given file cannot be read."""


@dataclass(frozen=True)
class ReferenceClip:
    path: Path
    text: str
    duration_s: float
    flatness: float  # ~0.01-0.1 for clean voice; higher is noisier


def candidate_references(dataset_dir: str | os.PathLike[str], min_s: float = MIN_S,
                         max_s: float = MAX_S) -> list[ReferenceClip]:
    """Every clean, unflagged dataset clip between ``min_s`` and ``max_s`` seconds, cleanest first.

    Clips that cannot be read are skipped (the dataset check reports them; a preview does not need them all).
    """
    dataset_dir = Path(dataset_dir)
    rows = []
    for name in (TRAIN_CSV, EVAL_CSV):
        if (dataset_dir / name).is_file():
            try:
                rows.extend(read_metadata(dataset_dir / name))
            except MetadataError:
                continue
    found: list[ReferenceClip] = []
    seen: set[Path] = set()
    for row in rows:
        path = (dataset_dir / row.audio_file).resolve()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        try:
            samples, rate = audio.load(path)
        except audio.AudioError:
            continue
        mono = audio.to_mono(samples)
        duration = mono.size / rate
        if not min_s <= duration <= max_s:
            continue
        stats = measure(mono, rate)
        if stats.clipped_fraction > CLIPPED_FRACTION_ABOVE or stats.flatness > NOISE_FLATNESS_ABOVE:
            continue
        found.append(ReferenceClip(path, row.text, duration, stats.flatness))
    # Cleanest first; among equally clean clips the longer one carries more of the voice.
    return sorted(found, key=lambda c: (round(c.flatness, 3), -c.duration_s, str(c.path)))


def choose_references(dataset_dir: str | os.PathLike[str], count: int = DEFAULT_COUNT) -> list[ReferenceClip]:
    """The ``count`` best candidates (see :func:`candidate_references`).

    Raises:
        ReferenceClipError: the dataset has no clip of 3-10 s without flags.
    """
    found = candidate_references(dataset_dir)
    if not found:
        raise ReferenceClipError(
            f"No clean 3-10 second clip was found in the dataset at {dataset_dir}. Export the dataset first "
            "(Export dataset on the Transcribe & Edit page, or alltalk-gui dataset PROJECT), or pick reference "
            "recordings yourself."
        )
    return found[:count]


def load_references(paths: list[str | os.PathLike[str]], sample_rate: int) -> np.ndarray:
    """Decode reference files into one mono float32 signal at ``sample_rate``, the engine's (clips joined by short
    pauses).

    Raises:
        ReferenceClipError: no paths, or a file is missing, unreadable, or shorter than half a second.
    """
    if not paths:
        raise ReferenceClipError("No reference clip was given: the model needs a few seconds of the voice to copy.")
    parts: list[np.ndarray] = []
    gap = np.zeros(int(GAP_S * sample_rate), dtype=np.float32)
    for path in paths:
        path = Path(path)
        if not path.is_file():
            raise ReferenceClipError(f"The reference clip {path} does not exist.")
        try:
            samples, rate = audio.load(path)
        except audio.AudioError as exc:
            raise ReferenceClipError(f"The reference clip {path.name} cannot be read: {exc}") from exc
        mono = audio.resample(audio.to_mono(samples), rate, sample_rate)
        if mono.size < sample_rate // 2:
            raise ReferenceClipError(f"The reference clip {path.name} is shorter than half a second.")
        if parts:
            parts.append(gap)
        parts.append(mono.astype(np.float32, copy=False))
    return np.clip(np.concatenate(parts), -1.0, 1.0)


TEXT_SUFFIXES = (".reference.txt", ".txt")  # AllTalk's F5 voices: voices/<x>.wav beside <x>.reference.txt


def reference_text(path: str | os.PathLike[str]) -> str:
    """What is said in the reference clip ``path``: a text file beside it (``<name>.reference.txt``, as AllTalk
    keeps F5 voices, or ``<name>.txt``), else its transcript in the dataset it belongs to (the metadata CSVs of
    the clip's folder or the folder above, where the dataset export puts them).

    Raises:
        ReferenceClipError: no transcript was found; the message says how to give one.
    """
    path = Path(path)
    for suffix in TEXT_SUFFIXES:
        beside = path.with_name(path.stem + suffix)
        if beside.is_file():
            try:
                # utf-8-sig: Windows editors may start the file with a byte-order mark, which is no whitespace:
                # it would stay glued to the first word F5 is told the clip says.
                text = " ".join(beside.read_text(encoding="utf-8-sig").split())
            except (OSError, UnicodeDecodeError) as exc:
                raise ReferenceClipError(f"The transcript {beside} cannot be read: {exc}") from exc
            if text:
                return text
    resolved = path.resolve()
    for folder in (path.parent, path.parent.parent):
        for name in (TRAIN_CSV, EVAL_CSV):
            if not (folder / name).is_file():
                continue
            try:
                rows = read_metadata(folder / name)
            except MetadataError:
                continue
            for row in rows:
                if (folder / row.audio_file).resolve() == resolved:
                    return row.text
    raise ReferenceClipError(f"The words of the reference clip {path.name} are not known: the engine needs its "
                             f"exact transcript. Pick a clip of the dataset, or put the words into {path.stem}.txt "
                             "beside it.")
