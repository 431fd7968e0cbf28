"""What a frozen front end makes of each training clip (audio codec codes, DVAE codes, mel spectrograms), computed
once and kept on disk, keyed by the clip's content and the front end's identity. One mechanism for every engine.

A frozen front end never changes during fine-tuning, so its output for a clip is fixed: computing it again at every
step and epoch (as coqui's XTTS trainer does with its DVAE and mels) costs time on every step and keeps the front end
on the card. Instead an engine asks :meth:`FeatureCache.get` for each clip once, before training; the first run
computes, every later run, resume and eval reads::

    <root>/feature_cache/<kind>-<model key>/<SHA-256 of the clip file's bytes>.npz

* ``root`` is the project folder when the run has one (the dataset export replaces the whole ``dataset/`` folder, so
  a cache inside it would be lost at every export), else the dataset folder: never outside what the user chose
  (:func:`cache_root`);
* ``kind`` names the front end and its settings (``xtts-dvae``, ``f5-mel``...), ``model key`` is a digest of the
  front end's weights and settings (:func:`files_digest`, :func:`text_digest`): another base model never reads
  this one's entries;
* the clip's own digest names the entry: a re-exported dataset whose clips did not change hits the cache, whatever
  the files are called; an edited clip misses it.

An entry is trusted only when it loads, carries the stamp it was written with (kind, model key, version and clip
digest: a file copied or renamed into place is refused) and passes the engine's ``check`` (shapes, ranges). Anything
else - a truncated or corrupt file, another front end's entry, a stale format - is computed again and replaced,
never used. Entries are written atomically (a kill or two processes writing the same clip leave a whole file or
none); a cache folder that cannot be written (read-only, disk full) only costs the saving: the features are still
computed and returned, and :attr:`FeatureCache.problems` says why nothing was kept.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import io
import logging
import os
import time
import zipfile
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from alltalk_gui.core import atomic
from alltalk_gui.core.project.folder import FEATURE_CACHE_DIR

log = logging.getLogger(__name__)

CACHE_DIR = FEATURE_CACHE_DIR  # in the project folder
STAMP = "__stamp__"  # the array in every entry that says what wrote it

Arrays = dict[str, Any]  # name -> numpy array
REPORT_EVERY_S = 10.0  # while clips are computed, a line of progress this often (a quick set-up says nothing)


class StoppedComputing(Exception):
    """A stop was asked for while clips were being computed (:func:`reporting`'s ``stop``); every clip computed
    before it is kept."""


class _Progress:
    """Says how many clips a cache has computed and read, at most once every ``every_s`` seconds; asks ``stop``
    before each clip it computes."""

    def __init__(self, say: Callable[[str, int, int], None] | None, every_s: float,
                 stop: Callable[[], bool] | None) -> None:
        self.say, self.every_s, self.stop = say, every_s, stop
        self.last = time.monotonic()

    def before_computing(self, cache: "FeatureCache") -> None:
        if self.stop is not None and self.stop():
            raise StoppedComputing(f"{cache.computed} clip(s) computed and kept before the stop")

    def computed(self, cache: "FeatureCache") -> None:
        now = time.monotonic()
        if self.say is not None and now - self.last >= self.every_s:
            self.last = now
            self.say(cache.kind, cache.computed, cache.hits)


_progress: contextvars.ContextVar[_Progress | None] = contextvars.ContextVar("feature_cache_progress", default=None)


@contextlib.contextmanager
def reporting(say: Callable[[str, int, int], None] | None, every_s: float | None = None,
              stop: Callable[[], bool] | None = None) -> Iterator[None]:
    """While inside, every cache that computes clips tells ``say(kind, computed, read)`` how far it got every
    ``every_s`` seconds (default :data:`REPORT_EVERY_S`), and raises :class:`StoppedComputing` before computing a
    clip once ``stop()`` is true.

    The training loop wraps the engine's set-up in it: computing a dataset's features the first time can take
    minutes (Parler's DAC on a CPU: about 1.3 s per second of audio), and the engines build their caches there, so
    one place reports and stops for all of them."""
    token = _progress.set(_Progress(say, REPORT_EVERY_S if every_s is None else every_s, stop))
    try:
        yield
    finally:
        _progress.reset(token)


def file_digest(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's bytes (64 hex digits)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def files_digest(paths: Iterable[str | os.PathLike[str]], settings: str = "") -> str:
    """A front end's identity: the digests of its files (weights, statistics, config) and its ``settings`` (what
    else changes its output: sample rate, hop length...), 16 hex digits."""
    digest = hashlib.sha256(settings.encode())
    for path in paths:
        digest.update(Path(path).name.encode())
        digest.update(file_digest(path).encode())
    return digest.hexdigest()[:16]


def text_digest(settings: str) -> str:
    """The identity of a front end without weights (a mel spectrogram): its settings' digest, 16 hex digits."""
    return hashlib.sha256(settings.encode()).hexdigest()[:16]


def cache_root(config) -> Path:
    """Where a run's cache lives: its project folder, else its dataset folder (see the module's docstring)."""
    return Path(config.project_dir) if config.project_dir else Path(config.dataset_path)


class FeatureCache:
    """The entries of one front end (``kind`` with ``model_key``) under ``root``; ``root=None`` keeps nothing
    (every :meth:`get` computes).

    Counters: ``hits`` (entries read), ``computed`` (clips the front end ran on), ``rejected`` (entries found but
    not trusted, computed again).
    """

    def __init__(self, root: str | os.PathLike[str] | None, kind: str, model_key: str, version: int = 1) -> None:
        if not kind or "/" in kind or not model_key or "/" in model_key:
            raise ValueError(f"kind and model_key name a folder: {kind!r}, {model_key!r}")
        self.kind, self.model_key, self.version = kind, model_key, version
        self.folder = Path(root) / CACHE_DIR / f"{kind}-{model_key}" if root is not None else None
        self.hits = self.computed = self.rejected = 0
        self.problems: list[str] = []  # why entries could not be written (each reason once)

    def stamp(self, clip_digest: str) -> str:
        return f"{self.kind}/{self.model_key}/v{self.version}/{clip_digest}"

    def entry(self, clip_digest: str) -> Path | None:
        return self.folder / f"{clip_digest}.npz" if self.folder is not None else None

    def get(self, clip: str | os.PathLike[str], compute: Callable[[Path], Mapping[str, Any]],
            check: Callable[[Arrays], bool] | None = None) -> Arrays:
        """The arrays of ``clip``: its trusted entry, or ``compute(clip)`` (name -> numpy array), stored.

        ``check(arrays)`` returns whether an entry's arrays are usable (their shapes, dtypes, ranges); a refused entry
        is computed again and replaced.
        """
        clip = Path(clip)
        digest = file_digest(clip)
        found = self.load(digest, check)
        if found is not None:
            self.hits += 1
            return found
        import numpy as np

        progress = _progress.get()
        if progress is not None:
            progress.before_computing(self)
        arrays = {name: np.asarray(value) for name, value in compute(clip).items()}
        self.computed += 1
        self._store(digest, arrays)
        if progress is not None:
            progress.computed(self)
        return arrays

    def load(self, clip_digest: str, check: Callable[[Arrays], bool] | None = None) -> Arrays | None:
        """The entry of the clip with this digest, or None when there is none or it cannot be trusted."""
        import numpy as np

        path = self.entry(clip_digest)
        if path is None or not path.is_file():
            return None
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {name: data[name] for name in data.files}
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
            return self._reject(path, f"unreadable ({type(exc).__name__})")
        stamp = arrays.pop(STAMP, None)
        if stamp is None or str(stamp) != self.stamp(clip_digest):
            return self._reject(path, "written for another clip, front end or format")
        try:
            usable = check is None or bool(check(arrays))
        except (ValueError, TypeError, IndexError, KeyError):
            usable = False
        return arrays if usable else self._reject(path, "its contents failed the engine's check")

    def _reject(self, path: Path, why: str) -> None:
        self.rejected += 1
        log.info("Feature cache entry %s is %s: computing it again.", path, why)
        return None

    def _store(self, clip_digest: str, arrays: Arrays) -> None:
        import numpy as np

        path = self.entry(clip_digest)
        if path is None:
            return
        buffer = io.BytesIO()
        np.savez(buffer, **arrays, **{STAMP: np.array(self.stamp(clip_digest))})
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic.write_bytes(path, buffer.getvalue())
        except OSError as exc:
            reason = f"The feature cache in {self.folder} could not be written ({exc.strerror or exc}): the front " \
                     "end's features are computed again on the next run."
            if reason not in self.problems:
                self.problems.append(reason)
                log.warning("%s", reason)

    def summary(self, what: str) -> str:
        """One line for the run's log: how many clips of ``what`` were read and computed, where they are kept, and
        what was rejected or could not be written."""
        where = f"kept in {self.folder}" if self.folder is not None and not self.problems else "not kept"
        text = f"{what}: {self.hits} clip(s) read from the cache, {self.computed} computed ({where})."
        if self.rejected:
            text += (f" {self.rejected} cached entr{'y was' if self.rejected == 1 else 'ies were'} damaged or stale "
                     "and computed again.")
        return " ".join([text, *self.problems])
