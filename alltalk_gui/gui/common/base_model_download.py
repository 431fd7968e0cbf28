"""An engine's base-model download, as the first-run page (XTTS v2) and the Train page (the chosen engine) offer it.

A "Download…" button and a progress bar, placed by the page that owns them. The button shows the engine's
licence (its title and summary: the Coqui Public Model License for XTTS v2, CC BY-NC 4.0 for F5-TTS) when it has
not been accepted, then asks for a folder, and downloads there in a worker (``Engine.download_base_model``) with
progress per file. ``finished`` carries the folder once it downloaded and validated; ``failed`` the last line of
the error. What to do with a downloaded folder (remember it, check it again) is the page's business.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog, QMessageBox, QProgressBar, QPushButton, QWidget

from alltalk_gui.core.engine_api.engine import DEFAULT_ENGINE, Engine, get_engine
from alltalk_gui.gui.common.failure import failure_message
from alltalk_gui.gui.common.workers import Worker


class BaseModelDownload(QObject):
    finished = Signal(object)  # Path: the folder that now holds a validated base model
    failed = Signal(str)       # what went wrong, one line

    def __init__(self, parent: QWidget, engine: str = DEFAULT_ENGINE) -> None:
        super().__init__(parent)
        self._parent = parent
        self.button = QPushButton("Download…")
        self.button.clicked.connect(self.ask_and_download)
        self.progress = QProgressBar()
        self.progress.hide()
        self.job: Worker | None = None
        self.engine: Engine = get_engine(engine)
        self.set_engine(engine)

    def set_engine(self, name: str) -> None:
        """Download this engine's base model from now on (not while a download runs: the button is disabled)."""
        self.engine = get_engine(name)
        self.button.setToolTip(f"Download {self.engine.title} from the Hugging Face Hub ({self.engine.download_size})"
                               f" after accepting the {self.engine.licence.title}")

    def is_running(self) -> bool:
        return self.job is not None and self.job.is_running()

    def ask_and_download(self) -> None:
        """Ask for the licence (unless accepted) and a folder, then download into it."""
        engine = self.engine
        if not engine.licence_accepted():
            licence = engine.licence
            answer = QMessageBox.question(
                self._parent, licence.title,
                f"{engine.title} ({engine.download_size}): {licence.summary}\n\nDo you accept the licence?")
            if answer != QMessageBox.StandardButton.Yes:
                return
            engine.accept_licence()
        folder = QFileDialog.getExistingDirectory(self._parent, f"Download {engine.title} into this folder")
        if folder:
            self.download(Path(folder))

    def download(self, folder: Path) -> None:
        """Download the base model into ``folder`` in a worker, with progress (the licence must be accepted)."""
        engine = self.engine

        def job(j):
            return engine.download_base_model(folder, progress=lambda p: j.progress.emit(
                p.done_bytes // (1 << 20), max(p.total_bytes // (1 << 20), 1),
                f"{p.file} ({p.file_index}/{p.file_count})"))

        self.job = Worker(job, self)
        self.job.progress.connect(self._progress)
        self.job.finished.connect(lambda _info: self._done(folder, None))
        self.job.failed.connect(lambda tb: self._done(folder, failure_message(tb)))
        self.button.setEnabled(False)
        self.progress.setRange(0, 0)
        self.progress.show()
        self.job.start()

    def _progress(self, done: int, total: int, what: str) -> None:
        self.progress.setRange(0, total)
        self.progress.setValue(done)
        self.progress.setFormat(f"{what}: {done} / {total} MB")

    def _done(self, folder: Path, error: str | None) -> None:
        self.progress.hide()
        self.button.setEnabled(True)
        if error:
            self.failed.emit(error)
        else:
            self.finished.emit(folder)
