"""What to preview: the checkpoint (best by default, latest one click away, or any), the reference clips (the
dataset's cleanest 3-10 s clips, or files the user picks), the language and the sentence (the shipped sentences
for that language, or typed).

Best is the default because the references export their lowest-eval-loss model (AllTalk's and
xtts-finetune-webui's ``best_model.pth``); the note under it says that an eval loss on a few clips is only a rough
guide, and the "Use latest" button switches in one click, so the user's ears decide.

Automatic references follow the dataset: training writes it, so they are looked for again whenever the
checkpoints are (page shown, Refresh) until the user picks files, and are shown by their words, not file names.
Each checkpoint is listed once, marked "latest" and "best" where it is.

Reads checkpoints and reference clips through the core (JSON and audio files only: no torch). ``changed`` fires
when the checkpoint or the references change, so the page can update its buttons and defaults.
"""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QFileDialog, QGridLayout, QHBoxLayout, QLabel, QPushButton, QWidget

from alltalk_gui.core.training.checkpoints import CheckpointError, CheckpointInfo, list_checkpoints, resolve_checkpoint
from alltalk_gui.core.engines import languages
from alltalk_gui.core.voice.preview import default_sentences
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.dataset.metadata import EVAL_CSV, TRAIN_CSV
from alltalk_gui.core.voice.references import ReferenceClip, candidate_references
from alltalk_gui.gui import settings

LANGUAGES = list(languages.CODES)
REFERENCE_COUNT = 3


