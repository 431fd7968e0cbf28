"""The engine's text check answered by a child process: answers arrive for what was asked, listeners hear of them,
one child serves every list of the same settings, and a child that dies leaves the check working in this process."""

from __future__ import annotations

import threading
import time

import pytest

from alltalk_gui.core.transcript.text_check_process import TextCheckProcess, shared_check

pytest.importorskip("TTS", reason="coqui-tts is not installed")


def _wait(condition, timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "no answer in time"
        time.sleep(0.02)


def test_answers_arrive_and_listeners_hear_of_them():
    check = TextCheckProcess("xtts", "en")
    heard = threading.Event()
    stop = check.listen(heard.set)
    try:
        assert not check.known("Plain words.")
        check.request(["Plain words.", "A smile ☺ here.", "Plain words."])
        _wait(lambda: check.known("Plain words.") and check.known("A smile ☺ here."))
        assert heard.is_set()
        assert check.problem("Plain words.") is None
        assert "'☺'" in check.problem("A smile ☺ here.")  # XTTS's own reason, from the child
        stop()
        assert not check.listened
    finally:
        check.close()
    assert not check._child.is_alive()


def test_a_child_that_dies_leaves_the_check_working_here():
    check = TextCheckProcess("xtts", "en")
    heard = threading.Event()
    check.listen(heard.set)
    try:
        check._child.terminate()
        _wait(heard.is_set, 30)
        assert check.known("Anything at all.") and "ended" in check.error and not check.alive
        assert "'☺'" in check.problem("A smile ☺ here.")  # answered in this process now
    finally:
        check.close()


def test_one_child_serves_the_same_settings_and_a_dead_one_is_replaced():
    first = shared_check("xtts", "en")
    assert shared_check("xtts", "en") is first
    first.close()
    second = shared_check("xtts", "en")
    assert second is not first and second.alive
