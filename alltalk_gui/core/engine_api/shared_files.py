"""Where a user's fine-tuned model folder can find the files only a base model ships.

A fine-tune written by another tool often holds the trained weights alone: AllTalk's and coqui's XTTS training
folders lack ``dvae.pth`` and ``mel_stats.pth``, F5-TTS's ``ckpts/<project>/`` lacks ``vocab.txt`` and the
Vocos vocoder, an Unsloth Orpheus folder lacks the SNAC codec. Those files are the same for every fine-tune of
the base model, so the one place to get them is the base model the user already chose for the engine (the app
settings' folder), or its download. :func:`where_to_get` says exactly that, naming the files and both folders;
the app never copies them itself (it writes nothing into a folder the user chose as a model). An engine may instead
read them from that base where they are (:func:`chosen_folders`): XTTS v2 does so for a training folder of coqui's
Trainer, Orpheus for a LoRA adapter.
"""

from __future__ import annotations

from pathlib import Path

from alltalk_gui.core import app_settings


def where_to_get(files: list[str], folder: Path, setting: str, title: str, engine: str) -> str:
    """One sentence: copy ``files`` (paths relative to a model folder) into ``folder`` from the engine's chosen
    base model (``setting`` in the app settings) when that folder has them all, else from its download (the
    ``download-base-model`` command for ``engine``, or the Train page's Download…)."""
    names = files[0] if len(files) == 1 else f"{', '.join(files[:-1])} and {files[-1]}"
    same = f"{names} {'is' if len(files) == 1 else 'are'} the same for every {title} fine-tune"
    base = setting_folder(setting)
    if base is not None and base.is_dir() and base.resolve() != folder.resolve() and all((base / f).is_file() for f in files):
        return f"{same}: copy {'it' if len(files) == 1 else 'them'} from your {title} base model in {base} into {folder}."
    return (f"{same}: copy {'it' if len(files) == 1 else 'them'} into {folder} from the {title} base model (get it "
            f"with 'alltalk-gui download-base-model DIR --engine {engine}' or the Train page's Download…).")


def previous_setting(setting: str) -> str:
    """The app-settings key that keeps an engine's base-model folder from before the last choice (``setting``):
    a fine-tune that is only an adapter (Orpheus's LoRA from Unsloth) chosen on the Train page replaces the
    setting, and still has to find the base model it goes on."""
    return f"{setting}_previous"


def remember_choice(setting: str, folder: Path) -> None:
    """Set the engine's base-model folder (``setting``) to ``folder``, keeping the one before under
    :func:`previous_setting`."""
    before = setting_folder(setting)
    chosen = str(Path(folder).absolute())
    if before is not None and str(before) != chosen:
        app_settings.set_value(previous_setting(setting), str(before))
    app_settings.set_value(setting, chosen)


def chosen_folders(setting: str) -> list[Path]:
    """The engine's base-model folder of the app settings, then the one chosen before it (where set)."""
    return [folder for key in (setting, previous_setting(setting)) if (folder := setting_folder(key)) is not None]


def setting_folder(key: str) -> Path | None:
    """The folder an app-settings ``key`` names (None: unset, or settings that cannot be read, which the first-run
    page explains)."""
    try:
        value = app_settings.get(key)
    except app_settings.SettingsError:
        return None
    return Path(str(value)).expanduser() if value else None


def has_file(folder: Path, pattern: str) -> bool:
    """Whether ``folder`` holds a file of ``pattern``, an entry of ``Engine.base_model_files``: a glob pattern, or
    alternatives joined by ``|`` (F5-TTS: ``model_*.safetensors|model_*.pt``, its own trainer's checkpoints)."""
    return any(p.is_file() for alternative in pattern.split("|") for p in folder.glob(alternative))


def in_words(patterns: tuple[str, ...] | list[str]) -> str:
    """``base_model_files`` entries for people: "model_*.safetensors or model_*.pt, vocab.txt"."""
    return ", ".join(pattern.replace("|", " or ") for pattern in patterns)

