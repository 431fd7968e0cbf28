"""The facts the Train page states before a run, read from files without Qt or torch: the exported dataset
(clips, minutes, clips still flagged, eval clips) and whether a base-model folder has the chosen engine's files.
(The disk space a run needs is the core's: :mod:`alltalk_gui.core.training.disk_plan`.)"""

from __future__ import annotations

from pathlib import Path

from alltalk_gui.core.engine_api.engine import Engine
from alltalk_gui.core.dataset.clip_lengths import clip_seconds, longest_clip_seconds
from alltalk_gui.core.dataset.metadata import EVAL_CSV, TRAIN_CSV, MetadataError, read_metadata
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.transcript.segments import SegmentsError, read_file


def dataset_facts(project: VoiceProject) -> dict:
    """Clips and minutes of the exported dataset, eval clips, its longest training clip (``longest_s``, which the
    memory estimates size for; None: none readable), and how many of its clips are still flagged in the transcript
    (``flagged``; None when the transcript cannot be read)."""
    facts = {"train": 0, "eval": 0, "minutes": 0.0, "longest_s": None, "flagged": None, "error": None}
    folder = project.dataset_dir
    try:
        rows = {name: read_metadata(folder / name) for name in (TRAIN_CSV, EVAL_CSV)}
    except MetadataError as exc:
        facts["error"] = str(exc)
        rows = {}
    seconds = 0.0
    for name, items in rows.items():
        facts["train" if name == TRAIN_CSV else "eval"] = len(items)
        lengths = clip_seconds(folder, items)  # a missing clip is training's to report, with its name
        seconds += sum(lengths)
        if name == TRAIN_CSV:
            facts["longest_s"] = max(lengths, default=None)
    facts["minutes"] = seconds / 60
    if not rows:  # the eval list unreadable: the training clips still say what a run would size for
        facts["longest_s"] = longest_clip_seconds(folder)
    in_dataset = {Path(row.audio_file).stem for items in rows.values() for row in items}  # wavs/<clip id>.wav
    if project.segments_file.is_file():
        try:
            data = read_file(project.segments_file)  # with the edits still in its journal
            facts["flagged"] = sum(1 for s in data["segments"]
                                   if s.get("id") in in_dataset and not s.get("deleted") and s.get("flags"))
        except SegmentsError:
            pass
    return facts


def missing_base_files(folder: Path, engine: Engine) -> list[str]:
    """The engine's base-model files (some are patterns, e.g. F5-TTS's ``model_*.safetensors``) that
    ``folder`` lacks."""
    from alltalk_gui.core.engine_api.shared_files import has_file

    return [pattern for pattern in engine.base_model_files if not has_file(folder, pattern)]


def base_model_found(folder: Path | None, engine: Engine) -> bool:
    return folder is not None and folder.is_dir() and not missing_base_files(folder, engine)


def other_engine_of(folder: Path | None, engine: Engine) -> Engine | None:
    """The other engine whose base model ``folder`` holds, when it is not ``engine``'s (an F5-TTS folder chosen
    for XTTS v2: say so, rather than list the XTTS files it lacks); None otherwise."""
    from alltalk_gui.core.engine_api.engine import EngineError, engine_names, get_engine

    if folder is None or not folder.is_dir() or base_model_found(folder, engine):
        return None
    for name in engine_names():
        try:
            other = get_engine(name)
        except EngineError:
            continue
        if other.name != engine.name and base_model_found(folder, other):
            return other
    return None
