"""The SNAC codes of the dataset's clips, computed once per clip through the app's feature cache.

Orpheus trains on the codes of each clip, never on its audio, so the codec runs once per clip: the first run
encodes, every later run, resume, eval and epoch reads the entry the neutral cache keeps
(:mod:`alltalk_gui.core.training.feature_cache`: ``<project>/feature_cache/snac-<codec>/<clip SHA-256>.npz``,
keyed by the clip file's content and by the codec's weights and configuration). An entry is used only when its
three levels have 1, 2 and 4 codes a frame, every code inside the codebook; anything else is encoded again.
The codec itself loads only when a clip misses the cache.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alltalk_gui.core.engines.orpheus.codec import CODEC_FILES, CodecFacts, LEVEL_WIDTHS

KIND = "snac"


def codes_cache(config, codec_dir: Path):
    """The run's cache of SNAC codes (under the project folder, else the dataset's)."""
    from alltalk_gui.core.training.feature_cache import FeatureCache, cache_root, files_digest

    return FeatureCache(cache_root(config), KIND, files_digest([codec_dir / name for name in CODEC_FILES]))


def usable(levels: dict[str, Any], facts: CodecFacts) -> bool:
    """Whether a cached entry holds three levels of n, 2n and 4n codes inside the codebook."""
    arrays = [levels.get(f"level{i}") for i in range(len(LEVEL_WIDTHS))]
    if any(a is None or a.ndim != 1 for a in arrays):
        return False
    frames = arrays[0].size
    return (frames > 0 and all(a.size == w * frames for a, w in zip(arrays, LEVEL_WIDTHS))
            and all(int(a.min()) >= 0 and int(a.max()) < facts.codebook_size for a in arrays))


class ClipCodes:
    """``codes(path)`` -> the clip's SNAC levels (lists of ints), from the cache or encoded once (the codec loads on
    the first miss)."""

    def __init__(self, cache, codec_dir: Path, facts: CodecFacts) -> None:
        self.cache, self.codec_dir, self.facts = cache, codec_dir, facts
        self._codec = None

    def __call__(self, path: Path) -> tuple[list[int], ...]:
        found = self.cache.get(path, self._encode, check=lambda arrays: usable(arrays, self.facts))
        return tuple(found[f"level{i}"].astype("int64").tolist() for i in range(len(LEVEL_WIDTHS)))

    def _encode(self, path: Path) -> dict[str, Any]:
        import numpy as np

        from alltalk_gui.core.engines.orpheus import codec as snac
        from alltalk_gui.core.engines.orpheus.data import load_audio

        if self._codec is None:
            self._codec = snac.load_codec(self.codec_dir)
        levels = snac.encode(self._codec, load_audio(path, self.facts.sample_rate))
        return {f"level{i}": np.asarray(level, np.int32) for i, level in enumerate(levels)}
