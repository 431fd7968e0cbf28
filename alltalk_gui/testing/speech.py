"""Real (synthetic) speech for tests, made with the espeak-ng program.

espeak-ng is a Debian package (``apt-get install espeak-ng``); the test command installs it.

Machines without espeak-ng (the GPU test machine, which has no package index) get the same speech from a cache
folder named by ``ALLTALK_SPEECH_CACHE``: the GPU kit's bundle builder fills it here, where espeak-ng exists, by
setting the variable while the kit's speech is synthesized (see ``benchmarks/gpu/bundles.py``). A cached file is
found by a hash of everything that shapes the sound (text, voice, speed, gaps), so a test that asks for other
speech than was cached fails with :class:`EspeakMissing` instead of silently getting the wrong words.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

CACHE_ENV = "ALLTALK_SPEECH_CACHE"


class EspeakMissing(RuntimeError):
    """espeak-ng is not installed (and the speech cache does not hold what was asked for)."""


def espeak_available() -> bool:
    return shutil.which("espeak-ng") is not None


def speech_available() -> bool:
    """Whether :func:`synthesize` can work here: espeak-ng, or a speech cache folder."""
    return espeak_available() or bool(os.environ.get(CACHE_ENV))


def cache_key(text: str, voice: str, words_per_minute: int, gap_ms: int) -> str:
    """The cache file name for one call of :func:`synthesize`."""
    digest = hashlib.sha256(f"{voice}\n{words_per_minute}\n{gap_ms}\n{text}".encode("utf-8")).hexdigest()
    return f"{digest[:32]}.wav"


def synthesize(text: str, out: str | Path, voice: str = "en-us", words_per_minute: int = 160,
               gap_ms: int = 0) -> Path:
    """Speak ``text`` with espeak-ng into the wav file ``out`` (22 050 Hz, mono, 16-bit) and return its path.

    ``gap_ms`` adds a pause of that length between words (espeak's ``-g``, in units of 10 ms). With
    ``ALLTALK_SPEECH_CACHE`` set, a cached rendering is copied when there is one, and a new rendering is stored.
    """
    out = Path(out)
    cache = os.environ.get(CACHE_ENV)
    cached = Path(cache) / cache_key(text, voice, words_per_minute, gap_ms) if cache else None
    if cached is not None and cached.is_file():
        shutil.copyfile(cached, out)
        return out
    if not espeak_available():
        where = f" and {cached} is not in the speech cache" if cached else ""
        raise EspeakMissing(f"espeak-ng is not installed{where}; run 'apt-get install espeak-ng'.")
    cmd = ["espeak-ng", "-v", voice, "-s", str(words_per_minute), "-w", str(out)]
    if gap_ms:
        cmd += ["-g", str(max(1, gap_ms // 10))]
    subprocess.run(cmd + [text], check=True, capture_output=True)
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out, cached)
    return out


SENTENCES = [
    "the quick brown fox jumps over the lazy dog.",
    "pack my box with five dozen liquor jugs.",
    "how vexingly quick daft zebras jump!",
    "sphinx of black quartz, judge my vow.",
    "a voice model learns from a few minutes of speech.",
    "is it ready? yes, it is training now.",
    "hello world, this is a test of the tiny model.",
    "one clip at a time, the model learns the voice.",
    "the lazy dog sleeps while the fox jumps.",
    "five quick zebras judge the black box.",
]


def make_speech_dataset(dataset_dir: str | os.PathLike[str], n_train: int = 8, n_eval: int = 2,
                        speaker: str = "tester") -> Path:
    """Write a small dataset folder (``wavs/`` + both metadata CSVs) of espeak-ng sentences, 2 - 4 s each.

    The layout is exactly what the dataset export writes, so training (of any engine) reads it the same way.
    """
    from alltalk_gui.core.dataset.metadata import EVAL_CSV, TRAIN_CSV, MetadataRow, write_metadata

    dataset_dir = Path(dataset_dir)
    (dataset_dir / "wavs").mkdir(parents=True, exist_ok=True)
    rows = []
    for i in range(n_train + n_eval):
        text = SENTENCES[i % len(SENTENCES)]
        name = f"wavs/clip_{i:03d}.wav"
        synthesize(text, dataset_dir / name, words_per_minute=150 + 10 * (i % 3))
        rows.append(MetadataRow(name, text, speaker))
    write_metadata(dataset_dir / TRAIN_CSV, rows[:n_train])
    write_metadata(dataset_dir / EVAL_CSV, rows[n_train:])
    return dataset_dir
