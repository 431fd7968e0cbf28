"""What each training run of a project holds on disk, and freeing it: a whole run, or all but the checkpoint
Preview and Export use.

A checkpoint is the model's weights and its optimizer state: 2 to 5 GB for an XTTS run trained in full, over 13 GB
for Orpheus, a few megabytes for a LoRA. A run keeps only its newest checkpoints and its best (the training loop
prunes the rest), but every new run keeps its own, so a project that was trained five times holds five runs' worth,
and the loop's own message when a disk fills ("delete old runs") had nothing to do it with. This module lists each
run's size and deletes what the user chose, the same for the app's dialog and ``alltalk-gui checkpoints``.

Safety:
- Only folders in the project's ``runs/`` are touched: a run's name is looked up among :func:`run_folders` (which
  leaves out links leading elsewhere), never joined as a path; a link there is removed as a link, not followed.
- The run a training child trains now (its run lock, :func:`~alltalk_gui.core.project.lock.running_training`) is
  refused: the child writes and prunes it.
- A deleted run is first renamed to a hidden ``.deleting-…`` folder in ``runs/`` (:func:`run_folders` leaves
  hidden folders out), so it leaves every list at once and an interrupted delete never leaves something that looks
  like a damaged run; the next delete finishes it.
- "Keep only the best" keeps the checkpoint Preview and Export use by default
  (:func:`~alltalk_gui.core.voice.judge.best.best_choice`: the judge's pick, else the lowest eval loss, else the
  latest) and marks it kept, so a resumed run never prunes it.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from alltalk_gui.core import folders
from alltalk_gui.core.machine.disk import size_text
from alltalk_gui.core.project.errors import ProjectError
from alltalk_gui.core.project.folder import FEATURE_CACHE_DIR
from alltalk_gui.core.project.lock import running_training
from alltalk_gui.core.training.checkpoints import (CHECKPOINTS, KEEP_MARK, CheckpointError, CheckpointInfo,
                                                   run_checkpoints, run_folders)
from alltalk_gui.core.training.run_folders import run_finished, runs_dir
from alltalk_gui.core.voice.judge.best import best_choice

DELETING = ".deleting-"  # the prefix a run being deleted is renamed to (hidden, and left out of run_folders)


@dataclass(frozen=True)
class RunSpace:
    """One run folder as the user sees it: its checkpoints, its size, and what "keep only the best" would keep."""

    name: str
    folder: Path
    checkpoints: tuple[CheckpointInfo, ...]  # complete ones, oldest step first
    size_bytes: int                          # everything in the run folder
    modified: float                          # newest file time in the folder (seconds since the epoch)
    best: CheckpointInfo | None              # what Preview and Export use, kept by keep_only_best
    best_reason: str                         # why that one ("chosen by the judge: …", "the lowest eval loss …")
    training_now: bool                       # a training child writes this run right now
    finished: bool                           # it ran to its end (else Resume can continue it)
    freed_by_keeping_best: int               # bytes keep_only_best would free (0: nothing but the best)

    @property
    def engine(self) -> str | None:
        return self.checkpoints[-1].engine if self.checkpoints else None

    @property
    def state(self) -> str:
        """The run's state in words, as the listing and the window show it."""
        if self.training_now:
            return "training now"
        return "finished" if self.finished else "can be resumed"


def thinnable(runs: Sequence[RunSpace]) -> list[RunSpace]:
    """The runs "keep only the best of every run" thins: those with more than their best, not training now."""
    return [run for run in runs if run.freed_by_keeping_best and not run.training_now]

def tree_bytes(path: str | os.PathLike[str]) -> int:
    """The size of the files under ``path`` (links are counted as links, never followed; unreadable parts as 0)."""
    total = 0
    stack = [Path(path)]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(Path(entry.path))
                        else:
                            total += entry.stat(follow_symlinks=False).st_size
                    except OSError:  # removed meanwhile (a running training prunes its own checkpoints)
                        continue
        except OSError:
            continue
    return total


