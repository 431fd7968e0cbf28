"""What the training child prints, sorted for two readers: the user's log view and the run's output file.

The training child writes every line into ``output.log`` in the run folder itself (the whole story, for a bug
report; :mod:`alltalk_gui.gui.train.training_supervisor` reads it back); given a folder, :class:`ChildOutput` writes
the lines it sorts there too. The log view gets the
lines that mean something to the user: our own messages, errors and tracebacks, and warnings we did not
recognise as library noise. Noise is what libraries print at start-up about their own internals and that the
user can do nothing about: transformers' config remarks, bitsandbytes looking for optional kernels, Python
``warnings`` lines from inside site-packages (and the source line that follows each), and our launch command.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TextIO

OUTPUT_FILE = "output.log"

NOISE = [
    re.compile(r"^\[transformers\]"),  # "[transformers] Model config: eos_token_id must be ..."
    re.compile(r"gemm_4bit_forward|pip install kernels|kernels-community"),  # bitsandbytes' optional CPU kernels
    re.compile(r"[/\\](site|dist)-packages[/\\].*\b\w*Warning:"),  # warnings.warn from a library
    re.compile(r"^\$ "),  # the launch command line
]


def is_noise(line: str) -> bool:
    return any(pattern.search(line) for pattern in NOISE)


def level_of(line: str) -> str:
    lowered = line.lower()
    if "error" in lowered or "traceback" in lowered:
        return "error"
    return "warning" if "warn" in lowered else "info"


class ChildOutput:
    """Sorts one run's output lines: ``accept(line)`` writes it to the file and returns (level, line) when the
    user should see it, else None."""

    def __init__(self, run_dir: Path | None) -> None:
        self.path = run_dir / OUTPUT_FILE if run_dir is not None else None
        self._file: TextIO | None = None
        self._after_warning = False  # the line after a library warning repeats its source code

    def accept(self, line: str) -> tuple[str, str] | None:
        self._write(line)
        if self._after_warning and line.startswith(("  ", "\t")):
            self._after_warning = False
            return None
        self._after_warning = False
        if is_noise(line):
            self._after_warning = "Warning:" in line
            return None
        return level_of(line), line

    def _write(self, line: str) -> None:
        if self.path is None:
            return
        try:
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = open(self.path, "a", encoding="utf-8")
            self._file.write(line + "\n")
            self._file.flush()
        except OSError:
            self.path = None  # a full disk must not stop the run's display: the view still gets the lines

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
