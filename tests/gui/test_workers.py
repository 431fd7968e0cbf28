"""Workers: the GUI thread hears that a job ended without waiting for the job's thread to end, and the thread is
kept until it has ended, whoever dropped the worker meanwhile."""

from __future__ import annotations

import gc
import threading
import time

from PySide6.QtCore import Qt

from alltalk_gui.gui.common import workers
from alltalk_gui.gui.common.workers import Worker, run_detached

# How long a thread's last steps take after its job returned. Long enough that the checks made meanwhile (a
# gc.collect() of the whole test session's objects among them) end first even on a loaded machine: at 1 s, the
# whole suite beside a second pytest on 2 cores once saw the thread end before the check (2026-11-27).
SLOW_END_S = 4.0


def slow_to_end(worker: Worker) -> threading.Event:
    """Give ``worker``'s thread last steps that take a while after its job returned (a slot run in that thread
    as it ends, like the clean-up of what the job used); the event is set when they are done."""
    ended = threading.Event()

    def last_steps() -> None:
        time.sleep(SLOW_END_S)
        ended.set()

    worker._thread.finished.connect(last_steps, Qt.ConnectionType.DirectConnection)
    return ended


def test_finished_arrives_without_waiting_for_the_thread_to_end(qtbot):
    worker = Worker(lambda job: "result")
    ended = slow_to_end(worker)
    heard = []
    worker.finished.connect(lambda result: heard.append((result, worker.is_running(), ended.is_set())))
    worker.start()
    assert worker.is_running()
    qtbot.waitUntil(lambda: bool(heard), timeout=30_000)
    # The job is over and says so, while its thread is still busy with its last steps: nothing waited for them.
    assert heard == [("result", False, False)]
    assert worker.wait(30_000) and ended.is_set()
    qtbot.waitUntil(lambda: not workers._ThreadEnd._kept, timeout=10_000)


def test_a_dropped_worker_keeps_its_thread_until_it_ends(qtbot):
    worker = Worker(lambda job: "result")
    ended = slow_to_end(worker)
    heard = []
    worker.failed.connect(heard.append)
    worker.finished.connect(heard.append)
    worker.start()
    qtbot.waitUntil(lambda: bool(heard), timeout=30_000)
    thread = worker._thread
    del worker
    gc.collect()
    # The worker is gone but its thread has not ended (its last steps still run): it is kept, since destroying a
    # QThread that has not ended aborts the process.
    assert not ended.is_set() and any(end.thread_ is thread for end in workers._ThreadEnd._kept)
    del thread
    qtbot.waitUntil(lambda: not workers._ThreadEnd._kept, timeout=30_000)
    assert ended.is_set()


def test_a_detached_job_is_let_go_when_it_ends_and_waited_for_at_exit(qtbot):
    ended = []
    worker = run_detached(Worker(lambda job: time.sleep(0.3) or "done"))
    worker.finished.connect(ended.append)
    assert worker in workers._DETACHED
    workers._finish_detached()  # what the app does at exit: the job ends first
    assert not worker.is_running() or not worker._thread.isRunning()
    qtbot.waitUntil(lambda: ended == ["done"] and worker not in workers._DETACHED, timeout=30_000)


def test_waiting_for_a_worker_returns_when_its_job_ends_without_the_event_loop():
    """Closing a page or quitting waits for a running job in the GUI thread, which then handles no events: the
    thread must end with its job, not when the GUI thread gets round to telling it to (it never would)."""
    worker = Worker(lambda job: time.sleep(0.3) or "done")
    worker.start()
    started = time.monotonic()
    assert worker.wait(20_000) and time.monotonic() - started < 10
