"""The benchmark scripts as modules: they are files in benchmarks/, not a package, so tests load them by path."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_script(relative: str) -> ModuleType:
    """``benchmarks/<relative>`` (e.g. ``gpu/bundles.py``) imported as a module named after the file."""
    path = BENCHMARKS / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module  # as an import would: dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


class FakeCaseProcess:
    """A case's child for ``profile_cases``' queue, without a process: ``answer(cmd)`` gives its (exit status,
    stdout) when the case runs, that is when its stdout is read after the go, as a real child prints only then."""

    def __init__(self, answer, cmd, **_popen_kwargs) -> None:
        import io

        self.answer, self.cmd, self.stdin, self._returncode = answer, cmd, io.StringIO(), None
        self.stdout = self

    def read(self) -> str:
        self._returncode, out = self.answer(self.cmd)
        return out

    def wait(self) -> int:
        return self._returncode


def fake_case_processes(monkeypatch, subprocess_module, answer) -> None:
    """Replace the cases' processes (``subprocess.Popen``) of a benchmark run with :class:`FakeCaseProcess`."""
    monkeypatch.setattr(subprocess_module, "Popen", lambda cmd, **kw: FakeCaseProcess(answer, cmd, **kw))
