"""Export a trained voice as a model folder another program loads: the neutral half.

The options, the result, the errors and the folder-name rules are the same for every engine; the engine that
trained the checkpoint writes the folder (for XTTS v2: :mod:`alltalk_gui.core.engines.xtts.export`, with the
formats ``alltalk`` and ``coqui``). :func:`export_destination` says where an export goes before it runs: a format
AllTalk loads lands in the engine's own ``models/<folder>`` of the AllTalk folder the user chose
(``Engine.export_folders``), named as the engine names it (``Engine.export_target``).
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from alltalk_gui.core import atomic
from alltalk_gui.core.portability import portable_names
from alltalk_gui.core.engine_api.engine import engine_names, get_engine
from alltalk_gui.core.training.checkpoints import CheckpointInfo

FORMATS = tuple(dict.fromkeys(f for name in engine_names() for f in get_engine(name).export_formats))
"""Every engine's formats, for the command line's choices (each engine lists its own in ``export_formats``:
XTTS v2 alltalk and coqui, F5-TTS alltalk and f5); :func:`export_voice` refuses one the checkpoint's engine lacks."""

ProgressCallback = Callable[[str, float], None]


class ExportError(Exception):
    """The export cannot be done; nothing was written (or what was written has been removed)."""


@dataclass
class ExportOptions:
    format: str = "alltalk"
    name: str = ""                      # the folder name under the output folder; "" = the project's name
    half: bool = False                  # store weights as float16: half the size, inaudibly different
    training_files: bool = False        # include dvae.pth + mel_stats.pth (always included for AllTalk)
    references: list[Path] = field(default_factory=list)  # voice samples copied into wavs/
    # Each reference's words where the user gave them (str(path) -> text), for an engine that exports them
    # (one whose reference is a clip with its words); the others' are looked up (voice.references.reference_text).
    reference_texts: dict[str, str] = field(default_factory=dict)
    # The speaker's name or the voice's description, for an engine whose reference is one of those.
    voice_prompt: str = ""
    overwrite: bool = False             # replace a non-empty target folder


@dataclass
class ExportResult:
    folder: Path
    files: list[str]                    # relative paths, sorted
    model_bytes: int
    warnings: list[str]


# The recipe's settings an export records (export_info.json, the README's table), in this order, where the run saved
# them; each engine's own settings (TrainConfig.options) follow.
RECIPE_SETTINGS = ("profile", "epochs", "max_steps", "batch_size", "grad_accum_steps", "lr", "lr_batch", "optimizer",
                   "lr_schedule", "warmup_steps", "weight_decay", "max_grad_norm", "mixed_precision",
                   "gradient_checkpointing", "lora_rank", "lora_alpha", "lora_dropout", "max_audio_seconds",
                   "min_audio_seconds", "seed", "language")


def training_settings(checkpoint: CheckpointInfo) -> dict[str, Any]:
    """What decided what the checkpoint's run learnt, for an export to say: the recipe's settings the run saved
    (:data:`RECIPE_SETTINGS`), then its engine's own."""
    saved = checkpoint.config
    return {**{key: saved[key] for key in RECIPE_SETTINGS if key in saved}, **checkpoint.engine_options().to_dict()}


def settings_rows(settings: dict[str, Any]) -> str:
    """``settings`` as the rows of a two-column Markdown table, one a line ("| lr | 0.0001 |")."""
    return "\n".join(f"| {key} | {value} |" for key, value in settings.items())


def disk_free_bytes(path: Path) -> int:
    """Free bytes on the file system holding ``path`` (a function so tests can simulate a full disk)."""
    return shutil.disk_usage(path).free


def safe_name(name: str) -> str:
    """A folder name from a voice name: letters, digits, ``-`` and ``_``; spaces become ``_`` and apostrophes go
    ("Ada's voice" -> ``Adas_voice``, not ``Ada_s_voice``); a name Windows keeps for a device gets ``_``.

    Raises:
        ExportError: nothing usable is left.
    """
    cleaned = re.sub(r"[^\w\-]+", "_", re.sub(r"['’`]", "", name.strip()), flags=re.UNICODE).strip("._")
    if not cleaned:
        raise ExportError(f"'{name}' cannot be used as a folder name; use letters, digits, '-' or '_'.")
    return portable_names.portable_name(cleaned[:80])  # "CON" -> "CON_": a device name on Windows


