"""Naturalness: a predicted mean opinion score (MOS, 1 to 5) for how natural and clean speech sounds.

The predictor is DistillMOS (``distillmos/weights/distill_mos_v7.pt`` inside its wheel: a small convolutional
network and transformer distilled from an XLS-R based quality model, 16 kHz). It rates speech the way listeners
rate it on the ITU-T P.800 scale (5 excellent, 4 good, 3 fair, 2 poor, 1 bad): noise, clipping, buzz and a
robotic sound pull it down. It needs no reference and no text. Clips longer than 7.68 s are rated in overlapping
windows and averaged (DistillMOS's own way).

The model loads once, on first use, in the calling thread: about 1 s on a CPU, about 0.5 s per few-second clip.
Its weights load with ``weights_only=True`` (distillmos's own call).
"""

from __future__ import annotations

import contextlib
import io
import threading
from typing import Any

import numpy as np

from alltalk_gui.core.voice.judge.likeness import prepared


class MosPredictor:
    """DistillMOS, loaded on first use. ``device``: ``auto`` (CUDA when there), ``cpu``, ``cuda``."""

    def __init__(self, device: str = "auto") -> None:
        self.device = device
        self._model: Any = None
        self._torch_device = "cpu"
        self._lock = threading.Lock()

    def _predictor(self) -> Any:
        with self._lock:
            if self._model is None:
                import torch
                from distillmos import ConvTransformerSQAModel

                device = self.device
                if device == "auto":
                    device = "cuda" if torch.cuda.is_available() else "cpu"
                with contextlib.redirect_stdout(io.StringIO()):  # it prints where it loaded its weights from
                    model = ConvTransformerSQAModel()
                self._model = model.eval().to(device)
                self._torch_device = device
            return self._model

    def mos(self, samples: np.ndarray, rate: int) -> float:
        """The predicted MOS (1 to 5) of one clip (mono float at ``rate``).

        Raises:
            JudgeAudioError: the clip is empty, silent or not finite.
        """
        import torch

        model = self._predictor()
        wav = prepared(samples, rate)
        with torch.inference_mode():
            score = model(torch.from_numpy(np.ascontiguousarray(wav))[None].to(self._torch_device))
        return float(score.reshape(-1)[0])
