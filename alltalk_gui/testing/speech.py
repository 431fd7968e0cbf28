"""Real (synthetic) speech for tests, made with the espeak-ng program.

espeak-ng is a Debian package (``apt-get install espeak-ng``); the test command installs it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


class EspeakMissing(RuntimeError):
    """espeak-ng is not installed."""


def espeak_available() -> bool:
    return shutil.which("espeak-ng") is not None


def synthesize(text: str, out: str | Path, voice: str = "en-us", words_per_minute: int = 160,
               gap_ms: int = 0) -> Path:
    """Speak ``text`` with espeak-ng into the wav file ``out`` (22 050 Hz, mono, 16-bit) and return its path.

    ``gap_ms`` adds a pause of that length between words (espeak's ``-g``, in units of 10 ms).
    """
    if not espeak_available():
        raise EspeakMissing("espeak-ng is not installed; run 'apt-get install espeak-ng'.")
    out = Path(out)
    cmd = ["espeak-ng", "-v", voice, "-s", str(words_per_minute), "-w", str(out)]
    if gap_ms:
        cmd += ["-g", str(max(1, gap_ms // 10))]
    subprocess.run(cmd + [text], check=True, capture_output=True)
    return out