class PreviewInputs(QWidget):
    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.project: VoiceProject | None = None
        self.checkpoints: list[CheckpointInfo] = []
        self.references: list[Path] = []
        self.automatic = True  # references follow the dataset until the user chooses files
        self._dataset_stamp: tuple | None = None  # the metadata files the automatic references were read from
        self.checkpoint_box = QComboBox()
        self.checkpoint_box.currentIndexChanged.connect(self.changed)
        self.checkpoint_box.currentIndexChanged.connect(self._update_switch)
        refresh = QPushButton("Refresh")
        refresh.setToolTip("Look for new checkpoints (training writes them as it goes)")
        refresh.clicked.connect(self.refresh)
        self.switch_button = QPushButton("Use latest")
        self.switch_button.setToolTip("Switch between the best checkpoint (lowest eval loss) and the latest one")
        self.switch_button.clicked.connect(self._switch_best_latest)
        self.special: dict[str, int] = {}  # "best" / "latest" -> the row of the checkpoint marked so
        self.checkpoint_note = QLabel("<small>Best = the lowest eval loss. On a few eval clips that is only a rough "
                                      "guide: listen, and compare with the latest checkpoint.</small>")
        self.checkpoint_note.setWordWrap(True)
        self.reference_label = QLabel()
        self.reference_label.setWordWrap(True)
        self.reference_label.setTextFormat(Qt.TextFormat.RichText)
        choose = QPushButton("Choose…")
        choose.clicked.connect(self._choose_references)
        auto = QPushButton("Automatic")
        auto.setToolTip("The cleanest 3-10 s clips of the dataset")
        auto.clicked.connect(self.auto_references)
        self.language_box = QComboBox()
        self.language_box.setEditable(True)
        self.language_box.addItems(LANGUAGES)
        self.language_box.currentTextChanged.connect(self._fill_sentences)
        self.text_box = QComboBox()
        self.text_box.setEditable(True)
        self.text_box.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.text_box.lineEdit().setPlaceholderText("Type a sentence, or pick one")

        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.addWidget(QLabel("Checkpoint"), 0, 0)
        grid.addWidget(self.checkpoint_box, 0, 1)
        checkpoint_buttons = QHBoxLayout()
        checkpoint_buttons.addWidget(self.switch_button)
        checkpoint_buttons.addWidget(refresh)
        grid.addLayout(checkpoint_buttons, 0, 2)
        grid.addWidget(self.checkpoint_note, 1, 1, 1, 2)
        grid.addWidget(QLabel("References"), 2, 0)
        grid.addWidget(self.reference_label, 2, 1)
        refs = QHBoxLayout()
        refs.addWidget(choose)
        refs.addWidget(auto)
        grid.addLayout(refs, 2, 2)
        grid.addWidget(QLabel("Language"), 3, 0)
        grid.addWidget(self.language_box, 3, 1, Qt.AlignmentFlag.AlignLeft)
        grid.addWidget(QLabel("Text"), 4, 0)
        grid.addWidget(self.text_box, 4, 1, 1, 2)
        grid.setColumnStretch(1, 1)
        self._fill_sentences(self.language_box.currentText())

    def set_project(self, project: VoiceProject | None) -> None:
        self.project = project
        if project is not None:
            self.language_box.setCurrentText(project.language)
        self._dataset_stamp = None
        self.auto_references()
        self.refresh()

    def refresh(self) -> None:
        """Re-read the checkpoints (training may have written new ones) and the automatic references (training may
        have written the dataset). The selection stays: a checkpoint chosen as "best" or "latest" follows that mark
        to whichever checkpoint carries it now, another stays by path; the first time it is the best checkpoint (the
        latest while none has an eval loss)."""
        if self.automatic and self._dataset_changed():
            self.auto_references()
        previous = self.checkpoint_box.currentData()
        kept = next((which for which in ("best", "latest")
                     if self.special.get(which) == self.checkpoint_box.currentIndex()), None)
        self.checkpoint_box.blockSignals(True)
        self.checkpoint_box.clear()
        self.special = {}
        self.checkpoints = list_checkpoints(self.project.root) if self.project else []
        tags: dict[str, list[str]] = {}
        for which in ("latest", "best") if self.project and self.checkpoints else ():
            try:
                tags.setdefault(str(resolve_checkpoint(self.project.root, which).path), []).append(which)
            except CheckpointError:  # no eval yet: no "best"
                continue
        for row, checkpoint in enumerate(reversed(self.checkpoints)):  # newest first, each once
            marks = tags.get(str(checkpoint.path))
            self.special.update({which: row for which in marks or ()})
            self.checkpoint_box.addItem(f"{checkpoint.label}  ({', '.join(marks)})" if marks else checkpoint.label,
                                        str(checkpoint.path))
        index = self.special.get(kept, -1) if kept else (
            self.checkpoint_box.findData(previous) if previous is not None else -1)
        self.checkpoint_box.setCurrentIndex(index if index >= 0 else self.special.get("best", 0))
        self.checkpoint_box.blockSignals(False)
        self._update_switch()
        self.changed.emit()

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

    def _dataset_changed(self) -> bool:
        stamp = self._stamp()
        return stamp != self._dataset_stamp

    def _stamp(self) -> tuple:
        if self.project is None:
            return ()
        files = (self.project.dataset_dir / name for name in (TRAIN_CSV, EVAL_CSV))
        return tuple(f.stat().st_mtime_ns if f.is_file() else 0 for f in files)

    def auto_references(self) -> None:
        """The dataset's cleanest clips (again, when the user had chosen files: the Automatic button)."""
        self._dataset_stamp = self._stamp()
        found = candidate_references(self.project.dataset_dir) if self.project else []
        self._show_references(found[:REFERENCE_COUNT], automatic=True)

    def set_references(self, paths: list[Path]) -> None:
        """Files the user chose; they stay until Automatic is pressed or another project is opened."""
        self._show_references([ReferenceClip(Path(p), "", 0.0, 0.0) for p in paths], automatic=False)

    def _show_references(self, clips: list[ReferenceClip], automatic: bool) -> None:
        self.automatic = automatic
        self.references = [c.path for c in clips]
        if clips:
            self.reference_label.setText(", ".join(html.escape(_words(c)) for c in clips))
            self.reference_label.setToolTip("\n".join(str(c.path) for c in clips))
        else:
            self.reference_label.setText("<i>none yet: they are taken from the dataset once it is exported "
                                         "(Transcribe &amp; Edit), or choose clips</i>")
            self.reference_label.setToolTip("")
        self.changed.emit()

    def _choose_references(self) -> None:
        files, _ = QFileDialog.getOpenFileNames(self, "Reference clips of the voice", settings.last_folder("refs"),
                                                "Audio (*.wav *.flac *.mp3 *.ogg *.m4a);;All files (*)")
        if files:
            settings.set_last_folder("refs", Path(files[0]).parent)
            self.set_references([Path(f) for f in files])

    def _fill_sentences(self, language: str) -> None:
        typed = self.text_box.currentText()
        sentences = default_sentences(language)
        self.text_box.clear()
        self.text_box.addItems(sentences)
        if typed and typed not in sentences:  # keep what the user typed
            self.text_box.setCurrentText(typed)


def _words(clip: ReferenceClip, count: int = 5) -> str:
    """A reference as a person knows it: its first words and length; a chosen file by its name."""
    words = clip.text.split()
    if not words:
        return clip.path.name
    text = " ".join(words[:count]) + ("…" if len(words) > count else "")
    return f"“{text}” ({clip.duration_s:.1f} s)"
