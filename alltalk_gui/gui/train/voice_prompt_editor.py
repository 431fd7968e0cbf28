"""The words an engine's fine-tune learns the voice under, edited on the Train page before a run.

XTTS v2 and F5-TTS learn a voice from its clips alone. An engine whose reference is a speaker name or a description
(``Engine.reference_kind``) learns the voice under words too: Parler-TTS under a description ("Jenny speaks at a
moderate speed with a slightly low-pitched voice..."). This box shows the project's (``Engine.voice_prompt``: the
kept one, or a suggestion the engine makes from the project, which may take seconds, so in a worker) and keeps it,
keeps every edit in the project (``Engine.save_voice_prompt``, half a second after the typing stops), and "Suggest
from the recordings" asks for a fresh suggestion. Hidden for the clip kinds.

A speaker name (Orpheus-TTS) is the dataset's ``speaker_name``, which the dataset export writes from the project's
name: it is shown on one line, read-only, without the suggestion button (there is nothing to listen for in a name;
a four-line box that refused every edit and a button that gave the same name back looked broken).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QGroupBox, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

from alltalk_gui.core.engine_api.engine import EngineError, ReferenceKind
from alltalk_gui.core.project.errors import ProjectError
from alltalk_gui.gui.common.workers import Worker, run_detached

TITLES = {ReferenceKind.SPEAKER: "Speaker name", ReferenceKind.DESCRIPTION: "Voice description"}
HINTS = {ReferenceKind.SPEAKER: "{engine} learns the voice under this name, the dataset's speaker name (the dataset "
                                "export writes it from the project's name); previews and exports use it.",
         ReferenceKind.DESCRIPTION: "{engine} learns the voice under this description, with the speaker's name in "
                                    "it; previews and exports use it. Change the words to steer the voice."}
EDITABLE = {ReferenceKind.DESCRIPTION}  # the kinds the user words; a speaker name follows the dataset
SAVE_AFTER_MS = 500


class VoicePromptEditor(QGroupBox):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.engine = None
        self.project = None
        self.job: Worker | None = None
        self._asked: tuple = (None, None, False)
        self.text = QPlainTextEdit()
        self.editable = False  # whether the shown kind is worded by the user (set_context)
        self.text.textChanged.connect(self._typed)
        self.hint = QLabel()
        self.hint.setWordWrap(True)
        self.status = QLabel()
        self.status.setStyleSheet("color: #666;")
        self.suggest = QPushButton("Suggest from the recordings")
        self.suggest.clicked.connect(lambda: self._load(fresh=True))
        self._save_timer = QTimer(self)
        self._save_timer.setSingleShot(True)
        self._save_timer.setInterval(SAVE_AFTER_MS)
        self._save_timer.timeout.connect(self.save)
        self._filling = False
        row = QHBoxLayout()
        row.addWidget(self.status, 1)
        row.addWidget(self.suggest)
        layout = QVBoxLayout(self)
        layout.addWidget(self.hint)
        layout.addWidget(self.text)
        layout.addLayout(row)
        self.hide()

    def set_context(self, engine, project) -> None:
        """Show ``engine``'s voice prompt of ``project`` (hidden for the clip kinds or without a project)."""
        self.save()  # what was typed for the previous engine or project is kept first
        if (engine, project) != (self.engine, self.project):
            # Not the previous one's words while this one's are read or measured (seconds, for a description):
            # an Orpheus speaker name stood under "Voice description" when the project went over to Parler.
            self._filling = True
            self.text.clear()
            self._filling = False
        self.engine, self.project = engine, project
        kind = engine.reference_kind if engine is not None else None
        shown = project is not None and kind in TITLES
        self.setVisible(shown)
        if not shown:
            return
        self.setTitle(TITLES[kind])
        self.hint.setText(HINTS[kind].format(engine=engine.title))
        self.editable = kind in EDITABLE
        lines = 4 if self.editable else 1
        self.text.setFixedHeight(self.text.fontMetrics().lineSpacing() * lines + 12)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth if self.editable
                                  else QPlainTextEdit.LineWrapMode.NoWrap)
        self.text.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded if self.editable
                                             else Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.suggest.setVisible(self.editable)
        self.status.setVisible(self.editable)  # a name has nothing to report but a failure (_loaded)
        self._load(fresh=False)

    def _load(self, fresh: bool) -> None:
        engine, project = self.engine, self.project
        self.suggest.setEnabled(False)
        self.text.setReadOnly(True)
        self.status.setText("Listening to the recordings…" if fresh else "Reading the project…")
        self._asked = (engine, project, fresh)
        # No parent: the job outlives this box if it is closed meanwhile (run_detached keeps it).
        self.job = Worker(lambda _j: engine.voice_prompt(project, suggest=fresh))
        self.job.finished.connect(self._answered)
        self.job.failed.connect(self._not_answered)
        run_detached(self.job)

    def _answered(self, text: str) -> None:
        if self.sender() is self.job:
            self._loaded(*self._asked, text)

    def _not_answered(self, trace: str) -> None:
        if self.sender() is self.job:
            self._loaded(*self._asked, None, trace)

    def _loaded(self, engine, project, fresh: bool, text, trace: str = "") -> None:
        if (engine, project) != (self.engine, self.project):
            return  # another engine or project was chosen meanwhile
        self.suggest.setEnabled(True)
        self.text.setReadOnly(not self.editable)
        if text is None:
            self.status.setText("No suggestion: " + (trace.strip().splitlines() or ["?"])[-1])
            self.status.show()
            return
        self._filling = True
        self.text.setPlainText(text)
        self._filling = False
        if not self.editable:
            self.status.setText("")
        elif text:
            self.save()  # what the page shows is what the project keeps (and what a run trains with)
        else:
            self.status.setText("Write it here.")

    def _typed(self) -> None:
        if not self._filling:
            self.status.setText("")
            self._save_timer.start()

    def save(self) -> None:
        """Keep the text in the project now (an empty text is not kept: the engine says why)."""
        self._save_timer.stop()
        if self.engine is None or self.project is None or self.isHidden() or self.text.isReadOnly():
            return
        try:
            self.engine.save_voice_prompt(self.project, self.text.toPlainText())
            self.project.save()
        except (EngineError, ProjectError, OSError) as exc:  # empty, read-only project, disk
            self.status.setText(str(exc))
            return
        self.status.setText("Kept in the project.")
