"""SNAC codes of the dataset's clips, computed once and kept beside the dataset, keyed by the clip's content.

Orpheus trains on the codes of each clip, never on its audio, so the codec runs once per clip: the first run
encodes, every later run, resume, eval and epoch reads ``<root>/codec_cache/snac-<codec>/<clip>.npz``, where
``<clip>`` is the SHA-256 of the clip file's bytes and ``<codec>`` the start of the SHA-256 of the codec's
config and weights. The key is the content, not the name: a re-exported dataset whose clips did not change
hits the cache (the dataset export rewrites the whole ``dataset/`` folder, which is why the cache lives beside
it, in the project folder, and not inside it), an edited clip misses it, and another codec never reads this
one's codes. Files are written atomically, so two processes encoding the same clip (several GPUs) or a kill
midway leave a complete file or none.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Callable

from alltalk_gui.core import atomic

CACHE_DIR = "codec_cache"


def file_digest(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's bytes (hex)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def codec_digest(codec_dir: str | os.PathLike[str]) -> str:
    """The codec's identity: SHA-256 of its config and weights, 16 hex digits."""
    digest = hashlib.sha256()
    for name in ("config.json", "pytorch_model.bin"):
        digest.update(file_digest(Path(codec_dir) / name).encode())
    return digest.hexdigest()[:16]


class CodesCache:
    """Codes of clips for one codec, in ``root/codec_cache/snac-<codec digest>/``.

    ``encode(path) -> levels`` is called only for a clip whose codes are not cached yet (the codec is loaded by the
    caller on first need).
    """

    def __init__(self, root: str | os.PathLike[str], codec_dir: str | os.PathLike[str]) -> None:
        self.folder = Path(root) / CACHE_DIR / f"snac-{codec_digest(codec_dir)}"
        self.hits = 0
        self.misses = 0

    def path(self, clip: str | os.PathLike[str]) -> Path:
        return self.folder / f"{file_digest(clip)}.npz"

    def codes(self, clip: str | os.PathLike[str], encode: Callable[[Path], Any]) -> tuple[list[int], ...]:
        """The SNAC levels of ``clip``: from the cache, or ``encode(clip)`` once and cached."""
        import numpy as np

        path = self.path(clip)
        if path.is_file():
            try:
                with np.load(path) as data:
                    levels = tuple(data[f"level{i}"].astype(np.int64).tolist() for i in range(len(data.files)))
                self.hits += 1
                return levels
            except (OSError, ValueError, KeyError):
                pass  # a damaged file: encode again and replace it
        levels = tuple(list(map(int, level)) for level in encode(Path(clip)))
        self.folder.mkdir(parents=True, exist_ok=True)
        with atomic.atomic_path(path) as tmp, open(tmp, "wb") as f:  # a file object: savez adds no suffix
            np.savez(f, **{f"level{i}": np.asarray(level, np.int32) for i, level in enumerate(levels)})
        self.misses += 1
        return levels
