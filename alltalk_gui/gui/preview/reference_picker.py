"""What a preview speaks from, of the kind the checkpoint's engine declares (``Engine.reference_kind``).

* **clips** (XTTS v2 takes the voice from audio alone): the dataset's three cleanest 3-10 s clips (or files the
  user picks), shown by their words;
* **a clip with its words** (F5-TTS continues one clip and needs exactly what is said in it: a wrong word shifts
  its alignment and the take mumbles): one clip, chosen from the dataset's clean clips (cleanest first, by
  default) or a file, and the clip's words in an editable field, prefilled with the dataset's transcript (or the
  ``<name>.txt`` beside a chosen file), corrected by the user where the transcript is not exact;
* **a speaker name** (an engine that learned the voice as a named speaker): a field for the name;
* **a description** (an engine that speaks in a voice described in words): an editor for the description.

The name and the description start from the engine's suggestion for the checkpoint
(``Engine.reference_suggestion``) and keep what the user typed while the suggestion stays the same.

Automatic references follow the dataset: training writes it, so they are looked for again (:meth:`refresh`)
whenever the checkpoints are, until the user picks files. The widgets are placed by the owner; ``changed`` fires
when the clip or its words change. Reads metadata CSVs and audio headers only (no torch).
"""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QComboBox, QFileDialog, QLabel, QLineEdit, QPlainTextEdit, QPushButton, QWidget

from alltalk_gui.core.dataset.metadata import EVAL_CSV, TRAIN_CSV
from alltalk_gui.core.engine_api.engine import ReferenceKind
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.voice.references import ReferenceClip, ReferenceClipError, candidate_references, reference_text
from alltalk_gui.gui import settings

REFERENCE_COUNT = 3   # clips joined into one conditioning signal
CLIP_CHOICES = 12     # one clip with its words: the cleanest clips offered in the list
TEXT_CAPTIONS = {ReferenceKind.CLIP_WITH_WORDS: "Its words", ReferenceKind.SPEAKER: "Speaker",
                 ReferenceKind.DESCRIPTION: "Voice"}


