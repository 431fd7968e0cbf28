"""Calling an engine's functions in a child process that runs the engine's own interpreter.

An engine whose packages cannot be imported in the app (its own :mod:`.environment`) still has to load voices,
speak and export for the Preview page and the CLI. :class:`EngineChild` starts
``<python> -u -m alltalk_gui.core.engine_api.engine_child <module>`` and calls functions of ``<module>`` in it,
one at a time, as JSON lines (the training child's protocol is JSON lines too): a request
``{"id", "call", "args"}`` goes to the child's stdin; the answer ``{"id", "result"}`` or ``{"id", "error"}`` and
any ``{"id", "progress"}`` lines come back on a pipe of their own. numpy arrays travel as ``.npy`` files in a
temporary folder of the call, never as text. The child keeps what the module keeps between calls (a loaded
model), so a voice loads once and speaks many times; it ends when its stdin closes, so it never outlives the app.

Errors keep their kind: an ``EngineError`` or ``BaseModelError`` raised in the child is raised here with its
message; anything else, or a child that died, is an :class:`~alltalk_gui.core.engine_api.engine.EngineError`
with the last lines of the child's output.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import tempfile
import threading
import weakref
from pathlib import Path
from typing import Any, Callable

from alltalk_gui.core.portability import process_flags
from alltalk_gui.core.engine_api.engine import BaseModelError, EngineError

ARRAY_KEY = "__npy__"
PROTOCOL_FD_ENV = "ALLTALK_GUI_ENGINE_CHILD_FD"
# The parent's temporary folder, in which the child writes the arrays it answers with: the parent removes it, so
# nothing is left behind when the child dies (or is killed) before its own clean-up.
FOLDER_ENV = "ALLTALK_GUI_ENGINE_CHILD_FOLDER"
_ERRORS: dict[str, type[Exception]] = {"BaseModelError": BaseModelError, "EngineError": EngineError}


class EngineChild:
    """A child process running ``module`` with interpreter ``python``; :meth:`call` runs one of its functions."""

    def __init__(self, python: str, module: str, *, env: dict[str, str] | None = None) -> None:
        self.python, self.module = python, module
        self._lock = threading.Lock()
        self._next_id = 0
        self._tail: collections.deque[str] = collections.deque(maxlen=40)  # the child's last output lines
        self._tmp = tempfile.TemporaryDirectory(prefix="alltalk-engine-")
        read_fd, write_fd = os.pipe()  # the answers' own pipe: libraries printing to stdout cannot garble it
        child_env = dict(process_flags.utf8_environment(env), PYTHONUNBUFFERED="1")  # read back as UTF-8
        child_env[PROTOCOL_FD_ENV] = str(write_fd)
        child_env[FOLDER_ENV] = self._tmp.name
        options: dict[str, Any] = process_flags.popen_options()  # no console window flashing up on Windows
        if os.name == "nt":  # a pipe handle must be marked inheritable explicitly on Windows
            import msvcrt

            os.set_handle_inheritable(msvcrt.get_osfhandle(write_fd), True)
            child_env[PROTOCOL_FD_ENV] = f"h{msvcrt.get_osfhandle(write_fd)}"
            options["close_fds"] = False
        else:
            options["pass_fds"] = (write_fd,)
        try:
            self.process = subprocess.Popen(
                [python, "-u", "-m", __name__, module], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True, encoding="utf-8", errors="replace", env=child_env, **options)
        except OSError as exc:
            os.close(read_fd)
            os.close(write_fd)
            raise EngineError(f"Cannot start the engine's process ({python}): {exc}") from exc
        os.close(write_fd)
        self._answers = os.fdopen(read_fd, "r", encoding="utf-8", errors="replace")
        # The reader must not hold this object: a thread's target keeps it alive as long as the child runs, so a
        # dropped EngineChild was never collected and its child (a loaded Parler voice, about 1 GB even for the
        # tiny test model) lived on until the app quit: each voice a preview or the judge dropped piled up.
        self._reader = threading.Thread(target=_read_output, args=(self.process.stdout, self._tail), daemon=True)
        self._reader.start()
        self._finalizer = weakref.finalize(self, _shut, self.process, self._answers, self._tmp)

    def call(self, name: str, progress: Callable[[str, float], None] | None = None, **args: Any) -> Any:
        """Run ``<module>.<name>(**args)`` in the child and return its result (arrays as numpy arrays).

        Raises:
            BaseModelError, EngineError: what the function raised, or the child died (its last output lines).
        """
        with self._lock:
            if self.process.poll() is not None:
                raise EngineError(self._died())
            self._next_id += 1
            request = {"id": self._next_id, "call": name, "args": _encode(args, Path(self._tmp.name))}
            try:
                assert self.process.stdin is not None
                self.process.stdin.write(json.dumps(request) + "\n")
                self.process.stdin.flush()
            except OSError as exc:
                raise EngineError(self._died()) from exc
            for line in self._answers:
                answer = json.loads(line)
                if "progress" in answer:
                    if progress is not None:
                        progress(*answer["progress"])
                    continue
                if "error" in answer:
                    error = answer["error"]
                    raise _ERRORS.get(error["type"], EngineError)(error["message"])
                return _decode(answer.get("result"))
            self.process.wait()
            raise EngineError(self._died())

    def _died(self) -> str:
        self.process.poll()
        self._reader.join(timeout=5)  # its last lines (the child's own error) are read once the pipe ends
        output = "\n".join(list(self._tail)[-15:])
        return (f"The engine's process ended unexpectedly (exit code {self.process.returncode}).\n{output}").strip()

    def close(self) -> None:
        self._finalizer()

    @property
    def alive(self) -> bool:
        return self.process.poll() is None


def call_once(python: str, module: str, name: str, progress: Callable[[str, float], None] | None = None,
              **args: Any) -> Any:
    """Start a child, run one function in it, end it: for work done once (an export, a test model)."""
    child = EngineChild(python, module)
    try:
        return child.call(name, progress=progress, **args)
    finally:
        child.close()


def _read_output(stream, tail: collections.deque) -> None:
    """Keep the child's last output lines (its own error when it dies), until its output ends."""
    for line in stream:
        tail.append(line.rstrip())


