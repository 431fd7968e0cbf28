"""F5-TTS synthesis for preview: a reference clip, its exact transcript and new text in, 24 kHz audio out.

F5 does not take a speaker embedding: it *infills*. The reference clip's mel is the start of the sequence,
the text is "reference transcript + new text", and the model fills in the frames after the reference by
solving the flow ODE in ``nfe`` steps (each step runs the DiT twice, with and without the condition, for
classifier-free guidance). A transcript that does not match the clip exactly shifts the alignment and the
preview mumbles, so the app gives a clean training clip together with its own text. The length of the new
part is estimated from the reference's speaking rate (frames per UTF-8 byte), as f5-tts's
``infer_batch_process`` does; its other defaults are used too (cfg 2.0, sway -1.0, reference RMS raised to
0.1 and the output scaled back). Only a single chunk is generated: preview sentences are short.

Time: the work is ``nfe`` x 2 DiT passes over (reference + new) frames; :func:`cpu_seconds_estimate` turns
that into seconds from one measured pass, so the page can show what a choice of steps costs on the CPU.
Measured 2026-11-23 on the shared 2-core dev machine with one thread, real-size DiT (random weights): 11.8 ms
per frame per pass, so a 6 s reference + 4 s of new speech costs about 180 s at NFE 8, 360 s at 16 and
710 s at 32 (more threads divide it; a GPU takes a fraction of a second).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from alltalk_gui.core.engines.f5.files import HOP_LENGTH, SAMPLE_RATE

DEFAULT_NFE = 32       # f5-tts's default; 16 is about twice as fast and still intelligible on v1 Base
# Seconds per mel frame per DiT pass of the real-size model on the CPU (measured as the docstring says): what
# :func:`cpu_seconds_estimate` turns into a time per take before anything is loaded.
CPU_SECONDS_PER_FRAME_PASS = 11.8e-3
NFE_CHOICES = (8, 16, 32, 64)
CFG_STRENGTH = 2.0
SWAY = -1.0
TARGET_RMS = 0.1


@dataclass(frozen=True)
class Synthesis:
    audio: object          # numpy float32, 24 kHz mono: the new speech only (the reference is cut off)
    sample_rate: int
    frames: int            # mel frames generated after the reference


def load_vocoder(folder: str | os.PathLike[str], device: str = "cpu"):
    """Vocos from ``config.yaml`` + ``pytorch_model.bin`` in ``folder`` (loaded strictly, weights only)."""
    import torch
    from vocos import Vocos

    folder = Path(folder)
    vocoder = Vocos.from_hparams(str(folder / "config.yaml"))
    vocoder.load_state_dict(torch.load(folder / "pytorch_model.bin", map_location="cpu", weights_only=True))
    return vocoder.eval().to(device)


def estimate_frames(reference_frames: int, reference_text: str, text: str, speed: float = 1.0) -> int:
    """Total frames (reference + new) from the reference's frames per UTF-8 byte, as f5-tts estimates them."""
    ref_bytes = max(1, len(reference_text.encode("utf-8")))
    new_bytes = len(text.encode("utf-8"))
    if new_bytes < 10:
        speed = 0.3  # f5-tts: very short texts get more time, or they come out clipped
    return reference_frames + int(reference_frames / ref_bytes * new_bytes / speed)


