"""The chosen engine's own Python environment, set up from the Train page when it is not there yet.

An engine whose packages conflict with the app's runs in a small environment of its own
(:mod:`alltalk_gui.core.engine_api.environment`), made once. When the chosen engine has one and it is not set up,
this bar says so with the download and disk size in words, and its button makes it in a worker, pip's lines
showing as they come (Cancel removes what was made). Nothing shows for an engine that runs in the app itself, or
once the environment is ready. The frozen app cannot make one and says so when asked.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QMessageBox, QProgressBar, QPushButton, QVBoxLayout, QWidget

from alltalk_gui.gui.common.workers import Worker, run_detached


class EngineEnvironmentBar(QWidget):
    ready = Signal()  # the environment was made (or found ready)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.engine = None
        self.job: Worker | None = None
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.button = QPushButton("Set up…")
        self.button.clicked.connect(self.offer)
        self.cancel = QPushButton("Cancel")
        self.cancel.clicked.connect(self._cancel)
        self.cancel.hide()
        self.progress = QProgressBar()
        self.progress.setRange(0, 0)
        self.progress.hide()
        self.line = QLabel()  # pip's last line
        self.line.setStyleSheet("color: #666;")
        self.line.hide()
        row = QHBoxLayout()
        row.addWidget(self.label, 1)
        row.addWidget(self.button)
        row.addWidget(self.cancel)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        layout.addWidget(self.progress)
        layout.addWidget(self.line)
        self.setStyleSheet("EngineEnvironmentBar { border-left: 3px solid #1565c0; }")
        self.hide()

    def _cancel(self) -> None:
        if self.job is not None:
            self.job.cancel()

    def set_engine(self, engine) -> None:
        """Show the bar when ``engine`` needs an environment that is not set up (not while one is being made)."""
        self.engine = engine
        if self.is_running():
            return
        self.setVisible(not self.is_ready())
        env = engine.environment
        if env is not None:
            self.label.setText(f"{engine.title} runs in a Python environment of its own, which is not set up yet: "
                               f"{env.why} It takes {env.download_size}; training, previews and exports of "
                               f"{engine.title} need it.")

    def is_ready(self) -> bool:
        from alltalk_gui.core.engine_api.environment import is_ready

        env = self.engine.environment if self.engine is not None else None
        return env is None or is_ready(env)

    def is_running(self) -> bool:
        return self.job is not None and self.job.is_running()

    def offer(self) -> None:
        """Ask, then make the environment in a worker."""
        engine = self.engine
        env = engine.environment
        answer = QMessageBox.question(
            self, f"Set up {engine.title}",
            f"{env.why}\n\nThe app makes it once, beside its own environment ({env.download_size}; pip downloads "
            f"the packages from the Python Package Index). Set it up now?")
        if answer == QMessageBox.StandardButton.Yes:
            self.start()

    def start(self) -> None:
        from alltalk_gui.core.engine_api.environment import create

        env = self.engine.environment

        def job(j):
            return create(env, progress=lambda line: j.progress.emit(0, 0, line), cancelled=worker.cancel_event.is_set)

        # No parent: a page closed meanwhile must not destroy the running thread (run_detached keeps it).
        worker = self.job = Worker(job)
        self.job.progress.connect(self._progress)
        self.job.finished.connect(self._done)
        self.job.failed.connect(self._failed)
        self.button.setEnabled(False)
        self.cancel.show()
        self.progress.show()
        self.line.show()
        run_detached(self.job)

    def _progress(self, _done: int, _total: int, line: str) -> None:
        self.line.setText(line[:200])

    def _done(self, _python) -> None:
        self._idle()
        self.hide()
        self.ready.emit()

    def _failed(self, trace: str) -> None:
        self._idle()
        lines = [line for line in trace.strip().splitlines() if line.strip()]
        # The error's message is everything after its class name's line (pip's last lines included).
        start = next((i for i, line in enumerate(lines) if "EngineEnvironmentError:" in line), len(lines) - 1)
        message = "\n".join(lines[start:]).split("EngineEnvironmentError:", 1)[-1].strip()
        self.line.setText(message.splitlines()[0] if message else "")
        QMessageBox.warning(self, f"{self.engine.title} is not set up", message)

    def _idle(self) -> None:
        self.button.setEnabled(True)
        self.cancel.hide()
        self.progress.hide()
