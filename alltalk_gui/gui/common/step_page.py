"""The one interface between the main window and the pages of the steps (Import, Transcribe & Edit, Train, Preview).

The main window holds its pages as :class:`StepPage` and calls only these: it never asks a page whether it has
a method (``hasattr``) or reaches one by its index in a list.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Protocol, runtime_checkable

from alltalk_gui.core.project.folder import VoiceProject


class CloseAnswer(str, Enum):
    """The answer to closing the window while work runs."""

    STOP = "stop"      # stop everything (a training saves a checkpoint first) and close
    DETACH = "detach"  # a training goes on without the app (the rest stops) and the window closes
    KEEP = "keep"      # don't close: everything goes on


@runtime_checkable
class StepPage(Protocol):
    """A step's page. It is also a QWidget with a ``status_message = Signal(str)`` for the status bar."""

    status_message: Any  # Signal(str): a short message for the window's status bar

    def set_project(self, project: VoiceProject | None) -> None:
        """Show ``project`` (None: no project is open)."""
        ...

    def busy_message(self) -> str | None:
        """Why the project cannot be changed now (work the page runs that must end first), or None."""
        ...

    def close_work(self) -> str | None:
        """What closing the window would stop on this page, in a few words for the window's one question when
        several pages work ("a transcription: what it has done so far is lost"), or None."""
        ...

    def confirm_close(self, decided: CloseAnswer | None = None) -> bool:
        """The window is closing: ask about work the page runs (unless the window asked for all pages:
        ``decided``) and end it, waiting with the event loop running. False keeps the window open."""
        ...
