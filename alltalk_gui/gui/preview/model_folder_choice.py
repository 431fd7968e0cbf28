"""The Preview page's model folders: any model folder of the project's engine to hear beside the project's
checkpoints (a fine-tune made with AllTalk, coqui, F5-TTS, Unsloth or Parler-TTS's own scripts, or an export of this
app), and to compare with them. Each side of the A/B has its own: the one that speaks (``model_folder``) and the
one it is compared with (``compare_folder``), so last week's export can be heard beside today's.

The engine checks a chosen folder in a worker (:func:`alltalk_gui.core.voice.preview.check_model_folder`, the
CLI's ``preview --model`` check: it may import torch and read the weights; another engine's model is named as
such), and the window stays responsive; a folder it refuses is explained by its own message and the previous choice
stays. A folder that passes is remembered for the project and engine in project.json
(``settings["preview"][key][engine]``) and checked again when the project is opened; one that has gone since (moved,
deleted, on a drive not plugged in) is said so and not offered, and stays remembered until another is chosen. A
folder the page refuses before any check (``refuse``: the folder the other side speaks with) is said so and never
loaded. The folder is only ever read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog, QWidget

from alltalk_gui.core.engine_api.engine import Engine
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.gui.common.failure import failure_message, log_failure
from alltalk_gui.gui.common.workers import Worker
from alltalk_gui.gui.preview.remembered_generation import save_quietly

SETTING = "preview"
KEY = "model_folder"             # the folder that speaks
COMPARE_KEY = "compare_folder"   # the folder it is compared with


def remembered_folder(project: VoiceProject | None, engine: str, key: str = KEY) -> Path | None:
    """The model folder remembered for ``engine`` in ``project`` (``key``: which side); None when none was chosen."""
    value = remembered_preview(project, key, engine)
    return Path(value) if value else None


def remember_folder(project: VoiceProject, engine: str, folder: Path, key: str = KEY) -> None:
    """Keep ``folder`` as ``engine``'s model folder of side ``key`` in ``project`` (saved unless the project is
    open read-only)."""
    remember_preview(project, key, engine, str(folder))


def remember_preview(project: VoiceProject, key: str, engine: str, value: str) -> None:
    """Keep ``value`` under ``settings["preview"][key][engine]`` (saved unless the project is open read-only)."""
    preview = dict(project.settings.get(SETTING) or {})
    values = preview.get(key) if isinstance(preview.get(key), dict) else {}
    if values.get(engine) == value:
        return
    preview[key] = {**values, engine: value}
    project.settings[SETTING] = preview
    save_quietly(project)


def remembered_preview(project: VoiceProject | None, key: str, engine: str) -> str:
    """What :func:`remember_preview` kept ("" when nothing)."""
    saved = ((project.settings.get(SETTING) or {}).get(key) or {}) if project is not None else {}
    value = saved.get(engine) if isinstance(saved, dict) else None
    return value if isinstance(value, str) else ""


def folder_names(folders: list[Path]) -> list[str]:
    """Each folder's name, with the folder above it where two share one (two exports of a voice often do:
    exports/2026-11-20/grandma and exports/2026-11-27/grandma read "2026-11-20/grandma", "2026-11-27/grandma")."""
    names = [folder.name for folder in folders]
    return [f"{folder.parent.name}/{folder.name}" if names.count(folder.name) > 1 else folder.name
            for folder in folders]


class ModelFolderChoice(QObject):
    """``changed`` fires when the accepted folder, the check under way or its message changed; ``accepted`` carries
    a folder the user chose that passed the engine's check (the page then speaks with it)."""

    changed = Signal()
    accepted = Signal(object)

    def __init__(self, parent: QWidget, key: str = KEY, purpose: str = "to hear",
                 refuse: Callable[[Path], str] | None = None) -> None:
        super().__init__(parent)
        self._parent = parent
        self.key = key                        # which side it is, in project.json
        self.purpose = purpose                # the folder picker's title: "A XTTS v2 model folder <purpose>"
        self.refuse = refuse                  # why the page will not have a folder before any check ("" if it will)
        self.project: VoiceProject | None = None
        self.engine: Engine | None = None
        self.folder: Path | None = None       # the folder that passed the check, offered on the page
        self.description = ""                 # the engine's words for it ("GPT with 30 layers, ...")
        self.checking: Path | None = None     # the folder being checked now
        self.message = ""                     # why the last folder cannot be used, or that it has gone
        self.check: Worker | None = None
        self._asked = 0                       # which check's answer is shown: only the latest one's

    def set_project(self, project: VoiceProject | None, engine: Engine) -> None:
        """The project's folder for ``engine``: offered once the engine has checked it again; said so when gone."""
        self.project, self.engine = project, engine
        self.folder, self.description, self.message, self.checking = None, "", "", None
        self._asked += 1  # an answer about the previous project's folder is dropped
        saved = remembered_folder(project, engine.name, self.key)
        if saved is not None and saved.is_dir():
            self._check(saved, chosen=False)
        elif saved is not None:
            self.message = (f"The model folder {saved} chosen for this project is not there any more (moved, "
                            "deleted, or on a drive that is not plugged in): choose it again.")
        self.changed.emit()

    def is_checking(self) -> bool:
        return self.checking is not None

    def choose(self) -> None:
        """Ask for a folder (opening where the last one was) and check it."""
        if self.engine is None:
            return
        near = self.folder or remembered_folder(self.project, self.engine.name, self.key)
        start = next((str(p) for p in (near, near and near.parent) if p is not None and p.is_dir()), str(Path.home()))
        folder = QFileDialog.getExistingDirectory(self._parent, f"A {self.engine.title} model folder {self.purpose}",
                                                  start)
        if not folder:
            return
        problem = self.refuse(Path(folder).absolute()) if self.refuse is not None else ""
        if problem:  # never checked nor loaded (the same folder on both sides of the A/B)
            self._asked += 1  # a check under way of an earlier choice is not shown either
            self.checking, self.message = None, problem
            self.changed.emit()
            return
        self._check(Path(folder).absolute(), chosen=True)

    def _check(self, folder: Path, chosen: bool) -> None:
        """The engine's check of ``folder`` in a worker; the GUI thread goes on."""
        engine, self._asked = self.engine, self._asked + 1
        asked = self._asked
        self.checking, self.message = folder, ""

        def job(_job) -> tuple[str, str]:
            from alltalk_gui.core.voice.preview import PreviewError, check_model_folder

            try:
                return check_model_folder(engine, folder), ""
            except PreviewError as exc:
                return "", str(exc)

        self.check = Worker(job, self)
        self.check.finished.connect(lambda answer: self._checked(asked, folder, chosen, answer))
        self.check.failed.connect(lambda trace: self._check_failed(asked, folder, chosen, trace))
        self.changed.emit()
        self.check.start()

    def _check_failed(self, asked: int, folder: Path, chosen: bool, trace: str) -> None:
        """The check stopped with an error nobody expected: its message in words, the traceback in the log (the
        refusal showed the traceback's last line, the exception's module path and all)."""
        log_failure(f"Checking the model folder {folder} stopped with an error", trace)
        self._checked(asked, folder, chosen, ("", f"{folder} could not be checked: {failure_message(trace)}"))

    def _checked(self, asked: int, folder: Path, chosen: bool, answer: tuple[str, str]) -> None:
        if asked != self._asked:  # the user chose again, or another project was opened meanwhile
            return
        description, problem = answer
        self.checking = None
        if problem:
            self.message = problem
        else:
            self.folder, self.description, self.message = folder, description, ""
            if self.project is not None and self.engine is not None:
                remember_folder(self.project, self.engine.name, folder, self.key)
        self.changed.emit()
        if chosen and not problem:
            self.accepted.emit(folder)
