"""What to preview: the checkpoint (best by default, latest one click away, or any), what the voice speaks from,
of the kind the checkpoint's engine declares (:mod:`.reference_picker`: a few clean clips, one clip and its exact
words, a speaker name or a description), the language and the sentence (the shipped sentences for that language,
or typed).

Best is the default: the checkpoint judge's choice (:mod:`alltalk_gui.core.voice.judge.best`: likeness to the
speaker, no less clear than the base model, naturalness breaking ties), or the lowest eval loss while the judge has
not scored the run (as AllTalk's and xtts-finetune-webui's ``best_model.pth``); the note under it says why it is
best, and the "Use latest" button switches in one click, so the user's ears decide.

Automatic references follow the dataset: training writes it, so they are looked for again whenever the
checkpoints are (page shown, Refresh) until the user picks files, and are shown by their words, not file names.
Each checkpoint is listed once, named with its engine, marked "latest" and "best" where it is. A project may hold
runs of both engines: the project's engine's come first, and "latest" and "best" are found among them only (an
F5-TTS eval loss of 14 and an XTTS one of 3.6 measure different things). The engine (:attr:`PreviewInputs.engine`)
is the selected checkpoint's.

Below the checkpoints, the same list offers a model folder of the project's engine (:mod:`.model_folder_choice`:
"A model folder…" asks for one, the engine checks it in a worker, the project remembers it): a fine-tune from
another tool or an export, heard with the same references and settings. While it speaks, the engine is the
project's and the checkpoint chosen before stays "the project's checkpoint" (:meth:`PreviewInputs.chosen_checkpoint`)
for the comparison and the export.

Reads checkpoints and reference clips through the core (JSON and audio files only: no torch). ``changed`` fires
when the checkpoint or the references change, so the page can update its buttons and defaults.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QGridLayout, QHBoxLayout, QLabel, QPushButton, QSizePolicy, QWidget

from alltalk_gui.core.engine_api import languages
from alltalk_gui.core.engine_api.engine import DEFAULT_ENGINE, Engine, EngineError, get_engine
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.training.checkpoints import CheckpointError, CheckpointInfo, list_checkpoints, resolve_checkpoint
from alltalk_gui.core.voice.preview import Voice, default_sentences
from alltalk_gui.gui.common.status_colours import PROBLEM, span
from alltalk_gui.gui.preview.model_folder_choice import ModelFolderChoice
from alltalk_gui.gui.preview.reference_picker import ReferencePicker

LANGUAGES = list(languages.CODES)
NOTE = ("<small>Best = the checkpoint judge's choice (likeness to the speaker, clarity, naturalness), or the lowest "
        "eval loss while the judge has not scored the run. Listen, and compare with the latest checkpoint.</small>")
FOLDER_ITEM = "\x00model folder"         # the list's data for the model folder (a checkpoint's is its path)
CHOOSE_ITEM = "\x00choose model folder"  # "A model folder…": asks for one


def engine_title(name: str) -> str:
    """The engine's name for people ("F5-TTS v1"); the registry name of one this version does not know."""
    try:
        return get_engine(name).title
    except EngineError:
        return name


