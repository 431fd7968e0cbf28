"""The reference clips a preview speaks from, as the checkpoint's engine needs them.

XTTS v2 takes the voice from audio alone: the dataset's three cleanest 3-10 s clips (or files the user picks),
shown by their words. F5-TTS continues one clip and needs exactly what is said in it (a wrong word shifts its
alignment and the take mumbles), so it gets one clip, chosen from the dataset's clean clips (cleanest first, by
default) or a file, and the clip's words in an editable field: prefilled with the dataset's transcript (or the
``<name>.txt`` beside a chosen file), corrected by the user where the transcript is not exact.

Automatic references follow the dataset: training writes it, so they are looked for again (:meth:`refresh`)
whenever the checkpoints are, until the user picks files. The widgets are placed by the owner; ``changed`` fires
when the clip or its words change. Reads metadata CSVs and audio headers only (no torch).
"""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QComboBox, QFileDialog, QLabel, QLineEdit, QPushButton, QWidget

from alltalk_gui.core.dataset.metadata import EVAL_CSV, TRAIN_CSV
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.voice.references import ReferenceClip, ReferenceClipError, candidate_references, reference_text
from alltalk_gui.gui import settings

REFERENCE_COUNT = 3   # XTTS v2: clips joined into one conditioning signal
CLIP_CHOICES = 12     # F5-TTS: the cleanest clips offered in the list


