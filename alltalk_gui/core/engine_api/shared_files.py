"""Where a user's fine-tuned model folder can find the files only a base model ships.

A fine-tune written by another tool often holds the trained weights alone: AllTalk's and coqui's XTTS training
folders lack ``dvae.pth`` and ``mel_stats.pth``, F5-TTS's ``ckpts/<project>/`` lacks ``vocab.txt`` and the
Vocos vocoder, an Unsloth Orpheus folder lacks the SNAC codec. Those files are the same for every fine-tune of
the base model, so the one place to get them is the base model the user already chose for the engine (the app
settings' folder), or its download. :func:`where_to_get` says exactly that, naming the files and both folders;
the app never copies them itself (it writes nothing into a folder the user chose as a model).
"""

from __future__ import annotations

from pathlib import Path

from alltalk_gui.core import app_settings


def where_to_get(files: list[str], folder: Path, setting: str, title: str, download: str) -> str:
    """One sentence: copy ``files`` (paths relative to a model folder) into ``folder`` from the engine's chosen
    base model (``setting`` in the app settings) when that folder has them all, else from ``download``."""
    names = files[0] if len(files) == 1 else f"{', '.join(files[:-1])} and {files[-1]}"
    same = f"{names} {'is' if len(files) == 1 else 'are'} the same for every {title} fine-tune"
    base = _chosen_base(setting)
    if base is not None and base.resolve() != folder.resolve() and all((base / f).is_file() for f in files):
        return f"{same}: copy {'it' if len(files) == 1 else 'them'} from your {title} base model in {base} into {folder}."
    return f"{same}: copy {'it' if len(files) == 1 else 'them'} from the {title} base model ({download}) into {folder}."


def _chosen_base(setting: str) -> Path | None:
    try:
        value = app_settings.get(setting)
    except app_settings.SettingsError:
        return None
    return Path(value) if value and Path(value).is_dir() else None
