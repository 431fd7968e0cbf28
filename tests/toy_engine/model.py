"""The toy engine's network, features and synthesis: real torch, tiny.

A clip is described by two targets the network predicts from its text: how many 20 ms frames it lasts (as a
log, the ``duration`` part of the loss) and its mean log energy in :data:`BANDS` frequency bands (the ``spectrum``
part, which carries the voice: a learned vector is added to it). Synthesis turns a prediction back into sound: a
harmonic tone at a pitch the description picks, shaped band by band by the predicted spectrum.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

SAMPLE_RATE = 16_000
FRAME = 320          # 20 ms at 16 kHz
BANDS = 16
N_FFT = 512
DIM = 32
CHARS = 128          # ASCII


def text_ids(text: str) -> list[int]:
    """Character ids (ASCII code points); others are refused earlier by the text check."""
    return [ord(c) % CHARS for c in text] or [ord(" ")]


def clip_targets(samples: np.ndarray) -> tuple[float, np.ndarray]:
    """(log frames, mean log band energy) of a 16 kHz mono clip: what the network learns to predict."""
    import torch

    wave = torch.from_numpy(np.ascontiguousarray(samples, dtype=np.float32))
    spec = torch.stft(wave, N_FFT, hop_length=FRAME, window=torch.hann_window(N_FFT), return_complex=True).abs()
    bands = torch.stack([chunk.pow(2).sum(0) for chunk in spec.chunk(BANDS, dim=0)])  # BANDS x frames
    spectrum = torch.log(bands.mean(1) + 1e-6)
    return math.log(max(spec.shape[1], 1)), spectrum.numpy()


def build_model():
    import torch
    from torch import nn

    class ToyModel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(CHARS, DIM)
            self.hidden = nn.Linear(DIM, DIM)
            self.duration = nn.Linear(DIM, 1)
            self.spectrum = nn.Linear(DIM, BANDS)
            self.voice = nn.Parameter(torch.zeros(BANDS))  # the speaker's spectral colour, learned

        def forward(self, chars, mask):
            pooled = (self.embed(chars) * mask[..., None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1)
            h = torch.tanh(self.hidden(pooled))
            return self.duration(h).squeeze(-1), self.spectrum(h) + self.voice

    return ToyModel()


def loss(model, batch, duration_weight: float) -> dict:
    """The loss and its two parts (each a mean squared error over the batch's clips)."""
    import torch.nn.functional as F

    log_frames, spectrum = model(batch["chars"], batch["mask"])
    duration = F.mse_loss(log_frames, batch["log_frames"])
    colour = F.mse_loss(spectrum, batch["spectrum"])
    return {"loss": colour + duration_weight * duration, "duration": duration, "spectrum": colour}


def collate(items: list[dict]) -> dict:
    import torch

    width = max(len(item["chars"]) for item in items)
    chars = torch.zeros(len(items), width, dtype=torch.long)
    mask = torch.zeros(len(items), width)
    for i, item in enumerate(items):
        chars[i, :len(item["chars"])] = torch.tensor(item["chars"])
        mask[i, :len(item["chars"])] = 1.0
    return {"chars": chars, "mask": mask,
            "log_frames": torch.tensor([item["log_frames"] for item in items], dtype=torch.float32),
            "spectrum": torch.tensor(np.stack([item["spectrum"] for item in items]), dtype=torch.float32)}


def split(batch: dict, parts: int) -> list[dict]:
    size = max(1, math.ceil(len(batch["chars"]) / parts))
    return [{k: v[i:i + size] for k, v in batch.items()} for i in range(0, len(batch["chars"]), size)]


def pitch_for(description: str) -> float:
    """The tone's pitch: a deep or low voice is an octave down, a high or bright one an octave up."""
    words = description.lower()
    if any(w in words for w in ("deep", "low", "bass")):
        return 110.0
    if any(w in words for w in ("high", "bright", "light")):
        return 330.0
    return 180.0


def speak(model, text: str, description: str, brightness: float, seed: int) -> np.ndarray:
    """Mono float32 at 16 kHz: the predicted length, the predicted band energies, the described pitch."""
    import torch

    with torch.inference_mode():
        chars = torch.tensor([text_ids(text)])
        log_frames, spectrum = model(chars, torch.ones_like(chars, dtype=torch.float32))
    frames = int(min(max(math.exp(float(log_frames[0])), 10), 1000))
    t = np.arange(frames * FRAME) / SAMPLE_RATE
    energies = np.exp(spectrum[0].numpy() / 2)
    tilt = np.linspace(1.0, brightness, BANDS)
    pitch = pitch_for(description)
    wave = np.zeros_like(t)
    for harmonic in range(1, 24):
        hz = pitch * harmonic
        if hz >= SAMPLE_RATE / 2:
            break
        band = min(int(hz / (SAMPLE_RATE / 2) * BANDS), BANDS - 1)
        wave += energies[band] * tilt[band] * np.sin(2 * np.pi * hz * t) / harmonic
    rng = np.random.default_rng(seed)
    wave += 0.01 * rng.standard_normal(wave.shape)
    peak = float(np.abs(wave).max()) or 1.0
    return (0.5 * wave / peak).astype(np.float32)


def save(model, path: Path, half: bool = False) -> None:
    from safetensors.torch import save_file

    state = {k: (v.half() if half else v).contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(path))


def load(path: Path, weights: Path | None = None):
    from safetensors.torch import load_file

    model = build_model()
    model.load_state_dict(load_file(str(path)), strict=True)
    if weights is not None:
        model.load_state_dict(load_file(str(weights)), strict=True)
    return model.eval()