def other_space(project: Any) -> list[tuple[str, int]]:
    """What else the project folder holds, in bytes, for the user to see where the space went (nothing here is
    offered for deletion: the recordings, their working copies and the dataset are the voice's material, the
    previews the user's takes, and the feature cache is read again by the next run)."""
    parts = (("recordings", project.sources_dir), ("working copies", project.audio_dir),
             ("dataset", project.dataset_dir), ("feature cache", project.root / FEATURE_CACHE_DIR),
             ("previews", project.previews_dir))
    return [(name, size) for name, folder in parts if (size := tree_bytes(folder))]


def other_space_sentence(parts: list[tuple[str, int]]) -> str:
    """"Besides the runs: recordings 41 MB, dataset 12 MB, …" ("" when there is nothing else)."""
    if not parts:
        return ""
    return "Besides the runs: " + ", ".join(f"{name} {size_text(size)}" for name, size in parts) + "."


def _newest_time(path: Path) -> float:
    times = [path.stat().st_mtime]
    for checkpoint in (path / CHECKPOINTS).glob("step_*"):
        try:
            times.append(checkpoint.stat().st_mtime)
        except OSError:
            continue
    return max(times)


def runs_on_disk(project_dir: str | os.PathLike[str]) -> list[RunSpace]:
    """Every run of the project, newest first, with its size. Reads files only (no torch); may take a second on a
    slow disk, so the app calls it from a worker."""
    project_dir = Path(project_dir)
    training = running_training(project_dir)
    out = []
    for folder in run_folders(runs_dir(project_dir)):
        checkpoints = tuple(run_checkpoints(folder))
        best, reason = None, ""
        if checkpoints:
            try:
                choice = best_choice(project_dir, run=folder.name)
                best, reason = choice.checkpoint, choice.reason
            except CheckpointError:  # pruned meanwhile: nothing to choose from
                pass
        try:
            modified = _newest_time(folder)
        except OSError:
            continue  # deleted meanwhile
        spare = sum(tree_bytes(c.path) for c in checkpoints if best is not None and c.path != best.path)
        out.append(RunSpace(folder.name, folder, checkpoints, tree_bytes(folder), modified, best, reason,
                            training is not None and training.run == folder.name, run_finished(folder), spare))
    return sorted(out, key=lambda r: r.modified, reverse=True)


def _run(project_dir: Path, name: str) -> Path:
    """The run folder called ``name`` (looked up, never joined: a name such as ``../x`` matches nothing).

    Raises:
        ProjectError: no such run, or a training child trains it now.
    """
    for folder in run_folders(runs_dir(project_dir)):
        if folder.name == name:
            training = running_training(project_dir)
            if training is not None and training.run == name:
                raise ProjectError(f"The run '{name}' is training now. Stop it first (Stop on the Train page, or "
                                   f"alltalk-gui stop {project_dir}), then free its space. Nothing was deleted.")
            return folder
    known = ", ".join(sorted(r.name for r in run_folders(runs_dir(project_dir))))
    raise ProjectError(f"There is no run '{name}' in {runs_dir(project_dir)}. Runs: {known or 'none'}. "
                       "Nothing was deleted.")


@dataclass(frozen=True)
class Freed:
    """What a delete did: bytes freed, and any sentence about what could not be deleted (for a warning)."""

    bytes: int
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class FreePlan:
    """What the user asked to free, checked: whole runs to delete, and runs to thin to their best checkpoint."""

    delete: tuple[RunSpace, ...] = ()
    keep_best: tuple[RunSpace, ...] = ()  # only runs with another checkpoint than the best

    @property
    def bytes(self) -> int:
        return sum(r.size_bytes for r in self.delete) + sum(r.freed_by_keeping_best for r in self.keep_best)

    def steps(self) -> list[str]:
        """Each deletion in words, for the question asked before it."""
        return ([f"delete the run {r.name} ({size_text(r.size_bytes)})" for r in self.delete]
                + [f"keep only step {r.best.step} of {r.name} (frees {size_text(r.freed_by_keeping_best)})"
                   for r in self.keep_best if r.best is not None])


