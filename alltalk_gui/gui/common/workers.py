"""QThread workers: long jobs run off the GUI thread and talk back only through signals.

A worker never touches widgets. Each one owns a QThread; ``start()`` runs the job there and ``finished`` (or
``failed``) is emitted in the GUI thread, through a queued connection, when the job ends.

A worker's thread ends by itself when its job ends, so :meth:`Worker.wait` (closing a page, quitting) returns then,
without the GUI thread's event loop. In answer to an event the GUI thread never waits for a thread: the thread is
kept (:class:`_ThreadEnd`) until it has ended, so that nothing destroys it while it still runs. Waiting there used
to block the GUI thread inside Qt, where nothing can interrupt it (a test run in CI of 2026-11-26 stalled for good
in the Preview page's tests).
"""

from __future__ import annotations

import atexit
import threading
import traceback
from typing import Any, Callable

from PySide6.QtCore import QObject, QThread, QTimer, Signal, Slot

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
        finally:
            # The thread ends by itself once its job has (its event loop then returns at once). Were it to wait for
            # the GUI thread to tell it to, a GUI thread waiting for it (closing a page, quitting) would wait forever.
            QThread.currentThread().quit()


class Worker(QObject):
    """Runs ``fn(job)`` in its own QThread. ``fn`` may call ``job.progress.emit(done, total, label)``."""

    progress = Signal(int, int, str)
    finished = Signal(object)  # the function's result
    failed = Signal(str)  # a traceback

    def __init__(self, fn: Callable[[_Job], Any], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.cancel_event = threading.Event()
        self._working = False
        self._thread = QThread()
        self._job = _Job(fn)
        self._job.moveToThread(self._thread)
        self._thread.started.connect(self._job.run)
        self._job.progress.connect(self.progress)
        self._job.done.connect(self._on_done)
        self._job.failed.connect(self._on_failed)

    def start(self) -> None:
        self._working = True
        self._thread.start()

    def cancel(self) -> None:
        self.cancel_event.set()

    def is_running(self) -> bool:
        """Whether the job is still at work: False from the moment ``finished`` or ``failed`` is emitted (its
        thread may need a moment more to end; nobody has to wait for that)."""
        return self._working

    def wait(self, ms: int | None = 30000) -> bool:
        """Wait up to ``ms`` (None: for as long as it takes) for the job and its thread to end; for shutdown and
        tests, never in answer to a GUI event."""
        return self._thread.wait() if ms is None else self._thread.wait(ms)

    def _end_thread(self) -> None:
        self._working = False
        _ThreadEnd.keep(self._thread, self._job)

    @Slot(object)
    def _on_done(self, result: object) -> None:
        self._end_thread()
        self.finished.emit(result)

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self._end_thread()
        self.failed.emit(message)


class _ThreadEnd(QObject):
    """Keeps a worker's QThread (and the job living in it) from the moment its job ended until the thread has
    ended too: a QThread destroyed before it has ended aborts the process, and the Worker (or the page holding it)
    may go first. Never blocks: it looks again every :attr:`LOOK_MS` while the thread is in its last steps (Qt says
    ``isFinished()`` already then; only ``wait(0)`` tells that they are done)."""

    LOOK_MS = 50
    _kept: set["_ThreadEnd"] = set()

    def __init__(self, thread: QThread, job: QObject) -> None:
        super().__init__()
        self.thread_, self.job = thread, job
        thread.finished.connect(self.release)  # queued: this object lives in the GUI thread

    @classmethod
    def keep(cls, thread: QThread, job: QObject) -> None:
        end = cls(thread, job)
        cls._kept.add(end)
        if thread.isFinished():  # ended, or in its last steps, before 'finished' could be heard
            end.release()

    @Slot()
    def release(self) -> None:
        if self.thread_.wait(0):
            _ThreadEnd._kept.discard(self)
        else:
            QTimer.singleShot(self.LOOK_MS, self, self.release)

    @classmethod
    def wait_all(cls, ms: int) -> None:
        """At exit: let the threads that are ending end, before Python destroys them."""
        for end in list(cls._kept):
            end.thread_.wait(ms)


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
    """At exit, let detached jobs end before their QThreads are destroyed, and the threads of ended jobs end."""
    for worker in list(_DETACHED):  # a job still at work cannot be cut short safely: it ends first, as before
        worker.wait(None)
    _ThreadEnd.wait_all(5000)


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
