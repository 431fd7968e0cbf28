"""Garbage cycles that hold Qt objects are freed in the GUI thread, never in a worker thread that happens to
allocate: a widget destroyed in a worker deadlocked the Preview page's tests (GIL against Qt's signal lock)."""

from __future__ import annotations

import gc
import threading
import weakref

from PySide6.QtWidgets import QWidget

from alltalk_gui.gui.app import create_application


class _Cycle:
    """Garbage that only the cyclic collector frees: it refers to itself, and holds a widget."""

    def __init__(self) -> None:
        self.me = self
        self.widget = QWidget()


def test_a_cycle_holding_a_widget_is_freed_in_the_gui_thread_not_in_a_busy_worker(qtbot):
    create_application()
    assert not gc.isenabled()  # the automatic collection is off; the GUI thread collects on a timer
    freed_in: list[str] = []
    cycle = _Cycle()
    weakref.finalize(cycle, lambda: freed_in.append(threading.current_thread().name))
    del cycle

    def allocate() -> None:  # a worker building a model: far past every generation's threshold
        for _ in range(20):
            junk = [[i] for i in range(200_000)]
            for item in junk[:1000]:
                item.append(junk)  # cycles, as module graphs make
            del junk

    worker = threading.Thread(target=allocate, name="busy worker")
    worker.start()
    worker.join()
    assert freed_in == []  # the worker allocated without collecting
    qtbot.waitUntil(lambda: bool(freed_in), timeout=10_000)  # the GUI thread's timer collects it
    assert freed_in == [threading.main_thread().name]


def test_automatic_collection_turned_back_on_by_a_library_is_turned_off_again(qtbot):
    create_application()
    gc.enable()  # as srsly's msgpack loader does when it is done, whatever it found
    qtbot.waitUntil(lambda: not gc.isenabled(), timeout=5_000)
