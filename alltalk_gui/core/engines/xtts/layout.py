"""Which files an XTTS v2 model folder holds, and where each one is read from.

A model folder (a base model, a download, an export, AllTalk's compacted ``models/trainedmodel/``) holds
``model.pth``, ``config.json``, ``vocab.json``, ``dvae.pth`` and ``mel_stats.pth`` (``speakers_xtts.pth``
optionally), and every file is read from it. A fine-tune's folder may lack what only a base ships, ``dvae.pth`` and
``mel_stats.pth`` (xtts-finetune-webui's ``ready/`` folder has neither): those are read from the XTTS v2 base
model of the app settings, as below.

A **training folder of coqui's Trainer** (AllTalk's finetune writes one per run under
``finetune/<project>/training/XTTS_FT-<date>/``) is a model folder too. It has no ``model.pth``: its weights are
the Trainer's saves (``best_model.pth``, ``best_model_<step>.pth``, ``checkpoint_<step>.pth``: the whole
GPTTrainer state with its optimizer; :func:`trainer_weights` says which one is used), beside the run's
``config.json`` and ``vocab.json``. What it lacks (``dvae.pth``, ``mel_stats.pth``, the speakers file: the same for
every fine-tune of XTTS v2) is lent by the XTTS v2 base model of the app settings, the way an Orpheus LoRA adapter
finds its base (:func:`alltalk_gui.core.engine_api.shared_files.chosen_folders`: the folder chosen, or the one
chosen before it when the Train page's choice is this training folder). Nothing is copied: the app writes nothing
into a folder the user chose as a model.

**A run AllTalk is still training.** The Trainer writes into its folder as it goes: its log every few steps, and
after an evaluation a new ``best_model_<step>.pth`` (a new file; the older ones are then deleted) and
``best_model.pth``, which ``trainer.io.save_best_model`` *overwrites in place* (fsspec's local copy is
``shutil.copyfile``: the same file truncated and rewritten). A save is read memory-mapped (:mod:`.files`), and a
mapped file truncated under the reader is a crash (SIGBUS), not an error. So :func:`still_training` looks at when
the folder was last written (one ``stat`` per file): a folder written within :data:`QUIET_SECONDS` is taken for a
live run; :func:`model_files` then reads the newest ``best_model_<step>.pth`` (the same weights: ``best_model.pth``
is its copy), which the Trainer only ever creates whole and deletes (a deleted file stays readable while mapped on
Linux and macOS), and :meth:`StillTraining.refusal` is what training from such a folder answers (its weights
would change under the run); a preview speaks with the save as it is now. :func:`.files.read_model_state` checks that
the save did not change while it was read.

:func:`model_files` answers this from file names and dates alone (no file is opened); the checks that load tensors are
:func:`alltalk_gui.core.engines.xtts.files.validate_base_model`'s.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

BASE_MODEL_SETTING = "base_model_dir"  # the app settings' key of the base-model folder chosen for this engine
WEIGHTS_FILE = "model.pth"
REQUIRED_FILES = (WEIGHTS_FILE, "config.json", "vocab.json", "dvae.pth", "mel_stats.pth")
OPTIONAL_FILES = ("speakers_xtts.pth",)
# The same in every fine-tune of XTTS v2 (training never changes them): a fine-tune's folder gets them from its base.
BASE_ONLY_FILES = ("dvae.pth", "mel_stats.pth")
TRAINER_BEST = "best_model.pth"  # the Trainer's copy of its best save (what AllTalk's compact step reads)
# What a Trainer folder may borrow from the base model when it lacks it (the weights never: they are the run's).
LENDABLE_FILES = (*REQUIRED_FILES[1:], *OPTIONAL_FILES)

_STEP = re.compile(r"(best_model|checkpoint)_(\d+)\.pth")

# How long a training folder must have been left alone before it counts as a finished run. coqui's Trainer writes
# trainer_0_log.txt every print_step steps (AllTalk's finetune: 50; at up to ~5 s a step on a small card, about 4
# minutes apart) and writes nothing while it evaluates (print_eval=False; up to 256 clips), then the saves. Ten
# minutes covers those quiet spells; the price: a run that stopped (or a folder copied without its dates) a minute
# ago waits nine more.
QUIET_SECONDS = 600.0


def trainer_checkpoints(folder: Path) -> list[str]:
    """The checkpoints coqui's Trainer writes into a training folder (AllTalk's
    ``finetune/<project>/training/XTTS_FT-*/``): ``best_model.pth``, ``best_model_<step>.pth``,
    ``checkpoint_<step>.pth``."""
    return sorted(p.name for pattern in ("best_model*.pth", "checkpoint_*.pth") for p in folder.glob(pattern)
                  if p.is_file())


def trainer_weights(folder: Path, *, still_written: bool = False) -> Path | None:
    """The Trainer save a training folder is used with: ``best_model.pth`` (the Trainer's copy of its best), else the
    ``best_model_<step>.pth`` of the highest step, else the ``checkpoint_<step>.pth`` of the highest step (the
    newest: the Trainer keeps a few); None when the folder has none. ``still_written`` (a run AllTalk is still
    training, :func:`still_training`): ``best_model.pth`` only when there is no other save, as the Trainer
    overwrites it in place (module text)."""
    if (folder / TRAINER_BEST).is_file() and not still_written:
        return folder / TRAINER_BEST
    steps: dict[str, list[tuple[int, Path]]] = {"best_model": [], "checkpoint": []}
    for name in trainer_checkpoints(folder):
        if (match := _STEP.fullmatch(name)) is not None:
            steps[match.group(1)].append((int(match.group(2)), folder / name))
    found = max(steps["best_model"], default=None) or max(steps["checkpoint"], default=None)
    if found is None and (folder / TRAINER_BEST).is_file():
        return folder / TRAINER_BEST
    return found[1] if found else None


@dataclass(frozen=True)
class StillTraining:
    """A training folder that AllTalk (coqui's Trainer) is still writing: the file written last, how long ago."""

    folder: Path
    newest: str     # the name of the folder's file written last
    age_s: float    # seconds since then (0 for a date a little ahead of this computer's clock: a network drive)

    def said(self) -> str:
        """'AllTalk is still training in <folder> (trainer_0_log.txt was written 12 s ago)'."""
        return f"AllTalk is still training in {self.folder} ({self.newest} was written {_ago(self.age_s)})"

    def refusal(self) -> str:
        """Why a run does not start from this folder, and what to do."""
        return (f"{self.said()}; wait for it to finish or choose a finished run. A run started from this folder would "
                "start from weights the Trainer is still rewriting; the app takes the folder for a finished run once "
                f"nothing in it has changed for {QUIET_SECONDS / 60:.0f} minutes.")


def still_training(folder: Path, now: float | None = None) -> StillTraining | None:
    """Whether AllTalk is still training in the Trainer folder ``folder``: a file in it (the log, a save, the
    tensorboard events) was written within :data:`QUIET_SECONDS` of ``now`` (default: the clock). One ``stat`` per
    file: a run's folder holds a handful."""
    now = time.time() if now is None else now
    newest: tuple[float, str] | None = None
    with os.scandir(folder) as entries:
        for entry in entries:
            try:
                if entry.is_file():
                    newest = max(newest or (0.0, ""), (entry.stat().st_mtime, entry.name))
            except FileNotFoundError:  # a save the Trainer deleted meanwhile
                continue
    if newest is None or abs(now - newest[0]) >= QUIET_SECONDS:  # far ahead of the clock: not a live run's date
        return None
    return StillTraining(folder, newest[1], max(now - newest[0], 0.0))


def _ago(seconds: float) -> str:
    return f"{seconds:.0f} s ago" if seconds < 90 else f"{seconds / 60:.0f} minutes ago"


@dataclass(frozen=True)
class ModelFiles:
    """Where each file of an XTTS v2 model folder is read from (see the module text)."""

    folder: Path
    weights: Path               # model.pth, or the Trainer save a training folder is used with
    base: Path | None = None    # the base-model folder lending what a training folder lacks
    lent: tuple[str, ...] = ()  # the files read from ``base``
    # A training folder AllTalk is still writing (:func:`still_training`), as it was when this was answered.
    training: StillTraining | None = field(default=None, compare=False)

    @property
    def is_trainer_folder(self) -> bool:
        return self.weights.name != WEIGHTS_FILE

    def path(self, name: str) -> Path:
        """Where the folder's file ``name`` (one of :data:`REQUIRED_FILES` or :data:`OPTIONAL_FILES`) is read."""
        if name == WEIGHTS_FILE:
            return self.weights
        return (self.base if self.base is not None and name in self.lent else self.folder) / name

    def missing(self) -> list[str]:
        """The required files found nowhere (neither here nor lent)."""
        return [name for name in REQUIRED_FILES if not self.path(name).is_file()]

    def note(self) -> str:
        """Which files a training folder is used with, and what a base lends, in words ("" for a model folder that
        holds all its files)."""
        said = [f"weights from {self.weights.name} (a save of coqui's Trainer)"] if self.is_trainer_folder else []
        if self.training is not None:
            said[0] = (f"{self.training.said().replace(str(self.folder), 'this folder')}: {said[0]} as it is now; "
                       "wait for that run to finish before training from it")
        if self.lent and self.base is not None:
            said.append(f"{_names(list(self.lent))} from the XTTS v2 base model in {self.base}")
        return "; ".join(said)


def model_files(folder: str | os.PathLike[str]) -> ModelFiles:
    """Where each file of ``folder`` is read from: all from the folder; for a fine-tune's folder that lacks the files
    only a base ships (xtts-finetune-webui's ``ready/`` has no ``dvae.pth`` or ``mel_stats.pth``) those from the
    base; for a training folder of coqui's Trainer (no ``model.pth``, a Trainer save) its save, its own files, and
    what it lacks from the base (module text); for one AllTalk is still training, the save it does not rewrite in
    place and :attr:`ModelFiles.training`."""
    folder = Path(folder)
    training = None
    if (folder / WEIGHTS_FILE).is_file():
        weights, lendable = folder / WEIGHTS_FILE, BASE_ONLY_FILES  # its own config, vocab and speakers
    elif (trainer := trainer_weights(folder)) is not None:
        training = still_training(folder)
        weights, lendable = (trainer_weights(folder, still_written=True) or trainer) if training else trainer, \
            LENDABLE_FILES
    else:
        return ModelFiles(folder, folder / WEIGHTS_FILE)
    wanted = [name for name in lendable if not (folder / name).is_file()]
    if not wanted:
        return ModelFiles(folder, weights, training=training)
    needed = [name for name in wanted if name in REQUIRED_FILES]
    base = next((b for b in lending_bases(folder) if all((b / name).is_file() for name in needed)), None)
    lent = tuple(name for name in wanted if base is not None and (base / name).is_file())
    return ModelFiles(folder, weights, base if lent else None, lent, training)


def lending_bases(folder: Path) -> list[Path]:
    """The XTTS v2 base-model folders of the app settings that can lend files to the fine-tune's folder ``folder``:
    existing, not ``folder`` itself, and whole model folders (with a ``model.pth``), not other training folders."""
    from alltalk_gui.core.engine_api.shared_files import chosen_folders

    here = folder.resolve()
    return [base for base in chosen_folders(BASE_MODEL_SETTING)
            if base.is_dir() and base.resolve() != here and (base / WEIGHTS_FILE).is_file()]


def trainer_folder_message(files: ModelFiles, missing: list[str]) -> str:
    """Why a training folder of coqui's Trainer cannot be used yet: the files it lacks that no base lends, where
    the app looked, and the two ways out (choose the base, or copy the files in)."""
    from alltalk_gui.core.engine_api.shared_files import chosen_folders

    folder, names = files.folder, _names(missing)
    chosen = chosen_folders(BASE_MODEL_SETTING)
    others = [base for base in chosen if base.resolve() != folder.resolve()] if folder.is_dir() else chosen
    if not others:
        where = "no XTTS v2 base model is set in the app settings"
    elif not others[0].is_dir():
        where = f"the XTTS v2 base model of the app settings, {others[0]}, does not exist"
    else:
        them = "it" if len(missing) == 1 else "them all"
        where = f"the XTTS v2 base model of the app settings, {others[0]}, does not have {them}"
    return (f"{folder} is a training folder of coqui's Trainer (as AllTalk's finetune writes under "
            f"finetune/<project>/training/); the app uses its {files.weights.name}, but it lacks {names}, which "
            f"{'comes' if len(missing) == 1 else 'come'} from the XTTS v2 base model it was trained from, and {where}. "
            "Choose that base model (the Train page's Choose folder… or 'alltalk-gui download-base-model DIR "
            f"--engine xtts'), then this folder again; or copy {names} into {folder} (AllTalk keeps copies in "
            "finetune/<project>/chkptandnorm/).")


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
