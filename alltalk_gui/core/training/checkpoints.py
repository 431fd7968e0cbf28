"""Find a project's training checkpoints and pick one: ``latest``, ``best`` or a path.

Training (:mod:`alltalk_gui.core.training.loop`) writes each checkpoint as ``runs/<run>/checkpoints/step_N/``: the GPT
weights as ``model.safetensors`` (accelerate's ``save_state``; an FSDP run's sharded save writes the folder
``pytorch_model_fsdp_0/`` instead, complete once torch's checkpoint writer put its ``.metadata`` there), optimizer state, ``train_config.json`` and, last
of all, ``train_state.json``, whose presence marks the checkpoint complete. Preview and export only need the
GPT weights plus the base model named in ``train_config.json``; this module reads those two JSON files and
nothing else, so it needs neither torch nor the model.

"best" means the lowest eval loss among the checkpoints of the chosen run that were taken right after an
eval (the epoch-end ones). Eval losses of different runs are not compared: a run may use another dataset. It is
the default for preview and export (:func:`default_checkpoint`).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alltalk_gui.core import safe_paths
from alltalk_gui.core.engine_api.engine import DEFAULT_ENGINE, get_engine
from alltalk_gui.core.training.saved_config import upgraded

# The run-folder layout that alltalk_gui.core.training.loop writes (it imports these names from here: this module needs
# no torch, so the GUI can list checkpoints without loading it).
CHECKPOINTS = "checkpoints"
STATE_FILE = "train_state.json"
CONFIG_FILE = "train_config.json"
WEIGHTS_FILE = "model.safetensors"  # what accelerate's save_state names the (single) prepared model
FSDP_WEIGHTS = "pytorch_model_fsdp_0"  # what it names that model's folder under FSDP's SHARDED_STATE_DICT
FSDP_DONE = ".metadata"  # torch.distributed.checkpoint writes it after every shard: a sharded save is complete
# A checkpoint folder holding this file is never pruned: the checkpoint judge marks its choice so (the loop keeps
# only the newest checkpoints and the best by eval loss otherwise).
KEEP_MARK = "keep"
CHOICES = ("latest", "best")
_CHECKPOINT_NAME = re.compile(r"step_\d{1,12}")  # what the loop names a checkpoint folder (step_0000100)


class CheckpointError(Exception):
    """No usable checkpoint: none yet, an unknown name, or a checkpoint whose files are missing."""


@dataclass(frozen=True)
class CheckpointInfo:
    """One complete training checkpoint."""

    path: Path
    run: str
    step: int
    epoch: int
    eval_loss: float | None  # the eval loss measured at this step, if there was an eval
    base_model_dir: Path
    language: str
    config: dict[str, Any]  # the run's TrainConfig as saved in the checkpoint (in today's shape: config.upgraded)

    @property
    def weights(self) -> Path:
        return self.path / WEIGHTS_FILE

    @property
    def engine(self) -> str:
        """The engine that trained it (runs from before engines were named are XTTS v2's)."""
        return str(self.config.get("engine") or DEFAULT_ENGINE)

    def engine_options(self) -> Any:
        """The engine's own training settings the run used (its ``Engine.train_options``, defaults filled in).

        Raises:
            alltalk_gui.core.engine_api.engine.EngineError: the engine is not installed.
            alltalk_gui.core.engine_api.options.OptionError: the saved options do not fit the engine's.
        """
        return get_engine(self.engine).train_options.from_dict(self.config.get("options") or {})

    @property
    def label(self) -> str:
        loss = f", eval loss {self.eval_loss:.3f}" if self.eval_loss is not None else ""
        return f"{self.run} · step {self.step}{loss}"


def read_checkpoint(folder: str | os.PathLike[str]) -> CheckpointInfo:
    """Describe the checkpoint in ``folder``.

    Raises:
        CheckpointError: not a complete checkpoint (no train_state.json, train_config.json or weights).
    """
    folder = Path(folder).expanduser().absolute()
    if not folder.is_dir():
        raise CheckpointError(f"{folder} is not a checkpoint folder (it does not exist).")
    # The weights: one file, or an FSDP run's sharded folder (whose .metadata is written after all its shards).
    sharded = Path(FSDP_WEIGHTS, FSDP_DONE)
    weights = sharded if (folder / FSDP_WEIGHTS).is_dir() else Path(WEIGHTS_FILE)
    for name in (STATE_FILE, CONFIG_FILE, weights):
        if not (folder / name).is_file():
            raise CheckpointError(
                f"{folder} is not a complete training checkpoint: {name} is missing. Pick a folder "
                f"runs/<run>/{CHECKPOINTS}/step_N of a project."
            )
    state = read_state(folder)
    try:
        config = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"The checkpoint {folder} cannot be read: {exc}") from exc
    if not isinstance(config, dict) or not isinstance(config.get("base_model_dir", ""), str) or not isinstance(
            config.get("language") or "", str):
        raise CheckpointError(f"{folder / CONFIG_FILE} must hold an object with text values for base_model_dir "
                              "and language. It was left as it is.")
    config = upgraded(config)
    step = int(state.get("global_step", 0))
    eval_loss = next((float(h["loss"]) for h in state.get("history", []) if h.get("step") == step), None)
    run = folder.parent.parent.name if folder.parent.name == CHECKPOINTS else folder.parent.name
    return CheckpointInfo(
        path=folder, run=run, step=step, epoch=int(state.get("epoch", 0)), eval_loss=eval_loss,
        base_model_dir=Path(config.get("base_model_dir", "")).expanduser(),
        language=str(config.get("language") or ""), config=config,
    )


