"""Export the kept clips as a coqui/AllTalk training dataset, at the rate of the project's engine.

Writes ``dataset/wavs/<clip id>.wav`` (mono, 16-bit, cut from the working copies and resampled once to the
engine's :attr:`~alltalk_gui.core.engine_api.engine.Engine.sample_rate`: 22 050 Hz for XTTS v2, 24 kHz for
F5-TTS), ``dataset/metadata_train.csv`` / ``dataset/metadata_eval.csv`` through
:mod:`alltalk_gui.core.dataset.metadata`, with a seeded train/eval split that always leaves at least one clip on
each side, and ``dataset_info.json`` (:mod:`alltalk_gui.core.dataset.info`: the engine and rate it was written for).

Working copies keep the recording's own rate (up to 48 kHz), so an engine gets everything the recording holds
up to its own band limit. A project imported before that has 22 050 Hz copies: when the engine trains at a higher
rate, those copies are first made again from the originals in ``sources/``
(:mod:`alltalk_gui.core.project.working_copies`), so an F5 dataset holds the recording's content above 11 kHz.

Nothing is dropped silently: deleted clips are left out by the user's choice (and counted), and clips whose
flags make them unusable for the engine (too long, empty text, text it cannot encode) are refused by name. By
default a refusal stops the export before anything is written; ``skip_refused=True`` exports the others and still
lists the refused ones in the report.

The new dataset is built in a temporary folder beside ``dataset/`` and swapped in at the end, so an export
that fails or is killed half-way leaves the previous dataset as it was. A kill leaves hidden ``.dataset-*``
folders behind; :func:`recover_interrupted_export` (run at the start of every export) puts a previous dataset
back if the kill came between the two renames of the swap, and removes the rest. Before writing, the free space is
checked against the new dataset's size (the previous one stays until the swap); a write that fails all the same
(the disk filled up meanwhile, an I/O error) removes the staging folder and says where, about how much is needed
and how much is free.
"""

from __future__ import annotations

import logging
import os
import random
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from alltalk_gui.core import folders, safe_paths
from alltalk_gui.core.audio import decode as audio
from alltalk_gui.core.audio.clips import ClipAudio, ClipAudioError
from alltalk_gui.core.dataset.info import write_info
from alltalk_gui.core.machine import disk
from alltalk_gui.core.dataset.metadata import EVAL_CSV, TRAIN_CSV, MetadataRow, write_metadata
from alltalk_gui.core.engine_api.engine import get_engine
from alltalk_gui.core.project import working_copies
from alltalk_gui.core.transcript.segments import Segment, SegmentList

log = logging.getLogger(__name__)

DEFAULT_EVAL_SPLIT = 0.15
_HEADROOM_BYTES = 1 << 20  # the metadata CSVs, wav headers and the file system's own records


class DatasetError(Exception):
    """The dataset cannot be exported; the message says why. Nothing was written."""


class ClipsRefused(DatasetError):
    """Some kept clips cannot be used for training; ``.refused`` names them with the reasons."""

    def __init__(self, refused: list["Refusal"]) -> None:
        lines = "\n".join(f"  {r.describe()}" for r in refused)
        super().__init__(f"{len(refused)} clip(s) cannot be used for training; fix or delete them, or export the "
                         f"others only:\n{lines}")
        self.refused = refused


@dataclass(frozen=True)
class Refusal:
    clip_id: str
    source: str          # the original file name
    start_s: float
    reasons: tuple[str, ...]

    def describe(self) -> str:
        return f"{self.clip_id} ({self.source} at {self.start_s:.1f} s): {'; '.join(self.reasons)}"


@dataclass
class ExportReport:
    dataset_dir: Path
    train: int
    eval: int
    seconds_of_audio: float
    refused: list[Refusal] = field(default_factory=list)
    deleted: int = 0
    flagged: list[str] = field(default_factory=list)  # clips that went in with warnings nobody settled (ids)
    sample_rate: int = 0           # of the wavs written: the engine's
    remade: int = 0                # working copies made again from their originals first (older projects)
    notes: list[str] = field(default_factory=list)  # what could not be done as wished (an original unreadable)


def refusals(segments: SegmentList) -> list[Refusal]:
    """The kept clips that the export would refuse, with their reasons."""
    out = []
    for s in segments:
        if s.deleted:
            continue
        reasons = [f.reason for f in s.blocking_flags]
        if "|" in s.text:
            reasons.append("The text contains '|', which the metadata format uses as its separator.")
        if reasons:
            out.append(Refusal(s.id, segments.source_name(s.source_id), s.start_ms / 1000, tuple(reasons)))
    return out


