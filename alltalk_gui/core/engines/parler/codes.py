"""DAC codes of the dataset's clips, computed once and kept on disk (Parler trains on codes, never on audio).

Parler-TTS's decoder predicts the 9 codebooks of Descript's DAC 44.1 kHz codec; the codec itself stays frozen, so
a clip's codes never change. Parler's own training script therefore encodes the whole dataset before it trains
(``audio_encoder_per_device_batch_size``, ``save_to_disk``). We do the same per clip, and keep each clip's codes
in the dataset folder::

    <dataset>/codec_cache/dac44k-<codec>/<sha256 of the audio file>.npy     int16, 9 x frames

``<codec>`` is a hash of the codec's weights, so another base model with other DAC weights never reads these
codes; the file's own hash names the clip, so an edited or re-exported clip is encoded again and an unchanged one
is not, whatever it is called. A second run (or a resume, or the eval clips of the next run) loads codes and
never loads a clip into the codec: :data:`ENCODED` counts the clips that went through it (the tests read it).
Files are written atomically; one that does not read back as 9 x frames is encoded again.
"""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path
from typing import Any, Callable, Sequence

from alltalk_gui.core import atomic
from alltalk_gui.core.engines.parler.files import CODEBOOK_SIZE, NUM_CODEBOOKS, SAMPLE_RATE

CACHE_DIR = "codec_cache"
FRAME_TOLERANCE = 2    # DAC's encoder returns ceil(samples / 512) frames, or one less (its convolutions' edges)
ENCODED = {"clips": 0}  # clips encoded by the codec in this process (the cache's test reads it)


def file_sha256(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def codec_fingerprint(codec) -> str:
    """A hash of the codec's weights (names, shapes and values), 16 hex digits."""
    import torch

    digest = hashlib.sha256()
    for name, tensor in sorted(codec.state_dict().items()):
        digest.update(name.encode())
        digest.update(str(tuple(tensor.shape)).encode())
        digest.update(tensor.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]


def load_audio_44k(path: str | os.PathLike[str]):
    """Mono float32 samples at 44.1 kHz (the app's decoder: soundfile, PyAV for other formats)."""
    from alltalk_gui.core.audio.decode import load, resample, to_mono

    samples, rate = load(path)
    return resample(to_mono(samples), rate, SAMPLE_RATE)


class CodeCache:
    """The codes of one codec, kept under ``<dataset>/codec_cache/dac44k-<fingerprint>/``."""

    def __init__(self, dataset_dir: str | os.PathLike[str], fingerprint: str) -> None:
        self.root = Path(dataset_dir) / CACHE_DIR / f"dac44k-{fingerprint}"

    def path(self, audio_path: str | os.PathLike[str]) -> Path:
        return self.root / f"{file_sha256(audio_path)}.npy"

    def get(self, audio_path: str | os.PathLike[str], expected_frames: int | None = None):
        import numpy as np

        path = self.path(audio_path)
        try:
            codes = np.load(path, allow_pickle=False)
        except (OSError, ValueError):
            return None
        good = (codes.ndim == 2 and codes.shape[0] == NUM_CODEBOOKS and codes.dtype == np.int16
                and (expected_frames is None or abs(codes.shape[1] - expected_frames) <= FRAME_TOLERANCE)
                and int(codes.min(initial=0)) >= 0 and int(codes.max(initial=0)) < CODEBOOK_SIZE)
        return codes if good else None

    def put(self, audio_path: str | os.PathLike[str], codes) -> None:
        import numpy as np

        self.root.mkdir(parents=True, exist_ok=True)
        buffer = io.BytesIO()
        np.save(buffer, np.asarray(codes, dtype=np.int16), allow_pickle=False)
        atomic.write_bytes(self.path(audio_path), buffer.getvalue())


def encode(codec, samples, device) -> Any:
    """DAC codes of mono 44.1 kHz ``samples``: int16 numpy, 9 x frames (frames = ceil(samples / 512))."""
    import numpy as np
    import torch

    wave = torch.from_numpy(np.ascontiguousarray(samples, dtype=np.float32))[None, None].to(device)
    with torch.no_grad():
        codes = codec.encode(wave, sample_rate=SAMPLE_RATE).audio_codes  # 1 x 1 x 9 x frames
    ENCODED["clips"] += 1
    return codes[0, 0].to("cpu", torch.int16).numpy()


def dataset_codes(clips: Sequence[Any], codec, cache: CodeCache, device,
                  progress: Callable[[int, int], None] | None = None) -> list[Any]:
    """The codes of every clip (objects with ``audio_path`` and ``frames``): from the cache, or encoded and cached.

    Raises:
        RuntimeError: the codec returned a number of frames the clip's length does not call for.
    """
    out = []
    for i, clip in enumerate(clips):
        codes = cache.get(clip.audio_path, expected_frames=clip.frames)
        if codes is None:
            codes = encode(codec, load_audio_44k(clip.audio_path), device)
            if abs(codes.shape[1] - clip.frames) > FRAME_TOLERANCE:
                raise RuntimeError(f"DAC returned {codes.shape[1]} frames for {Path(clip.audio_path).name}; its "
                                   f"length calls for {clip.frames}.")
            cache.put(clip.audio_path, codes)
        out.append(codes)
        if progress is not None:
            progress(i + 1, len(clips))
    return out
