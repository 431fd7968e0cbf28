"""An engine's transcript check (:class:`~alltalk_gui.core.engine_api.engine.TextCheck`) answered by a child
process, so that the editor's process never imports what the check needs.

XTTS v2's check runs coqui's text cleaning, whose module imports torch: 2-3 s, and importing it on a thread of
the GUI's own process still stalled the GUI thread, because an import holds Python's GIL, also while it loads
torch's libraries (an edit made meanwhile took 28-137 ms instead of 2). In a child process the import costs the
editor nothing. :class:`TextCheckProcess` never blocks its caller: :meth:`known` says whether a text has been
answered, :meth:`request` asks for texts (sent by a thread of its own, so a busy child cannot block the caller
either), and ``on_answers`` is called (from that thread) whenever answers arrive. The
:class:`~alltalk_gui.core.transcript.segments.SegmentList` flags an edited clip without the text check until its
text is answered, and then with it.

If the child cannot start or dies, the check falls back to the engine's check in this process (answers then
come synchronously, at the old first-use cost): the flags are never lost, only slower.

One child serves every list of the same engine, language and vocabulary (:func:`shared_check`) and lives as long
as this process (as the imported modules did when the check ran here): a project opened again, or the next test,
does not pay the import again. A child nobody listens to any more is ended when one for other settings starts.

The ``spawn`` start method is used (a forked child would inherit the GUI's threads); a frozen app calls
``multiprocessing.freeze_support()`` at start-up, as for the transcription's child.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import threading
from pathlib import Path
from typing import Any, Callable, Iterable

from alltalk_gui.core.engine_api.engine import TextCheck, get_engine

_STOP = None  # sent to the child (and the sending thread) to end them


class TextCheckProcess:
    """The text check of ``engine`` for ``language`` (exact with ``vocab_file``), run in a child process.

    Listeners (:meth:`listen`) are called with no arguments, from a background thread, each time answers arrived
    (or the child failed and the check moved into this process).
    """

    def __init__(self, engine: str, language: str, vocab_file: str | os.PathLike[str] | None = None) -> None:
        self.engine, self.language = engine, language
        self.vocab_file = Path(vocab_file) if vocab_file is not None else None
        self._listeners: list[Callable[[], None]] = []
        self.error: str | None = None  # why the child failed (the check then runs here)
        self._answers: dict[str, str | None] = {}
        self._asked: set[str] = set()
        self._lock = threading.Lock()
        self._local: TextCheck | None = None
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()
        self._closed = False
        context = multiprocessing.get_context("spawn")
        self._receive, child_end = context.Pipe(duplex=True)
        self._child = context.Process(target=_child_main, args=(child_end, engine, language,
                                                                str(self.vocab_file) if self.vocab_file else None),
                                      daemon=True, name="alltalk-text-check")
        try:
            self._child.start()
        except OSError as exc:
            self._fail(f"the text check process could not start ({exc})")
        finally:
            child_end.close()
        threading.Thread(target=self._send, name="text check requests", daemon=True).start()
        threading.Thread(target=self._read, name="text check answers", daemon=True).start()

    # -- TextCheck, for the clip checker ----------------------------------------------------------------------
    def problem(self, text: str) -> str | None:
        """The answer for ``text`` (call after :meth:`known` said yes; an unknown text counts as fine)."""
        with self._lock:
            if text in self._answers:
                return self._answers[text]
            local = self._local
        return local.problem(text) if local is not None else None

    def warm_up(self) -> None:
        """Nothing to do here: the child warms up by itself."""

    # -- asking ---------------------------------------------------------------------------------------------------
    def known(self, text: str) -> bool:
        """Whether :meth:`problem` can answer ``text`` now without waiting."""
        with self._lock:
            return text in self._answers or self._local is not None

    def request(self, texts: Iterable[str]) -> None:
        """Ask the child for the texts not yet answered or asked for; returns at once."""
        with self._lock:
            new = [t for t in dict.fromkeys(texts) if t not in self._answers and t not in self._asked]
            self._asked.update(new)
        if new and not self._closed:
            self._outbox.put(new)

    def listen(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` whenever answers arrive; returns a function that stops it."""
        with self._lock:
            self._listeners.append(callback)

        def stop() -> None:
            with self._lock:
                if callback in self._listeners:
                    self._listeners.remove(callback)
        return stop

    @property
    def listened(self) -> bool:
        with self._lock:
            return bool(self._listeners)

    @property
    def alive(self) -> bool:
        return not self._closed and self._local is None

    def close(self) -> None:
        """End the child (it holds a torch import's memory) and the threads."""
        if self._closed:
            return
        self._closed = True
        self._outbox.put(_STOP)
        self._child.join(2.0)
        if self._child.is_alive():
            self._child.terminate()
            self._child.join(2.0)

    # -- background ---------------------------------------------------------------------------------------------
    def _send(self) -> None:
        while True:
            texts = self._outbox.get()
            try:
                self._receive.send(texts)
            except (OSError, ValueError):  # the child is gone: the reader notices and falls back
                return
            if texts is _STOP:
                return

    def _read(self) -> None:
        while True:
            try:
                answers = self._receive.recv()
            except (EOFError, OSError):
                if not self._closed:
                    code = self._child.exitcode
                    self._fail(f"the text check process ended (exit code {code})")
                return
            with self._lock:
                self._answers.update(answers)
            self._notify()

    def _fail(self, reason: str) -> None:
        """Check in this process from now on (the first use imports what the engine's check needs)."""
        with self._lock:
            if self._local is not None:
                return
            self.error = reason
            self._local = get_engine(self.engine).text_checker(self.language, self.vocab_file)
        self._notify()

    def _notify(self) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for callback in listeners:
            try:
                callback()
            except RuntimeError:  # the receiver is gone (a window closed): nobody waits for these answers
                pass


_SHARED: dict[tuple[str, str, str | None], TextCheckProcess] = {}
_SHARED_LOCK = threading.Lock()


def shared_check(engine: str, language: str, vocab_file: str | os.PathLike[str] | None = None) -> TextCheckProcess:
    """The running check for these settings, started if there is none (a failed one is replaced)."""
    key = (engine, language, str(vocab_file) if vocab_file is not None else None)
    with _SHARED_LOCK:
        check = _SHARED.get(key)
        if check is not None and check.alive:
            return check
        for other_key, other in list(_SHARED.items()):  # children nobody listens to any more
            if not other.listened:
                other.close()
                del _SHARED[other_key]
        check = _SHARED[key] = TextCheckProcess(engine, language, vocab_file)
        return check


def _child_main(connection: Any, engine: str, language: str, vocab_file: str | None) -> None:
    """The child: build and warm up the engine's check, then answer batches of texts until told to stop."""
    checker = get_engine(engine).text_checker(language, vocab_file)
    try:
        checker.warm_up()
    except Exception:  # noqa: BLE001 - problem() then says what is missing, text by text
        pass
    while True:
        try:
            texts = connection.recv()
        except (EOFError, OSError):
            return
        if texts is _STOP:
            return
        connection.send([(text, _answer(checker, text)) for text in texts])


def _answer(checker: TextCheck, text: str) -> str | None:
    try:
        return checker.problem(text)
    except Exception as exc:  # noqa: BLE001 - one text the check cannot handle is a flag, not a dead child
        return f"The text check failed on this text ({type(exc).__name__}: {str(exc)[:120]})."