def _shut(process: subprocess.Popen, answers, tmp: tempfile.TemporaryDirectory) -> None:
    """End the child: closing its stdin ends its loop; a child that hangs is killed after a while."""
    try:
        if process.stdin is not None:
            process.stdin.close()
        process.wait(timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        process.kill()
        process.wait()
    answers.close()
    tmp.cleanup()


def _encode(value: Any, folder: Path) -> Any:
    """JSON for ``value``, numpy arrays written to ``.npy`` files in ``folder``."""
    if type(value).__module__ == "numpy" and hasattr(value, "shape"):
        import numpy as np

        fd, path = tempfile.mkstemp(suffix=".npy", dir=folder)
        with os.fdopen(fd, "wb") as f:
            np.save(f, value, allow_pickle=False)
        return {ARRAY_KEY: path}
    if isinstance(value, dict):
        return {k: _encode(v, folder) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v, folder) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {ARRAY_KEY}:
        import numpy as np

        path = Path(value[ARRAY_KEY])
        try:
            return np.load(path, allow_pickle=False)
        finally:
            path.unlink(missing_ok=True)
    if isinstance(value, dict):
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


# -- the child's side ----------------------------------------------------------------------------------------------

def serve(module_name: str) -> int:
    """Answer requests on stdin with ``module_name``'s functions until stdin closes."""
    import importlib
    import inspect
    import shutil
    import traceback

    fd = os.environ[PROTOCOL_FD_ENV]
    if fd.startswith("h"):  # Windows: a handle, made into a file descriptor here
        import msvcrt

        fd = str(msvcrt.open_osfhandle(int(fd[1:]), 0))
    answers = os.fdopen(int(fd), "w", encoding="utf-8")
    tmp = Path(tempfile.mkdtemp(prefix="child-", dir=os.environ.get(FOLDER_ENV)))

    def send(message: dict[str, Any]) -> None:
        answers.write(json.dumps(message) + "\n")
        answers.flush()

    module = importlib.import_module(module_name)
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        ident = request["id"]
        try:
            function = getattr(module, request["call"])
            args = _decode(request.get("args") or {})
            if "progress" in inspect.signature(function).parameters:
                args["progress"] = lambda text, fraction=0.0, _id=ident: send(
                    {"id": _id, "progress": [text, fraction]})
            send({"id": ident, "result": _encode(function(**args), tmp)})
        except Exception as exc:  # every failure goes back to the caller as an answer
            kind = next((c.__name__ for c in type(exc).__mro__ if c.__name__ in _ERRORS), type(exc).__name__)
            message = str(exc) if kind in _ERRORS else f"{type(exc).__name__}: {exc}"
            traceback.print_exc()
            send({"id": ident, "error": {"type": kind, "message": message}})
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1]))