def split_train_eval(ids: list[str], eval_split: float, seed: int) -> tuple[list[str], list[str]]:
    """Seeded split of clip ids: at least one on each side; the same ids, split and seed give the same result.

    Raises:
        DatasetError: fewer than two clips, or ``eval_split`` outside (0, 1).
    """
    if not 0 < eval_split < 1:
        raise DatasetError(f"The eval split must be between 0 and 1 (e.g. 0.15), not {eval_split}.")
    if len(ids) < 2:
        raise DatasetError(f"A dataset needs at least 2 usable clips (one to train on, one to evaluate); this "
                           f"project has {len(ids)}.")
    shuffled = sorted(ids)
    random.Random(seed).shuffle(shuffled)
    n_eval = min(len(ids) - 1, max(1, round(len(ids) * eval_split)))
    return sorted(shuffled[n_eval:]), sorted(shuffled[:n_eval])


def speaker_name(project: Any) -> str:
    """The project name as a metadata-safe speaker name (letters, digits, _ and -)."""
    return re.sub(r"[^\w-]+", "_", project.name).strip("_") or "speaker"


def export_dataset(project: Any, eval_split: float = DEFAULT_EVAL_SPLIT, seed: int = 0, skip_refused: bool = False,
                   segments: SegmentList | None = None, progress: Callable[[int, int], None] | None = None,
                   vocab_file: str | os.PathLike[str] | None = None) -> ExportReport:
    """Write ``project/dataset`` from the kept clips of segments.json.

    Args:
        segments: an already open list (the GUI's, flagged as it is); else segments.json is read and its flags
            rechecked, with ``vocab_file`` (the base model's vocab.json) for the text check when given.
        skip_refused: export the usable clips even if some are refused (they are still listed in the report).
        progress: ``progress(done, total)``: working copies remade (older projects only), then clips written.

    Raises:
        ClipsRefused: some kept clips are unusable and ``skip_refused`` is False (nothing written).
        ProjectError: the project is open read-only, or a training runs in it (it reads the dataset).
        DatasetError: no transcript, fewer than two usable clips, bad split, or a clip's audio is missing.
        segments.SegmentsError: segments.json is corrupt.
    """
    project.check_writable()
    project.check_not_training()
    engine = get_engine(project.engine)
    if segments is None:
        if not project.segments_file.exists():
            raise DatasetError("The project has no transcript yet; transcribe it first.")
        segments = SegmentList.open(project, vocab_file=vocab_file)
        segments.recheck()
    refused = refusals(segments)
    if refused and not skip_refused:
        raise ClipsRefused(refused)
    refused_ids = {r.clip_id for r in refused}
    usable = [s for s in segments if not s.deleted and s.id not in refused_ids]
    train_ids, eval_ids = split_train_eval([s.id for s in usable], eval_split, seed)
    by_id = {s.id: s for s in usable}
    speaker = speaker_name(project)
    report = ExportReport(project.dataset_dir, len(train_ids), len(eval_ids), 0.0, refused,
                          sum(1 for s in segments if s.deleted), [s.id for s in usable if s.flags], engine.sample_rate)
    used = {s.source_id for s in usable}
    stale = [c for c in working_copies.stale_copies(project, engine.sample_rate) if c.source.id in used]

    target = project.dataset_dir
    target.parent.mkdir(parents=True, exist_ok=True)
    recover_interrupted_export(project)
    needed = _bytes_needed(usable, engine.sample_rate) + sum(c.bytes_needed for c in stale)
    free = disk.free_bytes(target.parent)
    if free < needed:
        raise DatasetError(f"Not enough free disk space for the dataset in {target.parent}: about "
                           f"{disk.size_text(needed)} needed, {disk.size_text(free)} free. Nothing was written"
                           f"{'; the previous dataset is kept' if target.exists() else ''}. Free some space and "
                           "export again.")
    total = len(stale) + len(usable)
    for done, copy in enumerate(stale, start=1):
        try:
            note = working_copies.remake(project, copy)
        except OSError as exc:  # the old copy stays in place (written atomically); nothing else was written yet
            raise DatasetError(f"{disk.write_failed('A working copy', project.audio_dir, exc, needed)} The "
                               f"working copy of '{copy.source.name}' was kept as it was, and the dataset was "
                               "not written.") from exc
        report.notes += [note] if note else []
        report.remade += note is None
        if progress is not None:
            progress(done, total)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        (staging / "wavs").mkdir()
        clips = _ClipsAtRate(ClipAudio(project), engine.sample_rate)  # reads the copies remade above
        for done, segment in enumerate(usable, start=len(stale) + 1):
            report.seconds_of_audio += _write_clip(clips, segment, _clip_wav(staging, segment), segments)
            if progress is not None:
                progress(done, total)
        for name, ids in ((TRAIN_CSV, train_ids), (EVAL_CSV, eval_ids)):
            write_metadata(staging / name, [_row(by_id[i], speaker) for i in ids])
        write_info(staging, engine.name, engine.sample_rate)
        _swap_in(staging, target)
    except OSError as exc:  # a full disk, an I/O error (the wav writer says which: audio.write_wav)
        failed = disk.write_failed("The dataset", target.parent, exc, needed)  # before the staging folder goes
        _remove(staging)
        kept = "the previous dataset is as it was" if target.exists() else "nothing of it was kept"
        raise DatasetError(f"{failed} The export was undone: {kept}."
                           + (" Free some space and export again." if disk.is_full(exc) else "")) from exc
    except BaseException:
        _remove(staging)
        raise
    return report


