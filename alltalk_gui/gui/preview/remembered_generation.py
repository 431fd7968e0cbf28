"""A project's generation settings, remembered per engine in its project.json (``settings["generation"][engine]``):
the values the user changed from the defaults (F5-TTS's sampling steps chosen once are still chosen after a
restart: the walk of 2026-11-26 found them back at 32) and whether the advanced settings were open.

Only changed values are kept, so an untouched setting follows its default (the base model's, or what this computer
affords: :func:`alltalk_gui.core.voice.preview.affordable_on_cpu`). A project open read-only keeps them for the
session only."""

from __future__ import annotations

from typing import Any

from alltalk_gui.core.project.folder import ProjectError, VoiceProject

SETTING = "generation"
ADVANCED = "advanced_open"  # beside the values: whether the panel of advanced settings was open


def remembered(project: VoiceProject | None, engine: str) -> dict[str, Any]:
    """The values remembered for ``engine`` in ``project`` (names as the settings name them; ``{}`` when none)."""
    saved = (project.settings.get(SETTING) or {}).get(engine) if project is not None else None
    return dict(saved) if isinstance(saved, dict) else {}


def remember(project: VoiceProject | None, engine: str, values: dict[str, Any]) -> None:
    """Keep ``values`` for ``engine`` (replacing what was kept), saving project.json when that changes it."""
    if project is None or remembered(project, engine) == values:
        return
    generation = dict(project.settings.get(SETTING) or {})
    generation[engine] = dict(values)
    project.settings[SETTING] = generation
    save_quietly(project)


def save_quietly(project: VoiceProject) -> None:
    """Save project.json after a remembered choice changed, unless the project is open read-only; a failure keeps
    the choice for this session (the next change tries again) rather than interrupting the user."""
    if project.read_only:
        return
    try:
        project.save()
    except (ProjectError, OSError):
        pass
