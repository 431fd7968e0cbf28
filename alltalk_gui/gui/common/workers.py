"""QThread workers: long jobs run off the GUI thread and talk back only through signals.

A worker never touches widgets. Each one owns a QThread; ``start()`` runs the job there and ``finished`` is
emitted (in the GUI thread, through a queued connection) when it ends, whether it succeeded or not.
"""

from __future__ import annotations

import atexit
import threading
import traceback
from typing import Any, Callable

from PySide6.QtCore import QObject, QThread, Signal, Slot

from alltalk_gui.core.project.folder import VoiceProject


class _Job(QObject):
    progress = Signal(int, int, str)
    done = Signal(object)
    failed = Signal(str)

    def __init__(self, fn: Callable[["_Job"], Any]) -> None:
        super().__init__()
        self._fn = fn

    @Slot()
    def run(self) -> None:
        try:
            self.done.emit(self._fn(self))
        except Exception:  # shown to the user in full rather than lost in a thread
            self.failed.emit(traceback.format_exc())


class Worker(QObject):
    """Runs ``fn(job)`` in its own QThread. ``fn`` may call ``job.progress.emit(done, total, label)``."""

    progress = Signal(int, int, str)
    finished = Signal(object)  # the function's result
    failed = Signal(str)  # a traceback

    def __init__(self, fn: Callable[[_Job], Any], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.cancel_event = threading.Event()
        self._thread = QThread()
        self._job = _Job(fn)
        self._job.moveToThread(self._thread)
        self._thread.started.connect(self._job.run)
        self._job.progress.connect(self.progress)
        self._job.done.connect(self._on_done)
        self._job.failed.connect(self._on_failed)

    def start(self) -> None:
        self._thread.start()

    def cancel(self) -> None:
        self.cancel_event.set()

    def is_running(self) -> bool:
        return self._thread.isRunning()

    def wait(self, ms: int = 30000) -> bool:
        return self._thread.wait(ms)

    def _stop_thread(self) -> None:
        self._thread.quit()
        self._thread.wait()

    @Slot(object)
    def _on_done(self, result: object) -> None:
        self._stop_thread()
        self.finished.emit(result)

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self._stop_thread()
        self.failed.emit(message)


_DETACHED: set[Worker] = set()


def run_detached(worker: Worker) -> Worker:
    """Start ``worker`` (made without a parent) and keep it until its job ends, whatever happens to the widget that
    asked: a widget closed meanwhile would otherwise destroy a running QThread, and Qt aborts the process then.
    The widget should connect bound methods (Qt drops those connections when it is destroyed)."""
    _DETACHED.add(worker)
    worker.finished.connect(lambda _result: _DETACHED.discard(worker))
    worker.failed.connect(lambda _trace: _DETACHED.discard(worker))
    worker.start()
    return worker


@atexit.register
def _finish_detached() -> None:
    """At exit, let detached jobs end before their QThreads are destroyed."""
    for worker in list(_DETACHED):
        worker._stop_thread()


def adopt_worker(project: VoiceProject, orphans: Any, parent: QObject | None = None) -> Worker:
    """A worker that imports what an interrupted import left in the project (core.project.orphans); ``finished``
    carries the ImportReport, as :func:`import_worker`'s does."""

    def job(j: _Job) -> Any:
        from alltalk_gui.core.project.orphans import adopt_orphans

        return adopt_orphans(project, orphans, progress=j.progress.emit, cancel=worker.cancel_event.is_set)

    worker = Worker(job, parent)
    return worker


def import_worker(project: VoiceProject, paths: list[str], parent: QObject | None = None) -> Worker:
    """A worker that imports ``paths`` into ``project``; ``finished`` carries the ImportReport."""

    def job(j: _Job) -> Any:
        # The decoders (PyAV, numpy) load with the first import, not while the main window is being built.
        from alltalk_gui.core.project.importer import import_files

        return import_files(project, paths, progress=j.progress.emit, cancel=worker.cancel_event.is_set)

    worker = Worker(job, parent)
    return worker
