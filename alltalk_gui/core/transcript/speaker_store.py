"""The speaker embeddings of a project's clips, measured once and kept in the project folder.

One file, ``<project>/feature_cache/speaker-ge2e.npz``: the clip keys, their 256-value embeddings with the seconds
of voice each was measured on, and the keys of clips that cannot be measured (too short, silent) with the reason. A key is the source's SHA-256 (the original
recording's content, from the import) and the clip's span in milliseconds, so a trimmed or split clip is measured
anew, while a working copy made again at another rate keeps its clips' embeddings (the encoder hears 16 kHz).

Written atomically, read without trusting it: a file that cannot be read, or was made by another encoder
(:data:`MODEL`), or before the seconds of voice were kept, counts as empty and is measured again. Reading it costs milliseconds (about 1 MB at 1,000 clips):
lists read it when they open.
"""

from __future__ import annotations

import io
import logging
from pathlib import Path
from typing import Any

import numpy as np

from alltalk_gui.core import atomic
from alltalk_gui.core.project.folder import FEATURE_CACHE_DIR

log = logging.getLogger(__name__)

MODEL = "resemblyzer-0.1.4-ge2e"  # the encoder the file's embeddings come from
FILE = Path(FEATURE_CACHE_DIR) / "speaker-ge2e.npz"
DIMENSIONS = 256


def clip_key(source_sha256: str, start_ms: int, end_ms: int) -> str:
    return f"{source_sha256[:32]}:{int(start_ms)}:{int(end_ms)}"


class SpeakerStore:
    """Embeddings by clip key (:func:`clip_key`), and the reasons clips could not be measured."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.embeddings: dict[str, np.ndarray] = {}
        self.voice_s: dict[str, float] = {}  # seconds of voice an embedding was measured on (when known)
        self.unmeasurable: dict[str, str] = {}

    @classmethod
    def of(cls, project_root: str | Path) -> "SpeakerStore":
        """The project's store as saved (empty when there is none, or it cannot be used)."""
        store = cls(Path(project_root) / FILE)
        store.reload()
        return store

    def reload(self) -> None:
        self.embeddings, self.voice_s, self.unmeasurable = {}, {}, {}
        if self.path is None or not self.path.is_file():
            return
        try:
            with np.load(self.path, allow_pickle=False) as data:
                if str(data["model"]) != MODEL or "voice_s" not in data:
                    return  # another encoder's numbers, or made before the voice was timed: measured again
                keys, vectors = data["keys"], np.asarray(data["embeddings"], dtype=np.float32)
                seconds = np.asarray(data["voice_s"], dtype=np.float64)
                if vectors.shape != (len(keys), DIMENSIONS) or not np.isfinite(vectors).all():
                    raise ValueError(f"embeddings of shape {vectors.shape} for {len(keys)} keys")
                if seconds.shape != (len(keys),):
                    raise ValueError(f"{seconds.shape} voice lengths for {len(keys)} keys")
                self.embeddings = {str(k): v for k, v in zip(keys, vectors)}
                self.voice_s = {str(k): float(s) for k, s in zip(keys, seconds) if np.isfinite(s)}
                self.unmeasurable = dict(zip(map(str, data["unmeasurable"]), map(str, data["reasons"])))
        except Exception as exc:  # noqa: BLE001 - a damaged cache is only measured again
            log.warning("Speaker embeddings in %s cannot be read (%s); they will be measured again.", self.path, exc)
            self.embeddings, self.voice_s, self.unmeasurable = {}, {}, {}

    def known(self, key: str) -> bool:
        return key in self.embeddings or key in self.unmeasurable

    def get(self, key: str) -> np.ndarray | None:
        return self.embeddings.get(key)

    def seconds(self, key: str) -> float | None:
        """The seconds of voice the clip's embedding was measured on; None when not known."""
        return self.voice_s.get(key)

    def put(self, key: str, embedding: np.ndarray | None, reason: str = "", voice_s: float | None = None) -> None:
        """Keep a clip's embedding (measured on ``voice_s`` seconds of voice), or (``embedding`` None) why it cannot
        be measured."""
        self.voice_s.pop(key, None)
        if embedding is None:
            self.unmeasurable[key] = reason
            self.embeddings.pop(key, None)
        else:
            self.embeddings[key] = np.asarray(embedding, dtype=np.float32).reshape(DIMENSIONS)
            if voice_s is not None:
                self.voice_s[key] = float(voice_s)
            self.unmeasurable.pop(key, None)

    def save(self) -> None:
        """Write the file atomically (its folder is made when missing)."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = list(self.embeddings)
        vectors = np.stack([self.embeddings[k] for k in keys]) if keys else np.zeros((0, DIMENSIONS), np.float32)
        buffer = io.BytesIO()
        arrays: dict[str, Any] = {"model": np.array(MODEL), "keys": np.array(keys, dtype=str),
                                  "embeddings": vectors,
                                  "voice_s": np.array([self.voice_s.get(k, np.nan) for k in keys], dtype=np.float64),
                                  "unmeasurable": np.array(list(self.unmeasurable), dtype=str),
                                  "reasons": np.array(list(self.unmeasurable.values()), dtype=str)}
        np.savez(buffer, **arrays)
        atomic.write_bytes(self.path, buffer.getvalue())