def synthesize(cfm, vocoder, reference_audio, reference_text: str, text: str, nfe: int = DEFAULT_NFE,
               seed: int | None = 0, speed: float = 1.0) -> Synthesis:
    """Speak ``text`` in the voice of ``reference_audio`` (1-D tensor, 24 kHz) whose words are ``reference_text``.

    Raises:
        ValueError: empty text or reference transcript, or nfe < 1.
    """
    import torch

    from alltalk_gui.core.engines.f5.text import tokenize

    if not text.strip() or not reference_text.strip():
        raise ValueError("F5-TTS needs the text to speak and the reference clip's exact transcript")
    if nfe < 1:
        raise ValueError("nfe (sampling steps) must be at least 1")
    device = next(cfm.parameters()).device
    audio = reference_audio.float().reshape(1, -1)
    rms = torch.sqrt(torch.mean(audio**2)).clamp(min=1e-8)
    if rms < TARGET_RMS:
        audio = audio * TARGET_RMS / rms
    if len(reference_text[-1].encode("utf-8")) == 1:
        reference_text = reference_text + " "
    reference_frames = audio.shape[-1] // HOP_LENGTH
    total = estimate_frames(reference_frames, reference_text, text, speed)
    tokens = [tokenize(reference_text + text)]
    was_training = cfm.training
    with torch.inference_mode():
        mel, _ = cfm.sample(cond=audio.to(device), text=tokens, duration=total, steps=nfe,
                            cfg_strength=CFG_STRENGTH, sway_sampling_coef=SWAY, seed=seed)
        mel = mel.float()[:, reference_frames:, :].permute(0, 2, 1)
        wave = vocoder.to(device).decode(mel.to(device))
        if rms < TARGET_RMS:
            wave = wave * rms / TARGET_RMS
    cfm.train(was_training)
    return Synthesis(wave.squeeze(0).cpu().numpy(), SAMPLE_RATE, int(mel.shape[-1]))


def synthesize_to_file(cfm, vocoder, reference_wav: str | os.PathLike[str], reference_text: str, text: str,
                       out: str | os.PathLike[str], nfe: int = DEFAULT_NFE, seed: int | None = 0) -> Synthesis:
    """:func:`synthesize` from a reference audio file (any format the app decodes) into a WAV file (atomic)."""
    from alltalk_gui.core.audio.decode import write_wav
    from alltalk_gui.core.engines.f5.data import load_audio_24k

    result = synthesize(cfm, vocoder, load_audio_24k(reference_wav), reference_text, text, nfe=nfe, seed=seed)
    write_wav(out, result.audio, result.sample_rate)
    return result


def cpu_seconds_estimate(seconds_per_pass_per_frame: float, reference_seconds: float, new_seconds: float,
                         nfe: int) -> float:
    """Seconds to synthesise: ``nfe`` steps x 2 DiT passes (cfg) over the whole sequence, plus ~1 % for Vocos.

    ``seconds_per_pass_per_frame`` comes from one timed pass on the machine (see :func:`time_one_pass`).
    """
    frames = (reference_seconds + new_seconds) * SAMPLE_RATE / HOP_LENGTH
    return 1.01 * nfe * 2 * frames * seconds_per_pass_per_frame


def time_one_pass(cfm, frames: int = 400) -> float:
    """Measure one DiT forward pass (batch 2, as cfg runs) on ``frames`` frames; returns seconds per frame."""
    import time

    import torch

    device = next(cfm.parameters()).device
    x = torch.randn(2, frames, cfm.num_channels, device=device)
    text = torch.zeros(2, frames // 4, dtype=torch.long, device=device)
    with torch.inference_mode():
        cfm.transformer(x=x, cond=x, text=text, time=torch.full((2,), 0.5, device=device))
        start = time.perf_counter()
        cfm.transformer(x=x, cond=x, text=text, time=torch.full((2,), 0.5, device=device))
        elapsed = time.perf_counter() - start
    return elapsed / frames / 2


def choose_reference(clips: list[tuple[object, str, float]], flagged: set[object] = frozenset()) -> tuple[object, str]:
    """Pick a preview reference from training clips ``(id, transcript, seconds)``: F5 cuts references to about
    12 s and needs the exact transcript, so prefer unflagged clips of 4-10 s whose transcript ends a sentence,
    the longest of those; otherwise the unflagged clip nearest 7 s.

    Raises:
        ValueError: no clip with a transcript.
    """
    usable = [c for c in clips if c[1].strip() and c[0] not in flagged] or [c for c in clips if c[1].strip()]
    if not usable:
        raise ValueError("no clip with a transcript to use as the F5-TTS reference")
    ideal = [c for c in usable if 4.0 <= c[2] <= 10.0 and c[1].rstrip()[-1:] in ".!?。！？"]
    best = max(ideal, key=lambda c: c[2]) if ideal else min(usable, key=lambda c: abs(c[2] - 7.0))
    return best[0], best[1]
