"""The Transcribe controls: backend, model, language and device, the Transcribe button, progress and Cancel.

The panel only gathers choices and shows progress; the page runs the workers. Choices other than the language
are remembered across projects (QSettings); the language starts as the project's own.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox, QFileDialog, QGridLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget,
)

from alltalk_gui.core.engine_api import languages
from alltalk_gui.core.transcription.languages import to_whisper
from alltalk_gui.gui import settings

OPENAI, FASTER = "openai-whisper", "faster-whisper"  # the names alltalk_gui.core.transcription.model_files uses
MODELS = ["tiny", "tiny.en", "base", "base.en", "small", "small.en", "medium", "medium.en", "large-v3", "turbo"]
MODEL_TIPS = {"tiny": "fastest, least accurate", "small": "good on a CPU", "medium": "slow on a CPU",
              "large-v3": "most accurate; needs a GPU", "turbo": "nearly large-v3 accuracy, much faster; GPU"}
LOCAL = "__local__"
# XTTS v2's languages, as (project code, Whisper code, name): the one list in core.engine_api.languages.
LANGUAGES = [(lang.code, to_whisper(lang.code), lang.name) for lang in languages.LANGUAGES]


def _eta(seconds: float | None) -> str:
    if seconds is None:
        return "estimating time left…"
    seconds = int(round(seconds))
    return f"about {seconds // 60} min {seconds % 60:02d} s left" if seconds >= 60 else f"about {seconds} s left"


class TranscribePanel(QWidget):
    """``transcribe_requested`` when the button is pressed; ``cancel_requested`` for Cancel."""

    transcribe_requested = Signal()
    cancel_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.backend = QComboBox()
        # Short names, so both read whole at 1024 px; what tells them apart is in the tooltips.
        self.backend.addItem("openai-whisper", OPENAI)
        self.backend.addItem("faster-whisper", FASTER)
        self.backend.setItemData(0, "The default: OpenAI's own Whisper (PyTorch).", Qt.ItemDataRole.ToolTipRole)
        self.backend.setItemData(1, "Low VRAM: about half the memory, and faster on a CPU.", Qt.ItemDataRole.ToolTipRole)
        self.backend.setToolTip("openai-whisper is the default; faster-whisper needs about half the memory (low VRAM) "
                                "and is faster on a CPU.")
        self.model = QComboBox()
        for name in MODELS:
            self.model.addItem(f"{name}  ({MODEL_TIPS[name]})" if name in MODEL_TIPS else name, name)
        self.model.addItem("Local model…", LOCAL)
        self.model.activated.connect(self._on_model_activated)
        self.language = QComboBox()
        self.language.addItem("Detect automatically", "auto")
        for _code, whisper_code, name in LANGUAGES:
            self.language.addItem(name, whisper_code)
        self.device = QComboBox()
        for label, value in (("Automatic", "auto"), ("CPU", "cpu"), ("NVIDIA GPU (CUDA)", "cuda")):
            self.device.addItem(label, value)
        for combo in (self.backend, self.model, self.language, self.device):
            # As wide as the layout gives, not as wide as the longest entry (a local model's path widened the
            # whole window, and it never came back to a small size).
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(9)  # the four and the button fit a 911 px window (1366 px at 150 %)
        self.transcribe_button = QPushButton("Transcribe")
        self.transcribe_button.setDefault(True)
        self.transcribe_button.clicked.connect(self.transcribe_requested)

        grid = QGridLayout()
        grid.setContentsMargins(0, 0, 0, 0)
        for column, (label, widget) in enumerate((("Backend", self.backend), ("Model", self.model),
                                                  ("Language", self.language), ("Device", self.device))):
            grid.addWidget(QLabel(label), 0, column)
            grid.addWidget(widget, 1, column)
        grid.addWidget(self.transcribe_button, 1, 4)
        for column, stretch in enumerate((3, 4, 2, 2)):  # the room shared, the model's name gets the most
            grid.setColumnStretch(column, stretch)

        self.file_label = QLabel()
        self.file_label.setWordWrap(True)  # a long file name wraps instead of widening the window
        self.file_label.setMinimumWidth(190)
        self.file_bar = QProgressBar()
        self.overall_label = QLabel()
        self.overall_bar = QProgressBar()
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel_requested)
        self.progress_box = QWidget()
        bars = QGridLayout(self.progress_box)
        bars.setContentsMargins(0, 0, 0, 0)
        bars.addWidget(self.file_label, 0, 0)
        bars.addWidget(self.file_bar, 0, 1)
        bars.addWidget(self.overall_label, 1, 0)
        bars.addWidget(self.overall_bar, 1, 1)
        bars.addWidget(self.cancel_button, 0, 2, 2, 1)
        bars.setColumnStretch(1, 1)
        self.progress_box.hide()

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(grid)
        layout.addWidget(self.progress_box)
        self._restore()

    # -- choices --------------------------------------------------------------------------------------------
    def options(self):
        """The choices as the core's ``TranscribeOptions`` (imported here: the core module is light)."""
        from alltalk_gui.core.transcription.transcribe import TranscribeOptions

        return TranscribeOptions(backend=self.backend.currentData(), model=self.model.currentData(),
                                 language=self.language.currentData(), device=self.device.currentData())

    def set_language(self, project_language: str) -> None:
        whisper_code = next((w for code, w, _n in LANGUAGES if code == project_language), project_language)
        index = self.language.findData(whisper_code)
        self.language.setCurrentIndex(index if index >= 0 else 0)

    def set_model(self, model: str) -> None:
        """Select a model name, or add and select a local model path."""
        index = self.model.findData(model)
        if index < 0:
            index = self.model.count() - 1  # just above "Local model…"
            # Model folders are often just called "model": then the parent's name says which one it is.
            path = Path(model)
            shown = path.parent.name if path.name.lower() in ("model", "models") and path.parent.name else path.name
            self.model.insertItem(index, f"Local: {shown}", model)
            self.model.setItemData(index, model, Qt.ItemDataRole.ToolTipRole)
        self.model.setCurrentIndex(index)
        self._save()

    def choose_local_model(self) -> bool:
        """Ask for a model on disk: a .pt file for openai-whisper, a model folder for faster-whisper."""
        start = settings.last_folder("models")
        if self.backend.currentData() == OPENAI:
            path, _ = QFileDialog.getOpenFileName(self, "Choose a Whisper checkpoint", start,
                                                  "Whisper checkpoints (*.pt);;All files (*)")
        else:
            path = QFileDialog.getExistingDirectory(self, "Choose a faster-whisper model folder", start)
        if not path:
            return False
        settings.set_last_folder("models", Path(path).parent)
        self.set_model(path)
        return True

    def _on_model_activated(self, index: int) -> None:
        if self.model.itemData(index) == LOCAL and not self.choose_local_model():
            self.model.setCurrentIndex(self._previous_model)
        self._previous_model = self.model.currentIndex()
        self._save()

    def _restore(self) -> None:
        store = settings.settings()
        for combo, key, default in ((self.backend, "backend", OPENAI), (self.device, "device", "auto")):
            combo.setCurrentIndex(max(0, combo.findData(store.value(f"transcribe/{key}", default))))
            combo.currentIndexChanged.connect(self._save)
        model = str(store.value("transcribe/model", "small"))
        if model in MODELS or Path(model).exists():
            self.set_model(model)
        else:
            self.model.setCurrentIndex(self.model.findData("small"))
        self._previous_model = self.model.currentIndex()

    def _save(self) -> None:
        store = settings.settings()
        store.setValue("transcribe/backend", self.backend.currentData())
        store.setValue("transcribe/device", self.device.currentData())
        if self.model.currentData() != LOCAL:
            store.setValue("transcribe/model", self.model.currentData())

    # -- progress -------------------------------------------------------------------------------------------
    def set_busy(self, busy: bool) -> None:
        self.progress_box.setVisible(busy)
        self.cancel_button.setEnabled(True)
        for widget in (self.backend, self.model, self.language, self.device, self.transcribe_button):
            widget.setEnabled(not busy)
        if busy:
            self.file_bar.setRange(0, 0)
            self.overall_bar.setRange(0, 0)
            self.file_label.setText("Starting…")
            self.overall_label.clear()

    def show_cancelling(self) -> None:
        self.cancel_button.setEnabled(False)
        self.file_label.setText("Stopping…")

    def show_download(self, done: int, total: int) -> None:
        self.file_bar.setRange(0, 1000)
        self.file_bar.setValue(int(1000 * done / max(total, 1)))
        self.file_label.setText(f"Downloading the model: {done / 1e6:.0f} of {total / 1e6:.0f} MB")
        self.overall_bar.setRange(0, 0)
        self.overall_label.setText("Transcription starts when the download is done")

    def show_progress(self, progress) -> None:
        """Show a core ``transcribe.Progress``."""
        if progress.stage == "loading":
            self.file_bar.setRange(0, 0)
            self.file_label.setText("Loading the model…")
            return
        # Whisper reports a file's progress per recognised passage: a short file goes from 0 straight to done.
        # Until the first report the bar moves as "busy" instead of sitting at a 0 % that looks stuck.
        self.file_bar.setRange(0, 1000 if progress.file_fraction > 0 else 0)
        self.overall_bar.setRange(0, 1000)
        self.file_bar.setValue(int(1000 * progress.file_fraction))
        self.overall_bar.setValue(int(1000 * progress.overall_fraction))
        if progress.stage == "transcribing":
            self.file_label.setText(f"{progress.file_name} ({progress.file_index + 1} of {progress.file_count})")
        else:
            self.file_label.setText("Cutting into clips and saving…")
        self.overall_label.setText(f"All files: {_eta(progress.eta_s)}")
