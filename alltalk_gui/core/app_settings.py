"""Application-wide settings (not per project) as a small JSON file in the user's config folder.

Qt-free so the CLI and the training child can read it. The folder is ``$ALLTALK_GUI_CONFIG_DIR`` when set
(tests point it at a temporary folder), else the platform's config folder: ``%APPDATA%\\AllTalkGUI`` on
Windows, ``~/Library/Application Support/AllTalkGUI`` on macOS, ``$XDG_CONFIG_HOME/alltalk_gui`` (default
``~/.config/alltalk_gui``) elsewhere. Writes are atomic; an unreadable file is never overwritten silently.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from alltalk_gui.core import atomic

SETTINGS_FILE = "settings.json"


class SettingsError(RuntimeError):
    """The settings file exists but cannot be read; it is left as it is."""


def config_dir() -> Path:
    override = os.environ.get("ALLTALK_GUI_CONFIG_DIR")
    if override:
        return Path(override).expanduser()
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA", Path.home() / "AppData" / "Roaming")) / "AllTalkGUI"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "AllTalkGUI"
    return Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config")) / "alltalk_gui"


def settings_path() -> Path:
    return config_dir() / SETTINGS_FILE


def load() -> dict[str, Any]:
    """All settings; an empty dict when the file does not exist yet.

    Raises:
        SettingsError: the file exists but is not a JSON object.
    """
    path = settings_path()
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SettingsError(f"{path} cannot be read ({exc}); fix or delete it. It was left as it is.") from exc
    if not isinstance(data, dict):
        raise SettingsError(f"{path} must hold a JSON object. It was left as it is.")
    return data


def get(key: str, default: Any = None) -> Any:
    return load().get(key, default)


def set_value(key: str, value: Any) -> None:
    """Set one key and write the file atomically (other keys are kept)."""
    data = load()
    data[key] = value
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_json(path, data)


def licence_accepted(licence_id: str) -> bool:
    """Whether the user has accepted the licence ``licence_id`` (e.g. ``"coqui-cpml"``)."""
    return bool(load().get("licences", {}).get(licence_id))


def accept_licence(licence_id: str) -> None:
    """Record the user's acceptance of ``licence_id`` with a timestamp."""
    licences = dict(load().get("licences", {}))
    licences[licence_id] = {"accepted_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    set_value("licences", licences)
