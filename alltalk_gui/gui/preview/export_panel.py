"""The export form: format, model name, output folder, precision and extra files, and the Export button.

The formats are those of the checkpoint's engine (:meth:`ExportPanel.set_engine`: ``Engine.export_formats`` with
their titles); an engine whose exports can add the base model's files to keep training elsewhere names them
(``Engine.export_training_files``, e.g. XTTS v2's dvae.pth and mel_stats.pth) and gets the check box. Half
precision is offered where the engine's exports have a choice (``Engine.export_half``).

The folder follows the format. For a format AllTalk loads the user chooses the AllTalk folder once (any folder in it
will do, such as the ``models/xtts`` of an earlier export) and each engine's voice lands in its own
``models/<folder>``: the walk of 2026-11-26 found an F5 export written into ``models/xtts``, where AllTalk never
looks. For the other formats it is the folder chosen. Each kind of folder is remembered on its own. The line under
the folder says where Export will write, before it is pressed, with a warning when AllTalk would not find the voice
there (:func:`alltalk_gui.core.voice.export.export_destination`). The panel only collects choices
(:meth:`ExportPanel.options`, :meth:`ExportPanel.out_dir`); the page runs the export in a worker and reports back
through :meth:`ExportPanel.show_result` / :meth:`show_error`."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QFileDialog, QGridLayout, QGroupBox, QHBoxLayout, QLabel, QLineEdit, QProgressBar,
    QPushButton, QWidget,
)

from alltalk_gui.core.engine_api.engine import DEFAULT_ENGINE, Engine, get_engine
from alltalk_gui.core.voice.export import ExportError, ExportOptions, ExportResult, export_destination
from alltalk_gui.gui import settings
from alltalk_gui.gui.common.status_colours import GOOD, PROBLEM, WARNING, span

ALLTALK_SETTING = "export/alltalk_root"  # the AllTalk folder chosen for the formats AllTalk loads (QSettings)



class ExportPanel(QGroupBox):
    """``export_requested`` fires when the user clicks Export with an output folder chosen."""

    export_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Export", parent)
        self.engine: Engine | None = None
        self.project_name = ""
        self.format = QComboBox()
        self.format.currentIndexChanged.connect(self._format_changed)
        self.name = QLineEdit()
        self.name.setPlaceholderText("folder name")
        self.name.textChanged.connect(self._update_destination)
        self.folder_caption = QLabel("Into")
        self.folder = QLineEdit()
        self.folder.textChanged.connect(self._update_destination)
        self.folder.textEdited.connect(self._remember_folder)
        browse = QPushButton("Choose…")
        browse.clicked.connect(self._choose_folder)
        self.half = QCheckBox("Half precision")
        self.half.setToolTip("Store the weights in 16-bit: half the size, the same voice")
        self.training_files = QCheckBox()
        self.training_files.setToolTip("The base model's files that training needs: to train on from this folder "
                                       "elsewhere (AllTalk's format always has them)")
        self.overwrite = QCheckBox("Replace a folder of that name")
        self.overwrite.setToolTip("Replace an existing export folder of the same name (else Export refuses)")
        self.button = QPushButton("Export")
        self.button.clicked.connect(self.export_requested)
        self.progress = QProgressBar()
        self.progress.hide()
        # Where Export will write (before it is pressed), then what it wrote: one line, the page fits 1024x600.
        self.result = QLabel()
        self.result.setWordWrap(True)
        self.result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._alltalk_kind: bool | None = None  # whether the folder field holds the AllTalk folder now
        self._busy = False

        grid = QGridLayout(self)
        grid.addWidget(QLabel("Format"), 0, 0)
        grid.addWidget(self.format, 0, 1)
        grid.addWidget(QLabel("Name"), 0, 2)
        grid.addWidget(self.name, 0, 3)
        grid.addWidget(self.folder_caption, 1, 0)
        into = QHBoxLayout()
        into.addWidget(self.folder, 1)
        into.addWidget(browse)
        grid.addLayout(into, 1, 1, 1, 3)
        # The choices in one row, the button beside the progress: the page fits a 1024x600 screen.
        choices = QHBoxLayout()
        for box in (self.half, self.overwrite, self.training_files):
            choices.addWidget(box)
        choices.addStretch(1)
        grid.addLayout(choices, 2, 1, 1, 3)
        buttons = QHBoxLayout()
        buttons.addWidget(self.button)
        buttons.addWidget(self.progress, 1)
        grid.addLayout(buttons, 3, 0, 1, 4)
        grid.addWidget(self.result, 4, 0, 1, 4)
        grid.setColumnStretch(1, 1)
        grid.setColumnStretch(3, 1)
        self.set_engine(get_engine(DEFAULT_ENGINE))

    def set_engine(self, engine: Engine) -> None:
        """Offer ``engine``'s formats (the checkpoint's engine); the chosen format stays when it has it."""
        if self.engine is not None and engine.name == self.engine.name:
            return
        self.engine = engine
        current = self.format.currentData()
        self.format.blockSignals(True)
        self.format.clear()
        for key in engine.export_formats:
            self.format.addItem(engine.export_format_titles.get(key, key), key)
        self.format.setCurrentIndex(max(0, self.format.findData(current)))
        self.format.blockSignals(False)
        extra = engine.export_training_files
        self.training_files.setText(f"Add {extra}" if extra else "")
        self.training_files.setToolTip(f"{extra}: the base model's files needed to keep training the voice elsewhere"
                                       if extra else "")
        self.training_files.setVisible(bool(extra))
        self.half.setVisible(engine.export_half)  # hidden where exports are always 16-bit (Orpheus's bf16)
        self._format_changed()

    def set_default_name(self, name: str) -> None:
        self.project_name = name
        if not self.name.text():
            self.name.setText(name)
        self._update_destination()

    def options(self, references: list[Path]) -> ExportOptions:
        return ExportOptions(format=self.format.currentData(), name=self.name.text().strip(),
                             half=self.engine.export_half and self.half.isChecked(),
                             training_files=bool(self.engine.export_training_files)
                             and self.training_files.isChecked(),
                             references=list(references), overwrite=self.overwrite.isChecked())

    def destination(self):
        """Where Export would write now (``export_destination``'s answer); None without a folder or a usable name."""
        chosen = self.folder.text().strip()
        if not chosen or self.engine is None:
            return None
        try:
            return export_destination(self.engine, chosen, self.options([]), self.project_name)
        except ExportError:
            return None

    def out_dir(self) -> Path:
        """The folder the engine's export writes into (its ``models/<folder>`` for a format AllTalk loads)."""
        destination = self.destination()
        return destination.out_dir if destination is not None else Path(self.folder.text().strip()).expanduser()

    def set_busy(self, busy: bool) -> None:
        self._busy = busy
        self.button.setEnabled(not busy and self.destination() is not None)
        self.progress.setVisible(busy)
        if busy:
            self.progress.setRange(0, 100)
            self.progress.setValue(0)
            self.result.clear()

    def show_progress(self, done: int, total: int, what: str) -> None:
        self.progress.setValue(done)
        self.progress.setFormat(f"{what} (%p%)")

    def show_result(self, result: ExportResult) -> None:
        notes = "".join(f"<br>{span(WARNING, w, self)}" for w in result.warnings)
        self.result.setText(f"{span(GOOD, f'Exported to <b>{result.folder}</b>', self)} "
                            f"(weights {result.model_bytes / 1e6:.1f} MB, {len(result.files)} files){notes}")

    def show_error(self, message: str) -> None:
        self.result.setText(span(PROBLEM, message, self))

    # -- the folder -------------------------------------------------------------------------------------------
    def _is_alltalk(self) -> bool:
        return self.engine is not None and self.format.currentData() in self.engine.export_folders

    def _format_changed(self) -> None:
        """The field shows the folder remembered for this kind of format: the AllTalk folder, or the last other one."""
        self._update_training_files()
        alltalk = self._is_alltalk()
        own = self.engine.export_folders.get(self.format.currentData(), "") if self.engine is not None else ""
        self.folder_caption.setText("AllTalk folder" if alltalk else "Into")
        self.folder.setPlaceholderText(f"the AllTalk folder (…/alltalk_tts): the voice goes into its {own}/" if alltalk
                                       else "the folder to export into")
        self.folder.setToolTip("AllTalk's own folder (alltalk_tts). Each engine's voices go into its models/<engine "
                               "folder> there, where AllTalk looks for them." if alltalk else "")
        if alltalk != self._alltalk_kind:  # the folder remembered for this kind; else the one there is kept
            self._alltalk_kind = alltalk
            self.folder.blockSignals(True)
            self.folder.setText(self._remembered(alltalk) or self.folder.text())
            self.folder.blockSignals(False)
        self._update_destination()

    def _remembered(self, alltalk: bool) -> str:
        store = settings.settings()
        key = ALLTALK_SETTING if alltalk else "folders/export"
        return str(store.value(key)) if store.contains(key) else ""

    def _remember_folder(self) -> None:
        folder = self.folder.text().strip()
        if folder:
            settings.settings().setValue(ALLTALK_SETTING if self._is_alltalk() else "folders/export", folder)

    def _choose_folder(self) -> None:
        title = "The AllTalk folder (alltalk_tts)" if self._is_alltalk() else "Export into which folder?"
        folder = QFileDialog.getExistingDirectory(self, title, self.folder.text() or settings.last_folder("export"))
        if folder:
            self.folder.setText(folder)
            self._remember_folder()

    def _update_destination(self) -> None:
        """The line under the folder: where Export will write, and a warning where AllTalk would not find it."""
        destination = self.destination()
        self.button.setEnabled(destination is not None and not self._busy)
        if destination is None:
            self.result.setText("" if not self.folder.text().strip() else
                                span(PROBLEM, "Type a name for the voice's folder.", self))
            return
        text = f"Exports to <b>{destination.folder}</b>"
        if destination.warning:
            text += f"<br>{span(WARNING, destination.warning, self)}"
        self.result.setText(text)

    def _update_training_files(self) -> None:
        # AllTalk loads a model folder only when the base model's training files are in it (XTTS v2's dvae.pth and
        # mel_stats.pth): a format AllTalk loads always includes them.
        alltalk = self.engine is not None and self.format.currentData() in self.engine.export_folders
        self.training_files.setEnabled(not alltalk)
        if alltalk:
            self.training_files.setChecked(True)