class ReferencePicker(QObject):
    changed = Signal()

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self._parent = parent
        self.project: VoiceProject | None = None
        self.clips: list[ReferenceClip] = []
        self.automatic = True  # the clips follow the dataset until the user chooses files
        self.kind = ReferenceKind.CLIPS
        self._shown = False  # set_kind has laid the widgets out once
        self._suggestion = ""  # the engine's suggested speaker name or description, last shown
        self._dataset_stamp: tuple | None = None  # the metadata files the automatic clips were read from
        self.caption = QLabel("References")
        self.label = QLabel()  # clips: shown by their words
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.clip_box = QComboBox()  # a clip with its words: the one clip
        self.clip_box.setToolTip("The clip the voice continues from: a clean clip of 4-10 s with no mistakes in "
                                 "its transcript works best")
        self.clip_box.currentIndexChanged.connect(self._clip_chosen)
        self.words_caption = QLabel("Its words")
        self.words = QLineEdit()
        self.words.setPlaceholderText("Type exactly what is said in this clip")
        self.words.setToolTip("The voice continues the reference clip: these must be exactly the words said in it "
                              "(filled in from the dataset; correct them if the transcript is not exact)")
        self.words.textChanged.connect(lambda _text: self.changed.emit())
        self.speaker = QLineEdit()
        self.speaker.setPlaceholderText("The speaker's name, as the voice was trained")
        self.speaker.setToolTip("The model learned the voice under this name")
        self.speaker.textChanged.connect(lambda _text: self.changed.emit())
        self.description = QPlainTextEdit()
        self.description.setPlaceholderText("Describe the voice: who speaks, how, in what room")
        self.description.setToolTip("The model speaks in the voice these words describe")
        self.description.setFixedHeight(self.description.fontMetrics().lineSpacing() * 3 + 12)
        self.description.textChanged.connect(self.changed.emit)
        self.choose_button = QPushButton("Choose…")
        self.choose_button.clicked.connect(self.choose)
        self.auto_button = QPushButton("Automatic")
        self.auto_button.setToolTip("The cleanest 3-10 s clips of the dataset")
        self.auto_button.clicked.connect(self.auto_references)
        self.set_kind(ReferenceKind.CLIPS)

    # -- what the preview uses ------------------------------------------------------------------------------
    @property
    def needs_text(self) -> bool:
        """Whether the engine reads text beside (or instead of) audio: clip words, a name, a description."""
        return self.kind is not ReferenceKind.CLIPS

    @property
    def references(self) -> list[Path]:
        if self.kind is ReferenceKind.CLIP_WITH_WORDS:
            clip = self.selected_clip()
            return [clip.path] if clip is not None else []
        if self.kind is not ReferenceKind.CLIPS:
            return []
        return [c.path for c in (self.clips[:REFERENCE_COUNT] if self.automatic else self.clips)]

    def reference_text(self) -> str:
        """The clip's words, the speaker's name or the description ("" for clips alone)."""
        editor = {ReferenceKind.CLIP_WITH_WORDS: self.words.text, ReferenceKind.SPEAKER: self.speaker.text,
                  ReferenceKind.DESCRIPTION: self.description.toPlainText}.get(self.kind)
        return " ".join(editor().split()) if editor is not None else ""

    def reference_seconds(self) -> float:
        """How long the audio the engine speaks from is (0 for the kinds without audio)."""
        if self.kind is ReferenceKind.CLIP_WITH_WORDS:
            clip = self.selected_clip()
            return clip.duration_s if clip is not None else 0.0
        if self.kind is ReferenceKind.CLIPS:
            return sum(c.duration_s for c in (self.clips[:REFERENCE_COUNT] if self.automatic else self.clips))
        return 0.0

    def selected_clip(self) -> ReferenceClip | None:
        index = self.clip_box.currentIndex()
        return self.clips[index] if 0 <= index < len(self.clips) else None

    # -- engine and project -----------------------------------------------------------------------------------
    def set_kind(self, kind: ReferenceKind, suggestion: str = "") -> None:
        """Lay the picker out for ``kind``. The same kind again keeps the chosen clip and the words as the user
        left them; a speaker name or description starts from ``suggestion`` (the engine's, for the checkpoint)
        and keeps what the user typed while the suggestion is the same."""
        if suggestion != self._suggestion:
            self._suggestion = suggestion
            editor = {ReferenceKind.SPEAKER: self.speaker, ReferenceKind.DESCRIPTION: self.description}.get(kind)
            if editor is not None:
                editor.blockSignals(True)
                editor.setPlainText(suggestion) if editor is self.description else editor.setText(suggestion)
                editor.blockSignals(False)
        if kind is self.kind and self._shown:
            self.changed.emit()
            return
        self.kind, self._shown = kind, True
        audio, one_clip = kind.uses_audio, kind is ReferenceKind.CLIP_WITH_WORDS
        self.caption.setText("Reference" if one_clip else "References")
        self.auto_button.setToolTip("The cleanest clip of the dataset, with its transcript" if one_clip
                                    else "The cleanest 3-10 s clips of the dataset")
        for widget in (self.caption, self.choose_button, self.auto_button):
            widget.setVisible(audio)
        self.label.setVisible(kind is ReferenceKind.CLIPS)
        self.clip_box.setVisible(one_clip)
        self.words_caption.setText(TEXT_CAPTIONS.get(kind, ""))
        self.words_caption.setVisible(kind is not ReferenceKind.CLIPS)
        self.words.setVisible(one_clip)
        self.speaker.setVisible(kind is ReferenceKind.SPEAKER)
        self.description.setVisible(kind is ReferenceKind.DESCRIPTION)
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
        one = self.kind is ReferenceKind.CLIP_WITH_WORDS
        caption = "The reference clip of the voice" if one else "Reference clips of the voice"
        files, _ = QFileDialog.getOpenFileNames(self._parent, caption, settings.last_folder("refs"),
                                                "Audio (*.wav *.flac *.mp3 *.ogg *.m4a);;All files (*)")
        if files:
            settings.set_last_folder("refs", Path(files[0]).parent)
            self.set_references([Path(f) for f in (files[:1] if one else files)])

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
        one = self.kind is ReferenceKind.CLIP_WITH_WORDS
        return f"{clip.path.name} ({clip.duration_s:.1f} s)" if one and clip.duration_s else clip.path.name

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