class PreviewInputs(QWidget):
    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.project: VoiceProject | None = None
        self.checkpoints: list[CheckpointInfo] = []
        self.engine: Engine = get_engine(DEFAULT_ENGINE)  # the selected checkpoint's (before any: the default)
        self.checkpoint_box = QComboBox()
        # As wide as the page gives, not as the longest label (an engine, a run and a loss widened the window).
        self.checkpoint_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.checkpoint_box.setMinimumContentsLength(30)
        self.checkpoint_box.currentIndexChanged.connect(self._checkpoint_changed)
        self.checkpoint_box.activated.connect(self._activated)
        self.checkpoint_box.setToolTip("What speaks: one of this project's checkpoints, or a model folder you have "
                                       "(a fine-tune made with another tool, or an export), which is only read")
        self.model_folder = ModelFolderChoice(self)
        self.model_folder.changed.connect(self._folder_changed)
        self.model_folder.accepted.connect(lambda _folder: self._select(FOLDER_ITEM))
        self._last_index = -1          # the last entry that is no "A model folder…": chosen again on cancel
        self._last_checkpoint = ""     # the path of the checkpoint chosen last (kept while a model folder speaks)
        refresh = QPushButton("Refresh")
        refresh.setToolTip("Look for new checkpoints (training writes them as it goes)")
        refresh.clicked.connect(self.refresh)
        self.switch_button = QPushButton("Use latest")
        self.switch_button.setToolTip("Switch between the best checkpoint (the judge's choice, or the lowest eval "
                                      "loss) and the latest one")
        self.switch_button.clicked.connect(self._switch_best_latest)
        self.special: dict[str, int] = {}  # "best" / "latest" -> the row of the checkpoint marked so
        self.marks: dict[str, list[str]] = {}  # a checkpoint's path -> its marks ("latest", "best")
        self.best_reason = ""  # why "best" is the best (the judge's scores, or the eval loss)
        self.checkpoint_note = QLabel(NOTE)
        self.checkpoint_note.setWordWrap(True)
        self.picker = ReferencePicker(self)
        self.picker.changed.connect(self.changed)
        self.reference_label = self.picker.label  # the short name tests and the page use
        self.language_box = QComboBox()
        self.language_box.setEditable(True)
        self.language_box.addItems(LANGUAGES)
        self.language_box.currentTextChanged.connect(self._fill_sentences)
        self.text_box = QComboBox()
        self.text_box.setEditable(True)
        self.text_box.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.text_box.lineEdit().setPlaceholderText("Type a sentence, or pick one")
        for box in (self.text_box, self.picker.clip_box):  # long sentences must not widen the window
            box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            box.setMinimumContentsLength(20)
        # The middle column takes the width: with a speaker name or a description (no clips row, whose label made
        # it expanding) the text editor spanning two columns and the language box made the last one expanding too,
        # and it took most of the width, the checkpoint's name cut off beside a 340 px "Use latest".
        for box in (self.checkpoint_box, self.text_box):
            box.setSizePolicy(QSizePolicy.Policy.Expanding, box.sizePolicy().verticalPolicy())

        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.addWidget(QLabel("Speak with"), 0, 0)
        grid.addWidget(self.checkpoint_box, 0, 1)
        checkpoint_buttons = QHBoxLayout()
        checkpoint_buttons.addWidget(self.switch_button)
        checkpoint_buttons.addWidget(refresh)
        grid.addLayout(checkpoint_buttons, 0, 2)
        grid.addWidget(self.checkpoint_note, 1, 1, 1, 2)
        grid.addWidget(self.picker.caption, 2, 0)
        references = QHBoxLayout()  # the clips by their words, or the one clip to choose
        references.addWidget(self.picker.label, 1)
        references.addWidget(self.picker.clip_box, 1)
        grid.addLayout(references, 2, 1)
        refs = QHBoxLayout()
        refs.addWidget(self.picker.choose_button)
        refs.addWidget(self.picker.auto_button)
        grid.addLayout(refs, 2, 2)
        grid.addWidget(self.picker.words_caption, 3, 0)
        text = QHBoxLayout()  # one of them: the clip's words, the speaker's name or the voice's description
        for editor in (self.picker.words, self.picker.speaker, self.picker.description):
            text.addWidget(editor)
        grid.addLayout(text, 3, 1, 1, 2)
        grid.addWidget(QLabel("Text"), 4, 0)
        grid.addWidget(self.text_box, 4, 1)
        language = QHBoxLayout()  # beside the text it is spoken in: one row less on a small screen
        language.addWidget(QLabel("Language"))
        language.addWidget(self.language_box, 1)
        grid.addLayout(language, 4, 2)
        grid.setColumnStretch(1, 1)
        self._fill_sentences(self.language_box.currentText())

    def set_project(self, project: VoiceProject | None) -> None:
        self.project = project
        if project is not None:
            self.language_box.setCurrentText(project.language)
        self.picker.set_project(project)
        self.checkpoint_box.blockSignals(True)
        self.checkpoint_box.clear()  # the previous project's folder and checkpoints are not this one's
        self.checkpoint_box.blockSignals(False)
        self._last_checkpoint = ""
        try:
            engine = get_engine(project.engine) if project is not None else self.engine
        except EngineError:  # a project of an engine this version does not know: no model folder for it
            engine = None
        if engine is not None:
            self.model_folder.set_project(project, engine)
        self.refresh()

    def refresh(self) -> None:
        """Re-read the checkpoints (training may have written new ones) and the automatic references (training may
        have written the dataset). The selection stays: a checkpoint chosen as "best" or "latest" follows that mark
        to whichever checkpoint carries it now, another stays by path; the first time it is the best checkpoint (the
        latest while none has an eval loss)."""
        self.picker.refresh()
        previous = self.checkpoint_box.currentData()
        if previous == CHOOSE_ITEM:  # "A model folder…" is an action, never kept as the choice
            previous = None
        kept = next((which for which in ("best", "latest")
                     if self.special.get(which) == self.checkpoint_box.currentIndex()), None)
        self.checkpoint_box.blockSignals(True)
        self.checkpoint_box.clear()
        self.special = {}
        self.checkpoints = self._ordered(list_checkpoints(self.project.root) if self.project else [])
        engine = self.project.engine if self.project else DEFAULT_ENGINE
        tags: dict[str, list[str]] = {}
        self.best_reason = ""
        if self.project and self.checkpoints:
            from alltalk_gui.core.voice.judge.best import best_choice

            try:  # among the project's engine's runs: two engines' scores and eval losses are not comparable
                tags.setdefault(str(resolve_checkpoint(self.project.root, "latest", engine=engine).path),
                                []).append("latest")
                # The judge's choice, or the lowest eval loss while the judge has not scored the run.
                choice = best_choice(self.project.root, engine=engine)
                tags.setdefault(str(choice.checkpoint.path), []).append("best")
                self.best_reason = choice.reason
            except CheckpointError:  # no run of this engine
                pass
        self.marks = tags
        for row, checkpoint in enumerate(self.checkpoints):
            marks = tags.get(str(checkpoint.path))
            self.special.update({which: row for which in marks or ()})
            self.checkpoint_box.addItem(f"{engine_title(checkpoint.engine)} · {self.checkpoint_title(checkpoint)}",
                                        str(checkpoint.path))
        self._add_folder_items()
        index = self.special.get(kept, -1) if kept else (
            self.checkpoint_box.findData(previous) if previous is not None else -1)
        if index < 0 and not self.checkpoints:  # nothing trained yet: the model folder, when there is one
            index = self.checkpoint_box.findData(FOLDER_ITEM)
        self.checkpoint_box.setCurrentIndex(index if index >= 0 else self.special.get("best", 0))
        self.checkpoint_box.blockSignals(False)
        self._checkpoint_changed()

    # -- the model folder in the list -------------------------------------------------------------------------
    def checkpoint_title(self, checkpoint: CheckpointInfo) -> str:
        """"run1 · step 4  (latest, best)": the checkpoint with its marks."""
        marks = self.marks.get(str(checkpoint.path))
        return f"{checkpoint.label}  ({', '.join(marks)})" if marks else checkpoint.label

    def _add_folder_items(self) -> None:
        """After the checkpoints: the model folder that passed the engine's check, and "A model folder…"."""
        if self.checkpoints:
            self.checkpoint_box.insertSeparator(self.checkpoint_box.count())
        folder = self.model_folder.folder
        if folder is not None:
            self.checkpoint_box.addItem(f"Model folder · {folder.name}", FOLDER_ITEM)
            self.checkpoint_box.setItemData(self.checkpoint_box.count() - 1, str(folder), Qt.ItemDataRole.ToolTipRole)
        self.checkpoint_box.addItem("A model folder…", CHOOSE_ITEM)

    def _folder_changed(self) -> None:
        """The model folder was checked (or is being checked, or has gone): the list's entries follow; the
        selection stays, unless it was a folder that is no longer offered (then the best checkpoint)."""
        current = self.checkpoint_box.currentData()
        box = self.checkpoint_box
        box.blockSignals(True)
        while box.count() > len(self.checkpoints):  # the separator and the folder entries, after the checkpoints
            box.removeItem(box.count() - 1)
        self._add_folder_items()
        index = box.findData(current) if current is not None else -1
        if current == CHOOSE_ITEM and self.checkpoints:
            index = -1
        box.setCurrentIndex(index if index >= 0 else self.special.get("best", 0))
        box.blockSignals(False)
        self._checkpoint_changed()

    def _activated(self, index: int) -> None:
        """The user picked an entry: "A model folder…" asks for a folder (the entry chosen before stays chosen
        while the engine checks it)."""
        if self.checkpoint_box.itemData(index) != CHOOSE_ITEM:
            return
        if 0 <= self._last_index < self.checkpoint_box.count() and self._last_index != index:
            self.checkpoint_box.setCurrentIndex(self._last_index)
        self.model_folder.choose()

    def _select(self, data: str) -> None:
        index = self.checkpoint_box.findData(data)
        if index >= 0:
            self.checkpoint_box.setCurrentIndex(index)

    def speaks_with_folder(self) -> bool:
        """The model folder is chosen to speak (and has passed the engine's check)."""
        return self.checkpoint_box.currentData() == FOLDER_ITEM and self.model_folder.folder is not None

    def chosen_checkpoint(self) -> CheckpointInfo | None:
        """The project's checkpoint: the selected one, or while a model folder speaks the one chosen before it (the
        best at first), of the project's engine. What the export writes and a model folder is compared with."""
        selected = self.selected_checkpoint()
        if selected is not None or not self.speaks_with_folder():
            return selected
        engine = self.project.engine if self.project else DEFAULT_ENGINE
        best = self.special.get("best")
        for path in (self._last_checkpoint, self.checkpoint_box.itemData(best) if best is not None else None):
            found = next((c for c in self.checkpoints if str(c.path) == path and c.engine == engine), None)
            if found is not None:
                return found
        return None

    def voice(self) -> Voice | None:
        """What speaks: the model folder, or the selected checkpoint (None: neither is chosen)."""
        if self.speaks_with_folder():
            return Voice.model_folder(self.model_folder.folder)
        checkpoint = self.selected_checkpoint()
        return Voice.tuned(checkpoint) if checkpoint is not None else None

    def _update_note(self) -> None:
        """Under the list: why best is best, or what the model folder is; and what is wrong with a folder."""
        choice = self.model_folder
        if self.speaks_with_folder():
            note = (f"<small>{escape(str(choice.folder))}: {escape(choice.description)} Only read: the takes are "
                    "saved in the project's previews/ folder.</small>")
        elif self.best_reason:
            note = f"<small>Best: {self.best_reason}. Listen, and compare with the latest checkpoint.</small>"
        else:
            note = NOTE
        if choice.checking is not None:
            note = f"<small>Checking the model folder {escape(str(choice.checking))}…</small><br>{note}"
        elif choice.message:
            note = f"{span(PROBLEM, escape(choice.message), self)}<br>{note}"
        self.checkpoint_note.setText(note)

    def _ordered(self, checkpoints: list[CheckpointInfo]) -> list[CheckpointInfo]:
        """Newest first, the project's engine's runs before any other engine's (each once)."""
        engine = self.project.engine if self.project else DEFAULT_ENGINE
        newest_first = list(reversed(checkpoints))
        return [c for c in newest_first if c.engine == engine] + [c for c in newest_first if c.engine != engine]

    def use(self, which: str) -> None:
        """Select the "best" or "latest" entry (if there is one)."""
        if which in self.special:
            self.checkpoint_box.setCurrentIndex(self.special[which])

    def _switch_best_latest(self) -> None:
        self.use("best" if self.checkpoint_box.currentIndex() == self.special.get("latest") else "latest")

    def _update_switch(self) -> None:
        best, latest = self.special.get("best"), self.special.get("latest")
        on_latest = self.checkpoint_box.currentIndex() == latest != best
        self.switch_button.setText("Use best" if on_latest else "Use latest")
        self.switch_button.setEnabled(best is not None and latest is not None and best != latest)

    def selected_checkpoint(self) -> CheckpointInfo | None:
        path = self.checkpoint_box.currentData()
        return next((c for c in self.checkpoints if str(c.path) == path), None)

    def text(self) -> str:
        return " ".join(self.text_box.currentText().split())

    def language(self) -> str:
        return self.language_box.currentText().strip() or (self.project.language if self.project else "en")

    def _checkpoint_changed(self) -> None:
        """The engine follows the checkpoint (a model folder: the project's engine): its kind of references, then
        ``changed``."""
        if self.checkpoint_box.currentData() != CHOOSE_ITEM:
            self._last_index = self.checkpoint_box.currentIndex()
        checkpoint = self.selected_checkpoint()
        if checkpoint is not None:
            self._last_checkpoint = str(checkpoint.path)
        try:
            if checkpoint is not None:
                engine = get_engine(checkpoint.engine)
            elif self.speaks_with_folder() and self.model_folder.engine is not None:
                engine = self.model_folder.engine
            else:
                engine = self.engine
        except EngineError:  # a run of an engine this version does not know: shown, refused on Generate
            engine = self.engine
        self.engine = engine
        self._update_switch()
        self._update_note()
        project_checkpoint = checkpoint or self.chosen_checkpoint()
        suggestion = (engine.reference_suggestion(project_checkpoint)
                      if project_checkpoint is not None and project_checkpoint.engine == engine.name else "")
        self.picker.set_kind(engine.reference_kind, suggestion)  # emits changed

    # -- references (the picker's, by the names the page uses) ------------------------------------------------
    @property
    def references(self) -> list[Path]:
        return self.picker.references

    def reference_text(self) -> str:
        return self.picker.reference_text()

    def auto_references(self) -> None:
        self.picker.auto_references()

    def set_references(self, paths: list[Path]) -> None:
        self.picker.set_references(paths)

    def _choose_references(self) -> None:
        self.picker.choose()

    def _fill_sentences(self, language: str) -> None:
        typed = self.text_box.currentText()
        sentences = default_sentences(language)
        self.text_box.clear()
        self.text_box.addItems(sentences)
        if typed and typed not in sentences:  # keep what the user typed
            self.text_box.setCurrentText(typed)