def alltalk_root(folder: str | os.PathLike[str]) -> Path | None:
    """The AllTalk folder (``alltalk_tts``, the one holding ``models/``) that ``folder`` is or lies in: ``folder``
    itself when it holds ``models/``, or the folder above ``models`` when ``folder`` is ``models/`` or a folder in it
    (``models/xtts``, ``models/xtts/<voice>``: a folder people chose for an earlier export). None otherwise."""
    folder = Path(folder).expanduser().absolute()
    if (folder / "models").is_dir():
        return folder
    for above in (folder, *list(folder.parents)[:2]):
        if above.name == "models":
            return above.parent
    return None


@dataclass(frozen=True)
class Destination:
    """Where an export goes: ``out_dir`` for the engine's export, ``folder`` the one it will write, and a warning
    (``""`` when none) when AllTalk will not find it there, saying where AllTalk looks."""

    out_dir: Path
    folder: Path
    warning: str = ""


def export_destination(engine, chosen: str | os.PathLike[str], options: ExportOptions,
                       project_name: str = "") -> Destination:
    """Where an export of ``engine``'s voice in ``options.format`` goes when the user chose the folder ``chosen``.

    A format AllTalk loads (``engine.export_folders``) goes into the engine's own folder of the AllTalk folder
    ``chosen`` is or lies in (so an F5-TTS export lands in ``models/f5tts`` also when ``models/xtts`` was chosen for
    an earlier XTTS export); outside an AllTalk folder it goes into ``chosen`` with a warning. Another format goes
    into ``chosen``, with a warning when that is a folder AllTalk loads voices from (AllTalk would not load it).

    Raises:
        ExportError: no usable name.
    """
    chosen = Path(chosen).expanduser().absolute()
    root = alltalk_root(chosen)
    own = engine.export_folders.get(options.format)
    alltalk_titles = [engine.export_format_titles.get(f, f) for f in engine.export_folders]
    warning = ""
    if own is not None and root is not None:
        out_dir = root.joinpath(*own.split("/"))
    else:
        out_dir = chosen
        if own is not None:
            warning = (f"{chosen} is not an AllTalk folder (it has no models/ folder). AllTalk looks for {engine.title} "
                       f"voices in its own {own}/: choose the AllTalk folder (alltalk_tts) to export there.")
        elif root is not None and alltalk_titles:
            where = root.joinpath(*next(iter(engine.export_folders.values())).split("/"))
            warning = (f"AllTalk does not load the {engine.export_format_titles.get(options.format, options.format)} "
                       f"format: for AllTalk, choose {alltalk_titles[0]}, which goes into {where}.")
    return Destination(out_dir, engine.export_target(out_dir, options, project_name), warning)


def export_voice(checkpoint: CheckpointInfo, out_dir: str | os.PathLike[str], options: ExportOptions,
                 project_name: str = "", progress: ProgressCallback | None = None) -> ExportResult:
    """Write the voice of ``checkpoint`` into ``out_dir/<name>``, in ``options.format``, by the engine that
    trained it.

    Args:
        checkpoint: the training checkpoint (:func:`alltalk_gui.core.training.checkpoints.resolve_checkpoint`).
        out_dir: the parent folder, e.g. AllTalk's ``models/xtts``; created if missing.
        options: format, name, precision, extra files, references, overwrite.
        project_name: used for the folder name when ``options.name`` is empty.
        progress: called with (what is being done, fraction 0-1).

    Raises:
        ExportError: unknown format, bad name, missing base-model file, non-empty target without
            ``overwrite``, not enough free space, a reference that cannot be read, or a write that failed (the
            partial export is removed; an existing target is left as it was).
    """
    engine = get_engine(checkpoint.engine)
    if options.format not in engine.export_formats:
        raise ExportError(f"{engine.title} cannot export the format '{options.format}'; use "
                          f"{' or '.join(engine.export_formats)}.")
    result = engine.export(checkpoint, out_dir, options, project_name=project_name, progress=progress)
    _write_report(checkpoint, result)
    return result


def _write_report(checkpoint: CheckpointInfo, result: ExportResult) -> None:
    """The judge's report beside the model (:mod:`alltalk_gui.core.voice.judge.report`). The model is already
    in place: a report that cannot be written is a warning, not a failed export."""
    from alltalk_gui.core.voice.judge.report import FILE, export_report

    try:
        atomic.write_json(result.folder / FILE, export_report(checkpoint))
        os.chmod(result.folder / FILE, 0o644)  # readable by AllTalk's user, as the model's files (publish.py)
    except OSError as exc:
        result.warnings.append(f"The judge's {FILE} could not be written: {exc}")
        return
    result.files = sorted({*result.files, FILE})
