"""DAC codes of the dataset's clips, computed once and kept on disk (Parler trains on codes, never on audio).

Parler-TTS's decoder predicts the 9 codebooks of Descript's DAC 44.1 kHz codec; the codec itself stays frozen, so
a clip's codes never change. Parler's own training script therefore encodes the whole dataset before it trains
(``audio_encoder_per_device_batch_size``, ``save_to_disk``). Here each clip is encoded once through the app's
shared cache of frozen front ends (:mod:`alltalk_gui.core.training.feature_cache`)::

    <project>/feature_cache/parler-dac44k-<codec>/<sha256 of the clip file>.npz      codes: int16, 9 x frames

``<codec>`` is a digest of the codec's weights, so another base model with other DAC weights never reads these
codes; the clip's own digest names the entry, so an edited or re-exported clip is encoded again and an unchanged
one is not, whatever it is called. An entry is used only when it is 9 codebooks of codes below 1024, as many frames
as the clip's length calls for (DAC returns ceil(samples / 512) frames, or one less: :data:`FRAME_TOLERANCE`).
The cache's counters say how many clips went through the codec (the training's log reports them).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Callable, Sequence

from alltalk_gui.core.engines.parler.files import CODEBOOK_SIZE, NUM_CODEBOOKS, SAMPLE_RATE

KIND = "parler-dac44k"
FRAME_TOLERANCE = 2


def codec_fingerprint(codec) -> str:
    """A digest of the codec's weights (names, shapes and values), 16 hex digits."""
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


def encode(codec, samples, device) -> Any:
    """DAC codes of mono 44.1 kHz ``samples``: int16 numpy, 9 x frames."""
    import numpy as np
    import torch

    wave = torch.from_numpy(np.ascontiguousarray(samples, dtype=np.float32))[None, None].to(device)
    with torch.no_grad():
        codes = codec.encode(wave, sample_rate=SAMPLE_RATE).audio_codes  # 1 x 1 x 9 x frames
    return codes[0, 0].to("cpu", torch.int16).numpy()


def usable(codes, frames: int) -> bool:
    """Whether ``codes`` can be a clip of ``frames`` frames' codes."""
    import numpy as np

    return (codes.ndim == 2 and codes.shape[0] == NUM_CODEBOOKS and codes.dtype == np.int16
            and abs(codes.shape[1] - frames) <= FRAME_TOLERANCE
            and int(codes.min(initial=0)) >= 0 and int(codes.max(initial=0)) < CODEBOOK_SIZE)


def dataset_codes(clips: Sequence[Any], codec, cache, device,
                  progress: Callable[[int, int], None] | None = None) -> list[Any]:
    """The codes of every clip (objects with ``audio_path`` and ``frames``) through ``cache`` (a
    :class:`~alltalk_gui.core.training.feature_cache.FeatureCache`): read, or encoded and kept.

    Raises:
        RuntimeError: the codec returned a number of frames the clip's length does not call for.
    """
    out = []
    for i, clip in enumerate(clips):
        def compute(path: Path, frames: int = clip.frames) -> dict[str, Any]:
            codes = encode(codec, load_audio_44k(path), device)
            if not usable(codes, frames):
                raise RuntimeError(f"DAC returned codes of shape {codes.shape} for {Path(path).name}; its length "
                                   f"calls for 9 x {frames}.")
            return {"codes": codes}

        out.append(cache.get(clip.audio_path, compute, check=lambda arrays, f=clip.frames: usable(arrays["codes"], f))
                   ["codes"])
        if progress is not None:
            progress(i + 1, len(clips))
    return out
