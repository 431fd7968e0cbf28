"""Before a run starts: how much disk its checkpoints and an export will need, against what is free.

A run keeps ``keep_last`` recent checkpoints and the best one by eval loss, and writes each new one before the
oldest is deleted, so at its fullest it holds ``keep_last`` + best + one being written. Each is the size the
engine expects for the config (:meth:`~alltalk_gui.core.engine_api.engine.Engine.disk_needs`; a resumed run's
own newest checkpoint where there is one), and an export of the voice comes on top. The CLI prints
:meth:`DiskPlan.warning` before it starts a run and the Train page shows it beside Start; both offer fewer
checkpoints kept (``keep_last``) when that would fit. The loop itself checks again before every checkpoint and
stops cleanly when one does not fit (:mod:`alltalk_gui.core.training.loop`). No torch, no Qt: the GUI asks this
on its own thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from alltalk_gui.core.engine_api.engine import get_engine
from alltalk_gui.core.machine import disk
from alltalk_gui.core.training.checkpoints import CHECKPOINTS, run_checkpoints
from alltalk_gui.core.training.config import TrainConfig


@dataclass(frozen=True)
class DiskPlan:
    """What a run will write, where, and what is free there (bytes)."""

    folder: Path             # the run's checkpoints folder (it may not exist yet)
    checkpoint_bytes: int    # one checkpoint
    keep_last: int
    best: bool               # a best checkpoint may be kept besides the newest (the run has evals)
    existing: int            # checkpoints the run already has (a resume)
    export_bytes: int
    free_bytes: int

    @property
    def checkpoints(self) -> int:
        """The most checkpoints on disk at once: those kept, the best, and the one being written."""
        return self.keep_last + int(self.best) + 1

    def needed_bytes(self, keep_last: int | None = None) -> int:
        """More bytes the run will need at its fullest (with ``keep_last`` checkpoints kept, default the plan's),
        its export included; what the run already has on disk counts as used."""
        count = (self.keep_last if keep_last is None else keep_last) + int(self.best) + 1
        return max(0, count - self.existing) * self.checkpoint_bytes + self.export_bytes

    @property
    def enough(self) -> bool:
        return self.free_bytes >= self.needed_bytes()

    def keep_last_that_fits(self) -> int | None:
        """The most checkpoints to keep (fewer than now) that would fit, or None when even one does not."""
        return next((k for k in range(self.keep_last - 1, 0, -1) if self.free_bytes >= self.needed_bytes(k)), None)

    def summary(self) -> str:
        """E.g. "About 16.1 GB: 3 checkpoints of about 5.31 GB (2 kept + one being written) and 1.87 GB for an
        export; 120.00 GB free in /home/me/voice/runs"."""
        parts = f"{self.keep_last} kept" + (" + the best" if self.best else "") + " + one being written"
        have = f", {self.existing} already there" if self.existing else ""
        return (f"About {disk.size_text(self.needed_bytes())}: {self.checkpoints} checkpoints of about "
                f"{disk.size_text(self.checkpoint_bytes)} ({parts}{have}) and {disk.size_text(self.export_bytes)} for "
                f"an export; {disk.size_text(self.free_bytes)} free in {self.folder}")

    def warning(self) -> str | None:
        """What to tell the user before the run starts, or None when there is room."""
        if self.enough:
            return None
        fewer = self.keep_last_that_fits()
        advice = (f"Keeping {fewer} checkpoint{'s' if fewer > 1 else ''} instead of {self.keep_last} would fit "
                  f"(about {disk.size_text(self.needed_bytes(fewer))}): keep fewer checkpoints or free some space"
                  if fewer is not None else "It does not fit even with one checkpoint kept: free some space")
        return (f"Not enough free disk space for this run. {self.summary()}. {advice}. If the disk fills up, the "
                "run stops with a message and keeps the checkpoints written until then.")


def plan_disk(config: TrainConfig) -> DiskPlan | None:
    """The disk plan of ``config`` (its engine, base model, run folder, keep_last), or None when the engine cannot
    tell the checkpoint size (no base model in ``config.base_model_dir`` yet)."""
    needs = get_engine(config.engine).disk_needs(config)
    if needs is None:
        return None
    checkpoint_bytes = needs.checkpoint_bytes
    existing = run_checkpoints(config.run_dir) if config.run_name else []
    if existing:  # a resume: its own checkpoints say how big they are
        checkpoint_bytes = sum(f.stat().st_size for f in existing[-1].path.iterdir() if f.is_file())
    folder = config.run_dir / CHECKPOINTS if config.run_name else Path(config.project_dir) / "runs"
    return DiskPlan(folder=folder, checkpoint_bytes=checkpoint_bytes, keep_last=config.keep_last,
                    best=config.eval_each_epoch, existing=len(existing), export_bytes=needs.export_bytes,
                    free_bytes=disk.free_bytes(folder))
