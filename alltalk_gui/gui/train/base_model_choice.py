"""The Train page's base-model fact for the chosen engine: found, or what is missing, with "Choose folder…" and
"Download…" beside it.

Each engine remembers its own base-model folder in the app settings (``Engine.base_model_setting``:
``base_model_dir`` for XTTS v2, the first-run page's choice, and ``f5_base_model_dir`` for F5-TTS), so switching
engines never points one at the other's files. "Found" means the folder holds every file the engine names in
``base_model_files`` (patterns included, e.g. F5-TTS's ``model_*.safetensors``); the full check that loads
tensors is training's first step. A folder that lacks files is often a model the user fine-tuned with another
tool (AllTalk's or coqui's training folder, F5-TTS's ckpts/<project>/, Unsloth's LoRA adapter): the engine's own
check (``describe_base_model``, in a worker: it may import torch) then replaces the list with what the folder is
and where each missing file comes from. The widgets are placed by the page; ``changed`` fires when the folder changed.
"""

from __future__ import annotations

from pathlib import Path

from html import escape

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QFileDialog, QLabel, QPushButton, QWidget

from alltalk_gui.core import app_settings
from alltalk_gui.core.engine_api.shared_files import in_words, remember_choice, setting_folder
from alltalk_gui.core.engine_api.engine import DEFAULT_ENGINE, Engine, EngineError, engine_names, get_engine
from alltalk_gui.gui.common.base_model_download import BaseModelDownload
from alltalk_gui.gui.common.workers import Worker
from alltalk_gui.gui.train.setup_facts import base_model_found, missing_base_files, other_engine_of
from alltalk_gui.gui.common import status_colours




def _red() -> str:
    return status_colours.colour(status_colours.PROBLEM)


class BaseModelChoice(QObject):
    changed = Signal()

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self._parent = parent
        self.engine: Engine = get_engine(DEFAULT_ENGINE)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.choose_button = QPushButton("Choose folder…")
        self.choose_button.clicked.connect(self.choose)
        self.download = BaseModelDownload(parent)
        self.download.finished.connect(self._downloaded)
        self.download.failed.connect(lambda error: self.label.setText(
            f"<span style='color:{_red()}'>Download failed: {error}</span>"))
        self.check: Worker | None = None  # the engine's own check of a folder that lacks files
        self._asked = 0  # which refresh asked the engine: only the latest one's answer is shown

    def set_engine(self, name: str) -> None:
        self.engine = get_engine(name)
        self.download.set_engine(name)
        self.refresh()

    def folder(self) -> Path | None:
        """The chosen engine's base-model folder from the app settings; None when none was chosen (or the settings
        file cannot be read: the first-run page explains that)."""
        return setting_folder(self.engine.base_model_setting)

    def set_folder(self, folder: str | Path) -> None:
        remember_choice(self.engine.base_model_setting, Path(folder))  # the one before kept: an adapter's base
        self.refresh()
        self.changed.emit()

    def found(self) -> bool:
        return base_model_found(self.folder(), self.engine)

    def refresh(self) -> None:
        self._asked += 1
        folder, title = self.folder(), self.engine.title
        if base_model_found(folder, self.engine):
            self.label.setText(f"{title} found in {folder}")
        elif (other := other_engine_of(folder, self.engine)) is not None:
            self.label.setText(f"<span style='color:{_red()}'>{folder} holds a base model for {other.title}, not "
                               f"for {title}. Choose the {title} folder, or choose {other.title} as the engine "
                               "above.</span>")
        elif folder is not None and folder.is_dir():
            missing = in_words(missing_base_files(folder, self.engine))
            self.label.setText(f"<span style='color:{_red()}'>{folder} does not hold the {title} files (missing: "
                               f"{missing}).</span>")
            self._explain(folder)
        elif folder is not None:
            self.label.setText(f"<span style='color:{_red()}'>The {title} folder {folder} does not exist any more: "
                               "choose its folder or download it.</span>")
        else:
            self.label.setText(f"<span style='color:{_red()}'>{title}: not chosen yet. Choose its folder or download "
                               f"it ({self.engine.download_size}).</span>")

    def _explain(self, folder: Path) -> None:
        """Ask the engine, in a worker, what ``folder`` is and where its missing files come from; its answer (which
        names the missing files too) replaces the list unless the page asked again meanwhile."""
        engine, asked = self.engine, self._asked

        def job(_job) -> tuple[bool, str]:
            try:
                return True, engine.describe_base_model(folder)
            except EngineError as exc:
                return False, str(exc)

        self.check = Worker(job, self)
        self.check.finished.connect(lambda answer: self._explained(asked, folder, *answer))
        self.check.start()

    def _explained(self, asked: int, folder: Path, usable: bool, said: str) -> None:
        if asked != self._asked:
            return
        if usable:  # files the list wanted are missing, yet the engine uses the folder (an Orpheus LoRA adapter)
            self.label.setText(escape(f"{self.engine.title} found in {folder}: {said}", quote=False))
        elif said:
            self.label.setText(f"<span style='color:{_red()}'>{escape(said, quote=False)}</span>")

    def choose(self) -> None:
        # Open where the current model is; for a first choice, beside another engine's model (base models are
        # often kept side by side, e.g. in AllTalk's models/); only then at home.
        current = self.folder()
        others = [Path(value).parent for value in self._other_engines_folders()]
        start = next((str(f) for f in (current, current and current.parent, *others) if f is not None and f.is_dir()),
                     str(Path.home()))
        folder = QFileDialog.getExistingDirectory(self._parent, f"The {self.engine.title} base-model folder", start)
        if folder:
            self.set_folder(folder)

    def _other_engines_folders(self) -> list[str]:
        """The base-model folders chosen for the other engines (app settings)."""
        values = []
        for name in engine_names():
            if name == self.engine.name:
                continue
            try:
                value = app_settings.get(get_engine(name).base_model_setting)
            except (app_settings.SettingsError, EngineError):
                continue
            if value:
                values.append(str(value))
        return values

    def _downloaded(self, folder: Path) -> None:
        # The engine cannot change while a download runs (the page locks the choice), so it is this one's.
        self.set_folder(folder)
