"""The XTTS v2 base-model download, as the first-run page and the Train page both offer it.

A "Download…" button and a progress bar, placed by the page that owns them. The button asks for the Coqui
Public Model License first when it has not been accepted, then for a folder, and downloads there in a worker
(:func:`alltalk_gui.core.engines.xtts.download.download_base_model`) with progress per file. ``finished``
carries the folder once it downloaded and validated; ``failed`` the last line of the error. What to do with a
downloaded folder (remember it, check it again) is the page's business.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog, QMessageBox, QProgressBar, QPushButton, QWidget

from alltalk_gui.gui.common.workers import Worker


class BaseModelDownload(QObject):
    finished = Signal(object)  # Path: the folder that now holds a validated base model
    failed = Signal(str)       # what went wrong, one line

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self._parent = parent
        self.button = QPushButton("Download…")
        self.button.setToolTip("Download XTTS v2 from the Hugging Face Hub (about 2 GB) after accepting the Coqui "
                               "Public Model License")
        self.button.clicked.connect(self.ask_and_download)
        self.progress = QProgressBar()
        self.progress.hide()
        self.job: Worker | None = None

    def is_running(self) -> bool:
        return self.job is not None and self.job.is_running()

    def ask_and_download(self) -> None:
        """Ask for the licence (unless accepted) and a folder, then download into it."""
        from alltalk_gui.core.engines.xtts import download as dl

        if not dl.licence_accepted():
            answer = QMessageBox.question(self._parent, "Coqui Public Model License",
                                          dl.LICENCE_SUMMARY + "\n\nDo you accept the licence?")
            if answer != QMessageBox.StandardButton.Yes:
                return
            dl.accept_licence()
        folder = QFileDialog.getExistingDirectory(self._parent, "Download XTTS v2 into this folder")
        if folder:
            self.download(Path(folder))

    def download(self, folder: Path) -> None:
        """Download the base model into ``folder`` in a worker, with progress (the licence must be accepted)."""
        from alltalk_gui.core.engines.xtts import download as dl

        def job(j):
            return dl.download_base_model(folder, progress=lambda p: j.progress.emit(
                p.done_bytes // (1 << 20), max(p.total_bytes // (1 << 20), 1),
                f"{p.file} ({p.file_index}/{p.file_count})"))

        self.job = Worker(job, self)
        self.job.progress.connect(self._progress)
        self.job.finished.connect(lambda _info: self._done(folder, None))
        self.job.failed.connect(lambda tb: self._done(folder, tb.strip().splitlines()[-1]))
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