class ReferencePicker(QObject):
    changed = Signal()

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self._parent = parent
        self.project: VoiceProject | None = None
        self.clips: list[ReferenceClip] = []
        self.automatic = True  # the clips follow the dataset until the user chooses files
        self.needs_text = False  # the engine speaks from one clip and its words (F5-TTS)
        self._shown = False  # set_needs_text has laid the widgets out once
        self._dataset_stamp: tuple | None = None  # the metadata files the automatic clips were read from
        self.caption = QLabel("References")
        self.label = QLabel()  # XTTS v2: the clips by their words
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.clip_box = QComboBox()  # F5-TTS: the one clip
        self.clip_box.setToolTip("The clip the voice continues from: a clean clip of 4-10 s with no mistakes in "
                                 "its transcript works best")
        self.clip_box.currentIndexChanged.connect(self._clip_chosen)
        self.words_caption = QLabel("Its words")
        self.words = QLineEdit()
        self.words.setPlaceholderText("Type exactly what is said in this clip")
        self.words.setToolTip("F5-TTS continues the reference clip: these must be exactly the words said in it "
                              "(filled in from the dataset; correct them if the transcript is not exact)")
        self.words.textChanged.connect(lambda _text: self.changed.emit())
        self.choose_button = QPushButton("Choose…")
        self.choose_button.clicked.connect(self.choose)
        self.auto_button = QPushButton("Automatic")
        self.auto_button.setToolTip("The cleanest 3-10 s clips of the dataset")
        self.auto_button.clicked.connect(self.auto_references)
        self.set_needs_text(False)

    # -- what the preview uses ------------------------------------------------------------------------------
    @property
    def references(self) -> list[Path]:
        if self.needs_text:
            clip = self.selected_clip()
            return [clip.path] if clip is not None else []
        return [c.path for c in (self.clips[:REFERENCE_COUNT] if self.automatic else self.clips)]

    def reference_text(self) -> str:
        """The words of the one reference clip ("" for an engine that does not read them)."""
        return " ".join(self.words.text().split()) if self.needs_text else ""

    def selected_clip(self) -> ReferenceClip | None:
        index = self.clip_box.currentIndex()
        return self.clips[index] if 0 <= index < len(self.clips) else None

    # -- engine and project -----------------------------------------------------------------------------------
    def set_needs_text(self, needs_text: bool) -> None:
        """One clip with its words (F5-TTS), or a few clips by their audio alone (XTTS v2). The same kind again
        keeps the chosen clip and the words as the user left them."""
        if needs_text == self.needs_text and self._shown:
            self.changed.emit()
            return
        self.needs_text, self._shown = needs_text, True
        self.caption.setText("Reference" if needs_text else "References")
        self.auto_button.setToolTip("The cleanest clip of the dataset, with its transcript" if needs_text
                                    else "The cleanest 3-10 s clips of the dataset")
        self.label.setVisible(not needs_text)
        for widget in (self.clip_box, self.words_caption, self.words):
            widget.setVisible(needs_text)
        self._show()

    def set_project(self, project: VoiceProject | None) -> None:
        self.project = project
        self._dataset_stamp = None
        self.auto_references()

    def refresh(self) -> None:
        """Look for the automatic clips again when the dataset changed (training writes it)."""
        if self.automatic and self._stamp() != self._dataset_stamp:
            self.auto_references()

    def _stamp(self) -> tuple:
        if self.project is None:
            return ()
        files = (self.project.dataset_dir / name for name in (TRAIN_CSV, EVAL_CSV))
        return tuple(f.stat().st_mtime_ns if f.is_file() else 0 for f in files)

    # -- choosing -------------------------------------------------------------------------------------------
    def auto_references(self) -> None:
        """The dataset's cleanest clips (again, when the user had chosen files: the Automatic button)."""
        self._dataset_stamp = self._stamp()
        found = candidate_references(self.project.dataset_dir) if self.project else []
        self._set_clips(found[:CLIP_CHOICES], automatic=True)

    def set_references(self, paths: list[Path]) -> None:
        """Files the user chose; they stay until Automatic is pressed or another project is opened."""
        self._set_clips([_file_clip(Path(p)) for p in paths], automatic=False)

    def choose(self) -> None:
        caption = "The reference clip of the voice" if self.needs_text else "Reference clips of the voice"
        files, _ = QFileDialog.getOpenFileNames(self._parent, caption, settings.last_folder("refs"),
                                                "Audio (*.wav *.flac *.mp3 *.ogg *.m4a);;All files (*)")
        if files:
            settings.set_last_folder("refs", Path(files[0]).parent)
            self.set_references([Path(f) for f in (files[:1] if self.needs_text else files)])

    def _set_clips(self, clips: list[ReferenceClip], automatic: bool) -> None:
        self.automatic = automatic
        self.clips = clips
        self._show()

    def _show(self) -> None:
        shown = self.clips[:REFERENCE_COUNT] if self.automatic else self.clips
        if shown:
            self.label.setText(", ".join(html.escape(self._title(c)) for c in shown))
            self.label.setToolTip("\n".join(str(c.path) for c in shown))
        else:
            self.label.setText("<i>none yet: they are taken from the dataset once it is exported (Transcribe "
                               "&amp; Edit), or choose clips</i>")
            self.label.setToolTip("")
        self.clip_box.blockSignals(True)
        self.clip_box.clear()
        for clip in self.clips:
            self.clip_box.addItem(self._title(clip, count=10), str(clip.path))
            self.clip_box.setItemData(self.clip_box.count() - 1, str(clip.path), Qt.ItemDataRole.ToolTipRole)
        if not self.clips:
            self.clip_box.addItem("none yet: export the dataset (Transcribe & Edit), or choose a clip")
        self.clip_box.setCurrentIndex(0)
        self.clip_box.blockSignals(False)
        self._clip_chosen()

    def _title(self, clip: ReferenceClip, count: int = 5) -> str:
        """Dataset clips by their words, files the user chose by their names."""
        if self.automatic:
            return _words(clip, count)
        return f"{clip.path.name} ({clip.duration_s:.1f} s)" if self.needs_text and clip.duration_s else clip.path.name

    def _clip_chosen(self) -> None:
        """Fill in the words of the chosen clip (the user may correct them)."""
        clip = self.selected_clip()
        self.words.blockSignals(True)
        self.words.setText(clip.text if clip is not None else "")
        self.words.setCursorPosition(0)
        self.words.blockSignals(False)
        self.changed.emit()


def _file_clip(path: Path) -> ReferenceClip:
    """A file the user chose, with its words when they are known (a text file beside it, or its dataset)."""
    import soundfile

    try:
        text = reference_text(path)
    except ReferenceClipError:
        text = ""
    try:
        seconds = soundfile.info(str(path)).duration
    except (RuntimeError, OSError):  # a format soundfile cannot read: the preview decodes it (or says why)
        seconds = 0.0
    return ReferenceClip(path, text, seconds, 0.0)


def _words(clip: ReferenceClip, count: int = 5) -> str:
    """A reference as a person knows it: its first words and length; a file without known words by its name."""
    words = clip.text.split()
    if not words:
        return clip.path.name
    text = " ".join(words[:count]) + ("…" if len(words) > count else "")
    return f"“{text}” ({clip.duration_s:.1f} s)"
