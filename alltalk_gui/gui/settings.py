"""The app's own remembered state (QSettings): recent projects, last folders, window geometry."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings

MAX_RECENT = 8


def settings() -> QSettings:
    return QSettings()


def recent_projects() -> list[str]:
    """Recent project folders, newest first, leaving out folders that no longer hold a project."""
    value = settings().value("projects/recent", [])
    if isinstance(value, str):  # QSettings returns a lone string for a one-item list on some back-ends
        value = [value]
    return [p for p in (value or []) if (Path(p) / "project.json").is_file()]


def add_recent_project(folder: str | Path) -> None:
    folder = str(Path(folder).absolute())
    items = [folder] + [p for p in recent_projects() if p != folder]
    settings().setValue("projects/recent", items[:MAX_RECENT])


def last_folder(kind: str) -> str:
    return str(settings().value(f"folders/{kind}", str(Path.home())))


def set_last_folder(kind: str, folder: str | Path) -> None:
    settings().setValue(f"folders/{kind}", str(folder))


def use_settings_folder(folder: str | Path) -> None:
    """Keep all QSettings in INI files under ``folder`` (tests and screenshot scripts: the user's own settings
    stay untouched)."""
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(folder))