def plan_freeing(project_dir: str | os.PathLike[str], delete: Sequence[str] = (), keep_best: Sequence[str] = (),
                 every_run: bool = False) -> FreePlan:
    """Check a request before anything is deleted: every run named exists and is not training now.
    ``every_run``: thin every run that has more than its best checkpoint (a run also deleted is not thinned).

    Raises:
        ProjectError: a run named is unknown or training now.
    """
    project_dir = Path(project_dir)
    runs = {run.name: run for run in runs_on_disk(project_dir)}
    for name in [*delete, *keep_best]:
        _run(project_dir, name)  # raises for an unknown run or one training now
    dropped = tuple(runs[name] for name in dict.fromkeys(delete))
    if every_run:
        thinned = tuple(run for run in thinnable(list(runs.values())) if run.name not in delete)
    else:
        thinned = tuple(runs[name] for name in dict.fromkeys(keep_best)
                        if name not in delete and runs[name].freed_by_keeping_best)
    return FreePlan(dropped, thinned)


def free_space(project_dir: str | os.PathLike[str], plan: FreePlan) -> Freed:
    """Carry out a plan from :func:`plan_freeing`: delete its runs, then thin the others.

    Raises:
        ProjectError: a run started training or went away since the plan (what was done before stays done).
    """
    freed, problems = 0, []
    for run in plan.delete:
        done = delete_run(project_dir, run.name)
        freed, problems = freed + done.bytes, problems + list(done.problems)
    for run in plan.keep_best:
        _kept, done = keep_only_best(project_dir, run.name)
        freed, problems = freed + done.bytes, problems + list(done.problems)
    return Freed(freed, tuple(problems))


def _finish_earlier_deletes(runs: Path) -> list[str]:
    """Remove what an interrupted delete left; returns the sentences of what could not be removed."""
    left = []
    for folder in runs.glob(f"{DELETING}*"):
        problem = _remove(folder)
        if problem:
            left.append(problem)
    return left


def _remove(path: Path) -> str | None:
    if path.is_symlink():  # a run that is a link: remove the link, never what it points at
        try:
            path.unlink()
        except OSError as exc:
            return f"Could not delete {path}: {exc.strerror or exc}."
        return None
    return folders.remove_tree(path)


def delete_run(project_dir: str | os.PathLike[str], name: str) -> Freed:
    """Delete the run ``name`` and everything in it (its checkpoints, logs and the judge's takes).

    Raises:
        ProjectError: no such run, or it is training now (nothing is deleted then).
    """
    project_dir = Path(project_dir)
    folder = _run(project_dir, name)
    size = 0 if folder.is_symlink() else tree_bytes(folder)
    hidden = folder.with_name(f"{DELETING}{name}-{uuid.uuid4().hex[:8]}")
    try:
        folders.rename(folder, hidden)  # retried while Windows holds a file in it (a take playing, a loaded model)
    except OSError as exc:
        why = exc.reason if isinstance(exc, folders.FileInUseError) else exc.strerror or exc
        raise ProjectError(f"Could not delete the run '{name}': {why}. Nothing was deleted.") from None
    problems = tuple(_finish_earlier_deletes(hidden.parent))
    return Freed(size - (tree_bytes(hidden) if hidden.exists() and not hidden.is_symlink() else 0), problems)


def keep_only_best(project_dir: str | os.PathLike[str], name: str) -> tuple[CheckpointInfo, Freed]:
    """Delete every checkpoint of the run ``name`` except the one Preview and Export use, which is marked kept.
    The run's logs and the judge's scores stay. Returns the kept checkpoint and what was freed.

    Raises:
        ProjectError: no such run, it is training now, or it has no complete checkpoint (nothing is deleted).
    """
    project_dir = Path(project_dir)
    folder = _run(project_dir, name)
    try:
        kept = best_choice(project_dir, run=name).checkpoint
    except CheckpointError as exc:
        raise ProjectError(str(exc)) from None
    (kept.path / KEEP_MARK).write_text("kept when the run's other checkpoints were deleted to free space\n",
                                       encoding="utf-8")
    freed, problems = 0, []
    root = folder / CHECKPOINTS
    for other in [*root.glob("step_*"), *root.glob(".tmp-*")]:
        if other.name == kept.path.name:
            continue
        size = tree_bytes(other)
        problem = _remove(other)
        if problem:
            problems.append(problem)
        else:
            freed += size
    return kept, Freed(freed, tuple(problems))