def recover_interrupted_export(project: Any) -> None:
    """Clean up after an export that was killed: restore ``dataset/`` from its set-aside copy if the kill came
    between the swap's two renames, then remove leftover staging and set-aside folders."""
    target = project.dataset_dir
    if not target.parent.is_dir():
        return
    set_aside = sorted(target.parent.glob(f".{target.name}-old-*"))
    if not target.exists() and set_aside:
        folders.rename(set_aside[-1], target)
    for leftover in target.parent.glob(f".{target.name}-*"):
        _remove(leftover)


def _bytes_needed(segments: list[Segment], sample_rate: int) -> int:
    """About the size of the new dataset: 16-bit mono wavs of the clips at the engine's rate, and a little more."""
    seconds = sum(max(0, s.end_ms - s.start_ms) for s in segments) / 1000
    return int(seconds * sample_rate * 2) + 64 * len(segments) + _HEADROOM_BYTES


def _row(segment: Segment, speaker: str) -> MetadataRow:
    # coqui reads the CSV with Python's csv module, where '"' starts a quoted field; XTTS's text cleaning
    # removes double quotes anyway, so dropping them changes nothing the model sees.
    text = " ".join(segment.text.replace('"', "").split())
    return MetadataRow(f"wavs/{segment.id}.wav", text, speaker)


def _clip_wav(staging: Path, segment: Segment) -> Path:
    """Where a clip's wav goes: refused unless the id is a plain name, so it cannot name a file elsewhere."""
    try:
        return safe_paths.inside(staging / "wavs", f"{safe_paths.plain_name(segment.id, 'clip id')}.wav")
    except safe_paths.UnsafePathError as exc:
        raise DatasetError(f"Cannot export clip {segment.id!r}: {exc}") from exc


class _ClipsAtRate:
    """Clips at the engine's rate: each source's working copy is resampled once, whole, and the clips are cut from
    that (exact sample positions, no filter edges at every cut). One source is held at a time: the clips come
    sorted by source, so a long project needs the memory of its longest recording, not of all of them."""

    def __init__(self, clip_audio: ClipAudio, sample_rate: int) -> None:
        self.clip_audio, self.rate = clip_audio, sample_rate
        self.source_id: str | None = None
        self.samples = np.zeros(0, dtype=np.float32)

    def clip(self, segment: Segment) -> np.ndarray:
        """Raises ClipAudioError: the source's working copy is missing or unreadable."""
        if segment.source_id != self.source_id:
            self.source_id = None
            samples, rate = self.clip_audio.source_samples(segment.source_id)
            self.clip_audio.forget(segment.source_id)
            self.samples, self.source_id = audio.resample(samples, rate, self.rate), segment.source_id
        first = max(0, segment.start_ms * self.rate // 1000)
        last = min(self.samples.size, segment.end_ms * self.rate // 1000)
        return self.samples[first:max(first, last)]


def _write_clip(clips: _ClipsAtRate, segment: Segment, path: Path, segments: SegmentList) -> float:
    """Write one clip at the engine's rate; returns its length in seconds."""
    try:
        samples = clips.clip(segment)
    except ClipAudioError as exc:
        raise DatasetError(f"Cannot export clip {segment.id}: {exc}") from exc
    if samples.size == 0:
        raise DatasetError(f"Clip {segment.id} ({segments.source_name(segment.source_id)}) lies outside its "
                           "recording; trim it.")
    audio.write_wav(path, samples, clips.rate, subtype="PCM_16")
    return samples.size / clips.rate


def _swap_in(staging: Path, target: Path) -> None:
    """Replace ``target`` by ``staging`` with two renames; the old dataset is removed only after the swap."""
    old = None
    if target.exists():
        old = target.with_name(f".{target.name}-old-{staging.name[-8:]}")
        folders.rename(target, old)  # retried while an antivirus scans the new wavs (Windows)
    folders.rename(staging, target)
    if old is not None:
        _remove(old)


def _remove(folder: Path) -> None:
    """Delete a staging or set-aside folder; one that cannot be deleted is logged (the next export tries again)."""
    problem = folders.remove_tree(folder)
    if problem:
        log.warning("%s", problem)
