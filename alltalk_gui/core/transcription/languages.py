"""Whisper's language codes <-> project codes, and the note shown when Whisper hears another language.

Whisper names Chinese ``zh`` where XTTS and the project say ``zh-cn``; every other XTTS language has the same
code in both. ``auto`` lets Whisper detect the language of each recording.
"""

from __future__ import annotations

from alltalk_gui.core.engine_api import languages

AUTO = "auto"
_TO_WHISPER = {"zh-cn": "zh"}
_FROM_WHISPER = {whisper: project for project, whisper in _TO_WHISPER.items()}


def to_whisper(code: str) -> str | None:
    """The Whisper code for a project code or ``auto`` (None: let Whisper detect).

    Raises:
        languages.UnknownLanguage: neither ``auto`` nor an XTTS language.
    """
    if str(code).strip().lower() == AUTO:
        return None
    project = languages.normalise(code)
    return _TO_WHISPER.get(project, project)


def whisper_option(code: str) -> str:
    """What to ask Whisper for, given what a user typed: ``auto``, a project code (``zh-cn`` -> ``zh``) or a
    Whisper code (returned lower-cased, for :func:`transcribe.check_language` to judge)."""
    try:
        return to_whisper(code) or AUTO
    except languages.UnknownLanguage:
        return str(code).strip().lower()


def from_whisper(code: str) -> str:
    """The project code for a Whisper code (``zh`` -> ``zh-cn``); a language XTTS lacks is returned as it is."""
    code = str(code).strip().lower()
    return _FROM_WHISPER.get(code, code)


def detected_note(project_language: str, detected: dict[str, str]) -> str | None:
    """A sentence when Whisper detected a language other than the project's in some recordings, else None.

    Args:
        project_language: the project's code (``zh-cn``...).
        detected: recording name -> the Whisper code it detected.
    """
    try:
        wanted = languages.normalise(project_language)
    except languages.UnknownLanguage:
        return None
    other = {name: from_whisper(code) for name, code in detected.items() if code and from_whisper(code) != wanted}
    if not other:
        return None
    heard = ", ".join(f"{name} sounds like {_name(code)}" for name, code in sorted(other.items()))
    return (f"Whisper detected another language than the project's {_name(wanted)}: {heard}. Check the text, or "
            f"transcribe with the language set to {wanted}.")


def _name(code: str) -> str:
    try:
        return languages.language(code).label
    except languages.UnknownLanguage:
        return f"'{code}' (not one of the app's languages)"
