"""Step 4, Preview & Export: hear the new voice, compare it with the base model, export it.

Pick a checkpoint (latest, best or any), the reference clips (chosen from the dataset; changeable), language
and sentence; Generate speaks it with the fine-tuned checkpoint, Compare also with the base model and the same
seed. Generation runs in a worker thread with progress; each result is a row with play buttons, waveforms and
Whisper's word error rate, saved in the project's ``previews/``. The export form below writes the model folder
(AllTalk, coqui-tts or F5-TTS), also in a worker.

Besides the checkpoints, any model folder of the project's engine can speak (a fine-tune from another tool, an
export): chosen, checked by the engine in a worker and remembered in :mod:`.model_folder_choice`. "Compare with"
offers any other voice of the same engine: the base model, the project's checkpoints, the speaking side's model
folder, and its own model folder ("A model folder…": the same check, remembered apart), so last week's export can be
heard beside today's; the folder that speaks is never loaded again to compare with itself. The entry chosen there is
remembered for the project too. Its takes go into previews/ like any other; the folders are only read. The export
stays about the project's checkpoints: while a model folder speaks, it exports the checkpoint chosen before (its
title says which).

The engine is the checkpoint's (a model folder's: the project's): what a take speaks from is the kind it declares (clips, one clip and its exact
words, a speaker name, a description), the settings are those it declares (with the time a take needs on this
computer, when the engine can say), and the formats its own.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEvent, Qt, Signal
from PySide6.QtWidgets import (
    QComboBox, QHBoxLayout, QLabel, QMessageBox, QProgressBar, QPushButton, QScrollArea,
    QVBoxLayout, QWidget,
)

from alltalk_gui.core.engine_api.engine import EngineError, ReferenceKind, get_engine
from alltalk_gui.core.training.checkpoints import CheckpointError, CheckpointInfo
from alltalk_gui.core.voice.export import ExportError
from alltalk_gui.core.voice.references import ReferenceClipError
from alltalk_gui.core import app_settings
from alltalk_gui.core.voice.preview import (
    GenerationSettings, PreviewError, PreviewResult, Voice, affordable_on_cpu, load_previews,
)
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.gui.preview.preview_worker import (TAKE_STOPPED, PreviewRequest, PreviewSession, TakeStopped,
                                                    export_worker, preview_worker, release_worker)
from alltalk_gui.gui.preview.ab_row import AbRow
from alltalk_gui.gui.common.audio_player import AudioPlayer
from alltalk_gui.gui.common.failure import failure_message, log_failure, show_failure
from alltalk_gui.gui.common.status_colours import PROBLEM, QUIET, colour, span
from alltalk_gui.gui.common.step_page import CloseAnswer
from alltalk_gui.gui.common.waiting_note import wait_for_workers
from alltalk_gui.gui.preview.export_panel import ExportPanel
from alltalk_gui.gui.preview.generation_panel import GenerationPanel
from alltalk_gui.gui.preview.judge_table import JudgeTable
from alltalk_gui.gui.preview.model_folder_choice import (
    COMPARE_KEY, ModelFolderChoice, folder_names, remember_preview, remembered_preview,
)
from alltalk_gui.gui.preview.preview_inputs import CHOOSE_ITEM, FOLDER_ITEM, PreviewInputs
from alltalk_gui.gui.preview.remembered_generation import ADVANCED, remember, remembered
from alltalk_gui.gui.preview.take_time import gpu_present
from alltalk_gui.gui.common.workers import Worker


BASE_ITEM = "base"                          # the compare list's data: the base model
COMPARE_FOLDER_ITEM = "\x00compare folder"  # the folder chosen for the compare side (a checkpoint's: its path)
COMPARED_WITH = "compare_with"              # project.json: the compare list's entry chosen last, per engine
TAKES_MIN_HEIGHT = 200                      # px: one A/B row of takes (measured: 189 px with the default font)

MISSING_TEXT = {
    ReferenceKind.CLIP_WITH_WORDS: "{engine} continues the reference clip: type exactly the words said in it.",
    ReferenceKind.SPEAKER: "{engine} speaks as a speaker it learned: type the speaker's name.",
    ReferenceKind.DESCRIPTION: "{engine} speaks in a voice described in words: describe the voice.",
}


def expected_failure(traceback_text: str) -> bool:
    """Whether a worker's traceback ends in an error the page expects and says in words (a model that cannot say
    the text, a reference clip it cannot read, a folder it cannot write): not a bug to report."""
    last = next((line.strip() for line in reversed(traceback_text.strip().splitlines()) if line.strip()), "")
    name = last.partition(": ")[0].rsplit(".", 1)[-1]
    return name in _EXPECTED


def _subclass_names(*classes: type) -> set[str]:
    names = set()
    for cls in classes:
        names |= {cls.__name__} | _subclass_names(*cls.__subclasses__())
    return names


# The page's own errors and the operating system's (a full disk, a folder it may not write): each says what to do.
_EXPECTED = _subclass_names(PreviewError, ReferenceClipError, EngineError, ExportError, CheckpointError, OSError,
                            TakeStopped)


def transcription_model() -> str | None:
    """The Whisper model the Transcribe step last used (a name or a local folder), so the intelligibility check
    listens with a model this computer has rather than the default one; None when none was chosen there."""
    from alltalk_gui.gui import settings

    value = settings.settings().value("transcribe/model")
    return str(value) if value else None


class PreviewPage(QWidget):
    status_message = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.project: VoiceProject | None = None
        self.worker: Worker | None = None
        self.export_job: Worker | None = None
        self.releaser: Worker | None = None
        self._release_when_idle = False  # a release asked for while a take was being made
        self._stopping = False  # the window is closing and waits for a job to end
        self.session = PreviewSession()
        self.whisper_model: str | None = None  # None: the transcription step's default model, when on disk
        self.rows: list[AbRow] = []
        self.player = AudioPlayer(self)
        self.player.playing_changed.connect(lambda path: [row.update_playing(path) for row in self.rows])
        self.player.error.connect(self.status_message)
        self._build()
        app = QCoreApplication.instance()
        if app is not None:  # a generation or export cannot be interrupted: let it end before the app goes
            app.aboutToQuit.connect(self.shutdown)

    # -- layout ---------------------------------------------------------------------------------------------
    def _build(self) -> None:
        self.inputs = PreviewInputs()
        self.inputs.changed.connect(self._inputs_changed)
        # Short names for the inputs the page and its tests use most.
        self.checkpoint_box, self.text_box = self.inputs.checkpoint_box, self.inputs.text_box
        self.language_box = self.inputs.language_box

        self.generation = GenerationPanel()
        self.generation.changed.connect(self._update_estimate)
        self.generation.changed.connect(self._remember_generation)
        self.generation.toggle.toggled.connect(self._remember_generation)
        self._restoring = False  # the page itself is setting the panel's values: nothing to remember
        self.text_box.editTextChanged.connect(self._update_estimate)
        self._defaults_for: object = ()  # the base model whose defaults the generation panel shows
        self.generate_button = QPushButton("Generate")
        self.generate_button.setToolTip("Speak the text with the chosen checkpoint or model folder")
        self.generate_button.clicked.connect(lambda: self.generate(ab=False))
        self.compare_button = QPushButton("Compare with")
        self.compare_button.setToolTip("A/B: speak it with the model chosen beside this button and with the one "
                                       "above, the same references and seed; the takes side by side")
        self.compare_button.clicked.connect(lambda: self.generate(ab=True))
        self.compare_box = QComboBox()  # what the A/B compares with: the base model, a checkpoint, a model folder
        self.compare_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.compare_box.setMinimumContentsLength(22)
        self.compare_box.setToolTip("What the A/B compares with (its take on the left): the base model, another "
                                    "checkpoint, or a model folder of the same engine (an earlier export, a "
                                    "fine-tune made with another tool)")
        self.compare_box.currentIndexChanged.connect(self._compare_changed)
        self.compare_box.activated.connect(self._compare_activated)
        self._compare_with: dict[str, Voice] = {}  # the compare list's entries by their data
        self._last_compare = -1  # the compare entry chosen before "A model folder…" (chosen again on cancel)
        self._wanted_compare = ""  # the entry the user chose (or the project remembers), chosen whenever offered
        # The compare side's own model folder (the speaking side's is the inputs'): checked, refused and remembered
        # by the same code, never the folder that speaks.
        self.compare_folder = ModelFolderChoice(self, key=COMPARE_KEY, purpose="to compare with",
                                                refuse=self._same_as_speaking)
        self.compare_folder.changed.connect(self._compare_folder_changed)
        self.compare_folder.accepted.connect(self._compare_folder_accepted)
        self.compare_note = QLabel()  # the compare folder being checked, why it was refused, or what it is
        self.compare_note.setWordWrap(True)
        self.compare_note.hide()
        self.progress = QProgressBar()
        self.progress.hide()
        # A long take (a paragraph is spoken piece by piece) can be stopped: at the next piece, or the next step
        # (the other side of an A/B, Whisper's check); nothing of it is kept. It ran on to its end before.
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop the take after the part the model is speaking; nothing of it is kept")
        self.stop_button.clicked.connect(self.stop_take)
        self.stop_button.hide()
        self.message = QLabel()
        self.message.setWordWrap(True)
        buttons = QHBoxLayout()
        buttons.addWidget(self.generate_button)
        buttons.addWidget(self.compare_button)
        buttons.addWidget(self.compare_box)
        buttons.addWidget(self.progress, 1)
        buttons.addWidget(self.stop_button)

        self.rows_box = QWidget()
        self.rows_layout = QVBoxLayout(self.rows_box)
        self.placeholder = QLabel("Generated takes appear here, newest first, with their waveforms and the word "
                                  "error rate of what Whisper heard. They are saved in the project's previews/ "
                                  "folder.")
        self.placeholder.setWordWrap(True)
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._colour_placeholder()
        self.rows_layout.addWidget(self.placeholder)
        self.rows_layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        # No Tab stop of its own (an invisible one): Tab reaches the takes' play buttons, and the list scrolls to
        # the one that has the focus.
        scroll.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # the takes share the width
        scroll.setWidget(self.rows_box)
        self.takes_list = scroll  # at least one whole take in view once there are takes (_fit_takes_list)
        self.export_panel = ExportPanel()
        self.export_panel.export_requested.connect(self.export)
        self.judge_table = JudgeTable()

        content = QWidget()
        layout = QVBoxLayout(content)
        layout.addWidget(QLabel("<h2>Preview &amp; export</h2>"))
        layout.addWidget(self.inputs)
        layout.addWidget(self.judge_table)
        layout.addWidget(self.generation)
        layout.addLayout(buttons)
        layout.addWidget(self.compare_note)
        layout.addWidget(self.message)
        layout.addWidget(scroll, 1)
        layout.addWidget(self.export_panel)
        # The page scrolls up and down when the window is lower than it (a 1024x600 screen, the judge's table shown),
        # never sideways: as wide as its content needs, it keeps the window from getting narrower than that.
        self.page_scroll = QScrollArea()
        self.page_scroll.setWidgetResizable(True)
        self.page_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        self.page_scroll.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # as the takes' list: it follows the focus
        self.page_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.page_scroll.setWidget(content)
        self.page_scroll.setMinimumWidth(content.minimumSizeHint().width()
                                         + self.page_scroll.verticalScrollBar().sizeHint().width())
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.page_scroll)

    def _colour_placeholder(self) -> None:
        # The quiet grey of the palette in use (palette(mid), the frames' grey, read at 1.7-1.8:1 on either look).
        self.placeholder.setStyleSheet(f"color: {colour(QUIET, self)};")

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt's name)
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "placeholder"):  # light/dark switch
            self._colour_placeholder()

    # -- project --------------------------------------------------------------------------------------------
    def set_project(self, project: VoiceProject | None) -> None:
        self.player.stop()
        if project is not self.project:
            self.release_models()  # the last project's voices
        self.project = project
        for row in self.rows:
            row.deleteLater()
        self.rows = []
        self.placeholder.show()
        self._fit_takes_list()
        self._defaults_for = ()  # this project's remembered settings are shown again
        if project is not None:
            self.export_panel.set_default_name(project.name)
            for results in reversed(load_previews(project.previews_dir)):  # earlier takes, newest on top
                self._add_row(results)
        self.compare_box.blockSignals(True)
        self.compare_box.clear()  # this project's remembered comparison, not the last one's
        self.compare_box.blockSignals(False)
        try:
            engine = get_engine(project.engine) if project is not None else self.inputs.engine
        except EngineError:  # a project of an engine this version does not know: no model folder for it
            engine = None
        self._wanted_compare = remembered_preview(project, COMPARED_WITH, engine.name) if engine else ""
        if engine is not None:
            self.compare_folder.set_project(project, engine)
        self.inputs.set_project(project)
        self._show_judge()

    def _show_judge(self) -> None:
        """The judge's table for the newest run (the one "best" and "latest" are taken from)."""
        latest = self.inputs.checkpoints[-1] if self.inputs.checkpoints else None  # the newest run's, last
        self.judge_table.show_run(latest.path.parent.parent if latest is not None else None)

    @property
    def references(self) -> list[Path]:
        return self.inputs.references

    def refresh(self) -> None:
        """Re-read the checkpoints (training may have written new ones) and the judge's scores."""
        self.inputs.refresh()
        self._show_judge()

    def selected_checkpoint(self) -> CheckpointInfo | None:
        return self.inputs.selected_checkpoint()

    def showEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        if self.project is not None and not self.is_busy():
            self.refresh()
        super().showEvent(event)

    # -- inputs ---------------------------------------------------------------------------------------------
    def _inputs_changed(self) -> None:
        checkpoint = self.selected_checkpoint()
        voice = self.inputs.voice()
        engine = self.inputs.engine
        self.generation.set_engine(engine)
        exported = self.inputs.chosen_checkpoint()
        self.export_panel.set_engine(_engine_of(exported, engine) if exported is not None else engine)
        self.export_panel.setTitle(f"Export this project's {exported.label} (the model folder is only heard)"
                                   if self.inputs.speaks_with_folder() and exported is not None else "Export")
        base = voice.model_dir if voice is not None else None  # the base model's, or the model folder's defaults
        if (engine.name, base) != self._defaults_for:  # a new base model: its defaults (the user's stay otherwise)
            self._defaults_for = (engine.name, base)
            self._show_generation_defaults(engine, base)
        self._fill_compare()
        self._update_buttons()
        self._update_estimate()
        if self.project is not None and voice is None:
            self.message.setText("No training checkpoint yet: train the voice first (step 3), then come back; or "
                                 "hear a model folder you have (Speak with: A model folder…).")
        elif checkpoint is not None and not checkpoint.base_model_dir.is_dir():
            self.message.setText(f"The base model {checkpoint.base_model_dir} this checkpoint was trained from "
                                 "is missing.")
        elif self._missing_words() and (self.references or not engine.reference_kind.uses_audio):
            self.message.setText(MISSING_TEXT[engine.reference_kind].format(engine=engine.title))
        else:
            self.message.clear()

    def _show_generation_defaults(self, engine, base) -> None:
        """The base model's settings, lowered to what this computer affords when it has no GPU (F5-TTS's sampling
        steps: at most 16 there), then the values this project remembers for the engine."""
        defaults = GenerationSettings.for_engine(engine, base)
        if not gpu_present():
            language = self.project.language if self.project is not None else self.inputs.language()
            defaults = affordable_on_cpu(engine, defaults, language)
        saved = remembered(self.project, engine.name)
        self._restoring = True
        try:
            self.generation.set_defaults(defaults)
            for name, value in saved.items():
                if name in self.generation.boxes:
                    self.generation.set_value(name, value)
            self.generation.toggle.setChecked(bool(saved.get(ADVANCED, False)))
        finally:
            self._restoring = False

    def _remember_generation(self) -> None:
        """The user changed a setting: the project keeps what differs from the defaults, for this engine."""
        engine = self.generation.engine
        if self._restoring or engine is None or self.project is None:
            return
        defaults = self.generation.defaults
        chosen = self.generation.settings().with_values(self.generation.values())  # what the boxes hold
        values = {name: value for name, value in {"seed": chosen.seed, **chosen.options}.items()
                  if value != {"seed": defaults.seed, **defaults.options}.get(name)}
        if self.generation.toggle.isChecked():
            values[ADVANCED] = True
        remember(self.project, engine.name, values)

    def _missing_words(self) -> bool:
        """The engine reads text (a clip's words, a speaker name, a description) and none is given."""
        return self.inputs.engine.reference_kind is not ReferenceKind.CLIPS and not self.inputs.reference_text()

    def _base_model_dir(self) -> Path | None:
        """The base model to compare with: the checkpoint's; for a model folder, that of the project's checkpoint,
        else the engine's base-model folder chosen on the Train page (None when neither is there)."""
        checkpoint = self.selected_checkpoint() or self.inputs.chosen_checkpoint()
        if checkpoint is not None:
            return checkpoint.base_model_dir
        try:
            value = app_settings.get(self.inputs.engine.base_model_setting)
        except app_settings.SettingsError:
            return None
        return Path(value) if value and Path(value).is_dir() else None

    def compare_choices(self) -> dict[str, tuple[str, Voice]]:
        """What the chosen model can be compared with, by the compare list's data: the base model, the project's
        checkpoints of its engine, the model folders of either side (of its engine); never what speaks. Each with
        its name for the list."""
        voice = self.inputs.voice()
        if voice is None:
            return {}
        engine, choices = self.inputs.engine.name, {}
        base = self._base_model_dir()
        if base is not None:
            choices[BASE_ITEM] = ("the base model", Voice.base(base))
        for checkpoint in self.inputs.checkpoints:
            if checkpoint.engine == engine:
                choices[str(checkpoint.path)] = (self.inputs.checkpoint_title(checkpoint), Voice.tuned(checkpoint))
        sides = [(key, choice) for key, choice in ((COMPARE_FOLDER_ITEM, self.compare_folder),
                                                    (FOLDER_ITEM, self.inputs.model_folder))
                 if choice.folder is not None and choice.engine is not None and choice.engine.name == engine]
        for (key, choice), name in zip(sides, folder_names([choice.folder for _key, choice in sides])):
            folder = Voice.model_folder(choice.folder)
            if not any(folder.same_as(other) for _title, other in choices.values()):  # each folder once
                choices[key] = (f"model folder · {name}", folder)
        return {key: (title, other) for key, (title, other) in choices.items() if not other.same_as(voice)}

    def _fill_compare(self) -> None:
        """The compare list follows what speaks; the entry chosen in it stays while it is offered (at first: the one
        this project chose last), else the base model."""
        choices = self.compare_choices()
        # The user's choice (remembered for the project) whenever it is offered: a compare folder is offered only
        # once its check has ended, after the list was first filled.
        kept = self._wanted_compare if self._wanted_compare in choices else self.compare_box.currentData()
        self._compare_with = {key: voice for key, (_title, voice) in choices.items()}
        box = self.compare_box
        box.blockSignals(True)
        box.clear()
        for key, (title, voice) in choices.items():
            box.addItem(title, key)
            where = voice.checkpoint.path if voice.checkpoint is not None else voice.model_dir
            box.setItemData(box.count() - 1, str(where), Qt.ItemDataRole.ToolTipRole)
        # Offered whenever something speaks: two model folders need no checkpoint nor base model to be compared.
        if self.inputs.voice() is not None and self.compare_folder.engine is not None \
                and self.compare_folder.engine.name == self.inputs.engine.name:
            if choices:
                box.insertSeparator(box.count())
            box.addItem("A model folder…", CHOOSE_ITEM)
            box.setItemData(box.count() - 1, "Compare with a model folder of the same engine: an earlier export, "
                            "or a fine-tune made with another tool (only read)", Qt.ItemDataRole.ToolTipRole)
        index = box.findData(kept) if kept is not None and kept != CHOOSE_ITEM else -1
        box.setCurrentIndex(max(index, 0) if choices else -1)
        box.blockSignals(False)
        self._last_compare = box.currentIndex()
        self._show_compare_note()

    def compare_with(self) -> Voice | None:
        return self._compare_with.get(self.compare_box.currentData())

    def _compare_changed(self) -> None:
        if self.compare_box.currentData() != CHOOSE_ITEM:
            self._last_compare = self.compare_box.currentIndex()
        self._show_compare_note()
        self._update_buttons()

    def _compare_activated(self, index: int) -> None:
        """The user picked an entry: "A model folder…" asks for a folder (the entry chosen before stays chosen while
        the engine checks it); another is remembered for the project."""
        data = self.compare_box.itemData(index)
        if data == CHOOSE_ITEM:
            if self._last_compare != index:  # nothing chosen before (only folders to compare with): none shown
                self.compare_box.setCurrentIndex(self._last_compare if 0 <= self._last_compare < self.compare_box.count()
                                                 else -1)
            self.compare_folder.choose()
        elif data is not None:
            self._wanted_compare = data
            if self.compare_folder.message:  # the user moved on from the folder that could not be used
                self.compare_folder.message = ""
                self._show_compare_note()
            if self.project is not None:
                remember_preview(self.project, COMPARED_WITH, self.inputs.engine.name, data)

    def _same_as_speaking(self, folder: Path) -> str:
        """Why ``folder`` cannot be the compare side before any check: it is what speaks ("" when it is not)."""
        voice = self.inputs.voice()
        if voice is not None and Voice.model_folder(folder).same_as(voice):
            return (f"{folder} is the model folder that speaks already: to compare it, choose another folder here, "
                    "or another model to speak with above.")
        return ""

    def _compare_folder_changed(self) -> None:
        self._fill_compare()
        self._update_buttons()

    def _compare_folder_accepted(self, _folder: Path) -> None:
        index = self.compare_box.findData(COMPARE_FOLDER_ITEM)
        if index >= 0:
            self.compare_box.setCurrentIndex(index)
            self._compare_activated(index)  # remembered, as a choice in the list is

    def _show_compare_note(self) -> None:
        """Under the buttons: the compare folder being checked, why it cannot be used, or what the chosen one is."""
        choice, note = self.compare_folder, ""
        if choice.checking is not None:
            note = f"Checking the model folder {escape(str(choice.checking))} to compare with…"
        elif choice.message:
            note = span(PROBLEM, escape(choice.message), self)
        elif self.compare_box.currentData() == COMPARE_FOLDER_ITEM and choice.folder is not None:
            note = f"Compared with {escape(str(choice.folder))}: {escape(choice.description)}"
        self.compare_note.setText(f"<small>{note}</small>" if note else "")
        self.compare_note.setVisible(bool(note))

    def stop_take(self) -> None:
        """Stop the take being made at its next piece or step (the worker's thread: the GUI never waits for it);
        its ``failed`` ends it as stopped."""
        if self.worker is not None and self.worker.is_running() and not self.worker.cancel_event.is_set():
            self.worker.cancel()
            self.stop_button.setEnabled(False)
            self.progress.setFormat("Stopping after the part being spoken…")

    def _update_buttons(self) -> None:
        taking = self.worker is not None and self.worker.is_running()
        self.stop_button.setVisible(taking)
        self.stop_button.setEnabled(taking and not self.worker.cancel_event.is_set())
        has_reference = bool(self.references) or not self.inputs.engine.reference_kind.uses_audio
        ready = (self.inputs.voice() is not None and has_reference and not self.is_busy()
                 and not self._missing_words() and not self.inputs.model_folder.is_checking())
        self.generate_button.setEnabled(ready)
        self.compare_button.setEnabled(ready and self.compare_with() is not None
                                       and not self.compare_folder.is_checking())
        self.compare_box.setEnabled(not self.is_busy() and self.compare_box.count() > 0)
        self.export_panel.setEnabled(self.inputs.chosen_checkpoint() is not None)

    def _update_estimate(self) -> None:
        """What a take costs with these settings, for this reference and sentence (when the engine can say)."""
        self.generation.show_estimate(self.inputs.picker.reference_seconds(), self.inputs.reference_text(),
                                      self.inputs.text())

    def release_models(self) -> None:
        """Give back the memory of the models kept loaded between previews (a training run starts, or another
        project opens); a take being made finishes first. The next preview loads them again."""
        if self.is_busy():  # a take being made may be loading them right now
            self._release_when_idle = True
            return
        self._release_when_idle = False
        if self.session.engine is None:
            return
        self.releaser = release_worker(self.session, self)
        self.releaser.finished.connect(lambda _none: self._update_buttons())
        self.releaser.failed.connect(lambda _tb: self._update_buttons())
        self.releaser.start()
        self._update_buttons()

    def _released_if_asked(self) -> None:
        if self._release_when_idle:
            self.release_models()

    def shutdown(self) -> None:
        """Before the app quits: stop a take being made (at its next step; nothing of it is kept), wait for it and
        for an export (which cannot be cut short safely), and stop playback. The window asks first
        (:meth:`confirm_close`), so that by then nothing runs."""
        self.player.stop()
        if self.worker is not None and self.worker.is_running():
            self.worker.cancel()
        for worker in (self.worker, self.export_job, self.releaser):
            if worker is not None and worker.is_running():
                worker.wait(10 * 60 * 1000)

    def busy_message(self) -> str | None:
        """A take or an export being made blocks a project change (its result would land on the other project's
        page; the export would go on writing unseen)."""
        if self.export_job is not None and self.export_job.is_running():
            return "Wait for the export to finish first."
        if self.worker is not None and self.worker.is_running():
            return "Wait for the take being made to finish first."
        return None

    def close_work(self) -> str | None:
        if self.export_job is not None and self.export_job.is_running():
            return "a voice being exported: it finishes first"
        if self.worker is not None and self.worker.is_running():
            return "a take being made: nothing of it is kept"
        return None

    def confirm_close(self, decided: CloseAnswer | None = None) -> bool:
        """Closing during a take asks first; Yes stops it at its next step (the model's synthesis cannot be cut
        short) and removes what it wrote. An export being written is waited for (a half-written model folder
        helps nobody). Either wait keeps the window painting and says what it waits for: the GUI thread never
        waits on torch. The window closed at once before, and the process went on unseen until the take ended."""
        if self._stopping:  # a second close while the first one waits
            return False
        take = self.worker is not None and self.worker.is_running()
        export = self.export_job is not None and self.export_job.is_running()
        if take or export:
            agreed = self.ask_on_close(take, export) if decided is None else decided != CloseAnswer.KEEP
            if not agreed:
                return False
            if take:
                self.worker.cancel()
        self.wait_for_jobs()
        self.player.stop()
        self.judge_table.player.stop()
        return True

    def ask_on_close(self, take: bool, export: bool) -> bool:
        """Whether the window may close, stopping the take / waiting for the export (tests answer it)."""
        if take and export:  # not both at once today; said all the same
            text = "A take is being made and a voice exported. Stop the take, let the export finish and close?"
        elif take:
            text = ("A take is being made. Stop it and close? The model finishes the sentence it is speaking; "
                    "nothing of the take is kept.")
        else:
            text = ("A voice is being exported. Wait for it to finish, then close? Stopping it halfway would leave "
                    "no usable model folder.")
        answer = QMessageBox.question(self, "Still working", text)
        return answer == QMessageBox.StandardButton.Yes

    def wait_for_jobs(self) -> None:
        """Wait, with the event loop running (never blocking the GUI thread), for the page's jobs to end: a take
        that was stopped, an export, a release of the models. A note says what it waits for."""
        running = [w for w in (self.worker, self.export_job, self.releaser) if w is not None and w.is_running()]
        if not running:
            return
        self._stopping = True
        what = ("Stopping the take: the model finishes the sentence it is speaking…"
                if self.worker in running and self.worker.cancel_event.is_set()
                else "Finishing the export…" if self.export_job in running else "Giving back the models' memory…")
        wait_for_workers(self, "Closing", what, running)
        self._stopping = False

    def is_busy(self) -> bool:
        return any(w is not None and w.is_running() for w in (self.worker, self.export_job, self.releaser))

    # -- generation -----------------------------------------------------------------------------------------
    def generate(self, ab: bool) -> None:
        voice = self.inputs.voice()
        against = self.compare_with() if ab else None
        if self.project is None or voice is None or self.is_busy() or (ab and against is None):
            return
        text = self.inputs.text()
        if not text:
            self.message.setText("Type a sentence to hear first.")
            return
        request = PreviewRequest(engine=self.inputs.engine.name, voice=voice, against=against, text=text,
                                 references=list(self.references),
                                 language=self.inputs.language(),
                                 settings=self.generation.settings(), out_dir=self.project.previews_dir,
                                 whisper_model=self.whisper_model or transcription_model(),
                                 reference_text=self.inputs.reference_text())
        self.worker = preview_worker(self.session, request, self)
        self.worker.progress.connect(self._on_progress)
        self.worker.finished.connect(self._on_generated)
        self.worker.failed.connect(self._on_failed)
        self.progress.setRange(0, 100)
        self.progress.setValue(0)
        self.progress.show()
        self.message.clear()
        self.worker.start()
        self._update_buttons()

    def _on_progress(self, done: int, total: int, what: str) -> None:
        self.progress.setValue(done)
        if self.worker is None or not self.worker.cancel_event.is_set():  # else it says it is stopping
            self.progress.setFormat(f"{what} (%p%)")

    def _on_generated(self, results: list[PreviewResult]) -> None:
        self.progress.hide()
        self._add_row(results)
        spoke = {str(r.checkpoint_label) for r in results if r.checkpoint is None}
        for choice in (self.inputs.model_folder, self.compare_folder):
            if choice.folder is not None and str(choice.folder) in spoke:
                choice.message = ""  # it spoke: an earlier problem with it is past
        self._show_compare_note()
        self.status_message.emit(f"Saved {', '.join(r.wav.name for r in results)} in previews/.")
        self._update_buttons()
        self._released_if_asked()

    def _add_row(self, results: list[PreviewResult]) -> None:
        row = AbRow(results)
        row.play_requested.connect(self.player.toggle)
        self.rows.insert(0, row)
        self.placeholder.hide()
        self.rows_layout.insertWidget(0, row)  # newest on top
        self._order_tabs()
        self._fit_takes_list()

    def _fit_takes_list(self) -> None:
        """One whole take (its sentence, title, level, waveform and WER) in view once there are takes: at 1024x700
        with the judge's table shown the list got the 90 px left over, the waveforms out of sight; the page scrolls
        instead. Without takes the placeholder needs little, and the export form stays in view at 1024x600."""
        self.takes_list.setMinimumHeight(TAKES_MIN_HEIGHT if self.rows else 0)

    def _order_tabs(self) -> None:
        """Tab goes from the buttons to the takes' play buttons as they are shown (newest first, left to right),
        then to the export form: rows made after the page would otherwise come last, after the export."""
        previous: QWidget = self.compare_box
        for row in self.rows:
            for take in row.takes:
                QWidget.setTabOrder(previous, take.play_button)
                previous = take.play_button

    def _on_failed(self, traceback_text: str) -> None:
        self.progress.hide()
        for choice in (self.inputs.model_folder, self.compare_folder):
            if choice.folder is not None and not choice.folder.is_dir():  # it went while the page was open
                choice.set_project(self.project, choice.engine)  # no longer offered; said so
        if traceback_text.rstrip().endswith(f"{TakeStopped.__name__}: {TAKE_STOPPED}"):  # asked for: no error
            self.message.setText(f"{TAKE_STOPPED} Nothing of it was kept.")
        else:
            self.message.setText(span(PROBLEM, escape(failure_message(traceback_text), quote=False), self))
            self._tell_failure("The take was not made", "Speaking the take stopped with an error.", traceback_text)
        self._update_buttons()
        self._released_if_asked()

    # -- export ---------------------------------------------------------------------------------------------
    def export(self) -> None:
        checkpoint = self.inputs.chosen_checkpoint()  # a model folder is only heard: the project's checkpoint
        if self.project is None or checkpoint is None or self.is_busy():
            return
        panel = self.export_panel
        self.export_job = export_worker(checkpoint, panel.out_dir(), panel.options(self.references),
                                        self.project.name, self, reference_text=self.inputs.reference_text())
        self.export_job.progress.connect(panel.show_progress)
        self.export_job.finished.connect(lambda result: (panel.set_busy(False), panel.show_result(result),
                                                         self._update_buttons(), self._released_if_asked()))
        self.export_job.failed.connect(self._export_failed)
        panel.set_busy(True)
        self.export_job.start()
        self._update_buttons()

    def _export_failed(self, traceback_text: str) -> None:
        self.export_panel.set_busy(False)
        self.export_panel.show_error(escape(failure_message(traceback_text), quote=False))
        self._update_buttons()
        self._released_if_asked()
        self._tell_failure("The voice was not exported", "The export stopped with an error; the destination folder "
                           "is as it was.", traceback_text)

    def _tell_failure(self, title: str, what: str, traceback_text: str) -> None:
        """An error the page expects is said under the buttons (above); any other is a bug: its message in a box,
        the traceback under Show Details and in the log, as on the other pages."""
        if expected_failure(traceback_text):
            log_failure(what, traceback_text)  # said to the user in words; the log keeps where it came from
        else:
            show_failure(self, title, what, traceback_text)


def _engine_of(checkpoint: CheckpointInfo, default):
    """The engine a checkpoint was trained with (``default`` for one this version does not know)."""
    try:
        return get_engine(checkpoint.engine)
    except EngineError:
        return default
