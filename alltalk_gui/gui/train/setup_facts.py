"""The facts the Train page states before a run, read from files without Qt or torch: the exported dataset
(clips, minutes, clips still flagged, eval clips), whether the base-model folder has the XTTS v2 files, and
about how big one resumable checkpoint will be."""

from __future__ import annotations

from pathlib import Path

from alltalk_gui.core.engines.xtts.files import REQUIRED_FILES
from alltalk_gui.core.dataset.metadata import EVAL_CSV, TRAIN_CSV, MetadataError, read_metadata
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.transcript.segments import SegmentsError, read_file


def dataset_facts(project: VoiceProject) -> dict:
    """Clips and minutes of the exported dataset, clips still flagged in the transcript, eval clips."""
    import soundfile

    facts = {"train": 0, "eval": 0, "minutes": 0.0, "flagged": None, "error": None}
    folder = project.dataset_dir
    try:
        rows = {name: read_metadata(folder / name) for name in (TRAIN_CSV, EVAL_CSV)}
    except MetadataError as exc:
        facts["error"] = str(exc)
        rows = {}
    seconds = 0.0
    for name, items in rows.items():
        facts["train" if name == TRAIN_CSV else "eval"] = len(items)
        for row in items:
            try:
                seconds += soundfile.info(str(folder / row.audio_file)).duration
            except (RuntimeError, OSError):
                pass  # a missing clip is training's to report, with its name
    facts["minutes"] = seconds / 60
    if project.segments_file.is_file():
        try:
            data = read_file(project.segments_file)  # with the edits still in its journal
            facts["flagged"] = sum(1 for s in data["segments"] if not s.get("deleted") and s.get("flags"))
        except SegmentsError:
            pass
    return facts


def base_model_found(folder: Path | None) -> bool:
    return folder is not None and all((folder / name).is_file() for name in REQUIRED_FILES)


def checkpoint_bytes(base_model: Path | None, optimizer: str) -> int | None:
    """About one resumable checkpoint: the GPT weights (model.pth is mostly them) plus the optimizer moments."""
    if not base_model_found(base_model):
        return None
    weights = (base_model / "model.pth").stat().st_size
    moments = 2 if "8bit" in optimizer else 8  # bytes per parameter, against 4 for an fp32 weight
    return int(weights * (1 + moments / 4))