# What the training loop writes into train_state.json: key -> accepted JSON types (None: not measured yet).
_STATE_TYPES: dict[str, tuple[type, ...]] = {
    "global_step": (int,), "epoch": (int,), "batches_done": (int,), "best_eval_loss": (int, float, type(None)),
    "best_checkpoint": (str, type(None)), "last_loss": (int, float, type(None)), "history": (list,),
    "schedule": (dict, type(None)),  # the learning-rate schedule (training/schedule.py), absent before it was saved
}


def read_state(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and type-check a checkpoint's train_state.json (the loop's position and its eval history).

    Raises:
        CheckpointError: unreadable, not JSON, not an object, an unknown key, or a value of the wrong type.
    """
    path = Path(folder) / STATE_FILE
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"The checkpoint {path.parent} cannot be read: {exc}") from exc
    if not isinstance(state, dict):
        raise CheckpointError(f"{path} must hold a JSON object, found {type(state).__name__}. It was left as it is.")
    for key, value in state.items():
        types = _STATE_TYPES.get(key)
        if types is None or not isinstance(value, types) or (isinstance(value, bool)):
            expected = "an unknown key" if types is None else f"of the wrong type ({type(value).__name__})"
            raise CheckpointError(f"{path}: '{key}' is {expected}. It was left as it is.")
    best = state.get("best_checkpoint")
    if best is not None and not _CHECKPOINT_NAME.fullmatch(best):  # joined to the run's folder by the loop
        raise CheckpointError(f"{path}: 'best_checkpoint' must name a checkpoint folder such as step_0000100, found "
                              f"{best[:40]!r}. It was left as it is.")
    history = state.get("history", [])
    if not all(isinstance(h, dict) and isinstance(h.get("step", 0), int)
               and isinstance(h.get("loss", 0.0), (int, float)) for h in history):
        raise CheckpointError(f"{path}: 'history' must be a list of objects with a whole-number 'step' and a "
                              "numeric 'loss'. It was left as it is.")
    if state.get("schedule") is not None:
        from alltalk_gui.core.training.schedule import Schedule

        try:
            Schedule.from_dict(state["schedule"])
        except TypeError as exc:
            raise CheckpointError(f"{path}: 'schedule' does not describe a learning-rate schedule ({exc}). "
                                  "It was left as it is.") from None
    return state


def run_checkpoints(run_dir: str | os.PathLike[str]) -> list[CheckpointInfo]:
    """The complete checkpoints of one run, oldest step first (half-written ``.tmp-*`` folders are skipped)."""
    root = Path(run_dir) / CHECKPOINTS
    if not root.is_dir():
        return []
    found = []
    for folder in root.glob("step_*"):
        if not safe_paths.is_inside(folder, root):  # a link in a shared project: its checkpoint is elsewhere
            continue
        try:
            found.append(read_checkpoint(folder))
        except CheckpointError:
            continue  # being written or damaged: never offered
    return sorted(found, key=lambda c: c.step)


def list_checkpoints(project_dir: str | os.PathLike[str]) -> list[CheckpointInfo]:
    """Every complete checkpoint of every run in ``project_dir/runs``, newest run last."""
    runs = Path(project_dir) / "runs"
    if not runs.is_dir():
        return []
    out: list[CheckpointInfo] = []
    for run in sorted(run_folders(runs), key=_run_time):
        out.extend(run_checkpoints(run))
    return out


def resolve_checkpoint(project_dir: str | os.PathLike[str], which: str = "latest",
                       run: str | None = None, engine: str | None = None) -> CheckpointInfo:
    """Pick a checkpoint.

    Args:
        project_dir: the voice project folder.
        which: ``latest`` (newest checkpoint of the newest run), ``best`` (lowest eval loss in that run), or a
            path: a checkpoint folder, or a run folder (its newest checkpoint).
        run: restrict ``latest``/``best`` to this run name.
        engine: restrict ``latest``/``best`` to runs of this engine (eval losses of two engines measure
            different things and are never compared).

    Raises:
        CheckpointError: there is no checkpoint yet, the run does not exist, no checkpoint has an eval loss
            (for ``best``), or the path is not a checkpoint.
    """
    project_dir = Path(project_dir)
    if which not in CHOICES:
        path = Path(which).expanduser()
        if not path.is_absolute() and not path.exists():
            path = project_dir / path
        if (path / CHECKPOINTS).is_dir():  # a run folder
            found = run_checkpoints(path)
            if not found:
                raise CheckpointError(f"The run {path} has no complete checkpoint yet.")
            return found[-1]
        return read_checkpoint(path)

    runs_dir = project_dir / "runs"
    if run is not None:
        if not (runs_dir / run).is_dir():
            known = sorted(p.name for p in runs_dir.iterdir() if p.is_dir()) if runs_dir.is_dir() else []
            raise CheckpointError(f"There is no run '{run}' in {runs_dir}. Runs: {', '.join(known) or 'none'}.")
        candidates = run_checkpoints(runs_dir / run)
    else:
        candidates = []
        for run_dir in sorted(run_folders(runs_dir), key=_run_time, reverse=True):
            candidates = [c for c in run_checkpoints(run_dir) if engine is None or c.engine == engine]
            if candidates:
                break
    if not candidates:
        which_runs = f"of a {engine} run " if engine is not None and run is None else ""
        raise CheckpointError(
            f"There is no training checkpoint {which_runs}in {runs_dir} yet. Train the voice first "
            "(the Train step, or: alltalk-gui train DIR)."
        )
    if which == "latest":
        return candidates[-1]
    evaluated = [c for c in candidates if c.eval_loss is not None]
    if not evaluated:
        raise CheckpointError(
            f"No checkpoint of run '{candidates[-1].run}' has an eval loss yet (evals run at the end of each "
            "epoch), so there is no 'best' one. Use 'latest' or let the run finish an epoch."
        )
    return min(evaluated, key=lambda c: (c.eval_loss, -c.step))


def default_checkpoint(project_dir: str | os.PathLike[str], run: str | None = None,
                       engine: str | None = None) -> CheckpointInfo:
    """What preview and export use unless told otherwise: the ``best`` checkpoint of the newest run (lowest eval
    loss, as AllTalk and xtts-finetune-webui export ``best_model.pth``), or its ``latest`` while no checkpoint has
    an eval loss. Eval loss on a few clips is only a rough guide; listening decides, so ``latest`` stays one
    choice away.

    Raises:
        CheckpointError: there is no checkpoint yet, or no such run.
    """
    try:
        return resolve_checkpoint(project_dir, "best", run, engine)
    except CheckpointError:
        return resolve_checkpoint(project_dir, "latest", run, engine)


def run_folders(runs: str | os.PathLike[str]) -> list[Path]:
    """The run folders in a project's ``runs/`` (none if it does not exist). A link that leads out of ``runs/``
    is left out: a shared project could point it at any folder, which a resumed run would write and prune. So are
    hidden folders: a run being deleted is renamed to one first (:mod:`alltalk_gui.core.voice.run_space`)."""
    runs = Path(runs)
    if not runs.is_dir():
        return []
    return [p for p in runs.iterdir()
            if p.is_dir() and not p.name.startswith(".") and safe_paths.is_inside(p, runs)]


def _run_time(run_dir: Path) -> float:
    """When a run last produced a checkpoint (its folder's modification time otherwise)."""
    times = []
    for path in [run_dir, *(run_dir / CHECKPOINTS).glob(f"step_*/{STATE_FILE}")]:
        try:
            times.append(path.stat().st_mtime)
        except OSError:  # pruned by a running training in the meantime
            continue
    return max(times, default=0.0)
