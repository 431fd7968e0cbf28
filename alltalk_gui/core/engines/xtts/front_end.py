"""XTTS v2's frozen front end, once per clip: the DVAE's audio codes and the conditioning mel, cached on disk.

coqui's ``GPTTrainer.format_batch_on_device`` runs the frozen front end on every batch of every step: the DVAE mel
and the DVAE encoder over the padded waveforms (the GPT's targets), and the conditioning encoder's mel over the
voice prompt slices. Neither has anything to learn, so here each runs once per clip, before training, on the device
the run trains on, and the result is kept in :mod:`~alltalk_gui.core.training.feature_cache` (keyed by the clip's
bytes and the DVAE's and mel statistics' bytes). A run whose clips are all cached never loads the DVAE; one that
computes frees it before training starts: the DVAE (52 M parameters, 0.19 GiB) leaves the card.

What a clip's entry holds, and how a batch is made from it (one definition, with or without the cache):

* ``codes`` (int16, one per 1024 samples): the DVAE codes of the clip on its own. (coqui's DVAE saw each clip
  zero-padded to its batch's longest, so the last few codes of a shorter clip depended on which clips it was
  batched with: its mel frames near the end mix in the zeros after it. A clip alone, or the longest of its batch,
  gets exactly coqui's codes.)
* ``style_mel`` (float32, 80 x frames, hop 256 with the perceiver resampler): the conditioning encoder's mel of the
  whole clip. A voice prompt slice (3-6 s, drawn per (seed, epoch, clip) as before) is cut out of it as whole
  frames, its start moved back to a frame boundary (at most 255 samples, 12 ms), and padded to the longest slice
  with the mel of silence, which is what coqui's zero-padded slice gives there. The frames inside the slice are
  coqui's mel of the slice; the 4 frames at each edge see the audio around the slice instead of the slice's
  padding (an n_fft of 2,048 reaches 1,024 samples to each side).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from alltalk_gui.core.engines.xtts.files import dvae_shape, load_checkpoint, load_xtts_config, model_files
from alltalk_gui.core.training.feature_cache import FeatureCache, cache_root, files_digest

KIND = "xtts-front-end"
VERSION = 1
CODE_STRIDE = 1024  # samples per DVAE code (coqui's gpt_code_stride_len)
MEL_FRAMES_PER_CODE = 4  # the DVAE mel's hop is 256


def style_mel_settings(config) -> dict[str, int]:
    """The conditioning mel's STFT: XTTS v2 (perceiver resampler) 2048 / 256 / 1024, XTTS v1 4096 / 1024 / 4096."""
    if config.model_args.gpt_use_perceiver_resampler:
        return dict(filter_length=2048, hop_length=256, win_length=1024)
    return dict(filter_length=4096, hop_length=1024, win_length=4096)


class FrontEnd(nn.Module):
    """The DVAE with its mel, and the conditioning encoder's mel, as coqui's ``GPTTrainer`` builds them."""

    calls = 0  # clips the DVAE encoded in this process (the cache's tests count them)

    def __init__(self, base_model: str | os.PathLike[str], config=None) -> None:
        super().__init__()
        from TTS.tts.layers.tortoise.arch_utils import TorchMelSpectrogram
        from TTS.tts.layers.xtts.dvae import DiscreteVAE

        base_model = Path(base_model)
        self.config = config if config is not None else load_xtts_config(base_model)
        files = model_files(base_model)  # a Trainer folder reads these from its base model (layout.py)
        mel_norm_file = str(files.path("mel_stats.pth"))  # a local path: coqui's default is a URL
        self.style_mel = TorchMelSpectrogram(
            **style_mel_settings(self.config), normalize=False, sampling_rate=self.config.audio.sample_rate,
            mel_fmin=0, mel_fmax=8000, n_mel_channels=80, mel_norm_file=mel_norm_file,
        )
        dvae_path = files.path("dvae.pth")
        dvae_state = load_checkpoint(dvae_path)
        shape = dvae_shape(dvae_state, dvae_path)
        # The real DVAE's hyper-parameters are the ones GPTTrainer hard-codes; the tiny test model shrinks the widths.
        self.dvae = DiscreteVAE(
            channels=80, normalization=None, positional_dims=1, num_tokens=shape.num_tokens,
            codebook_dim=shape.codebook_dim, hidden_dim=shape.hidden_dim, num_resnet_blocks=shape.num_resnet_blocks,
            kernel_size=3, num_layers=shape.num_layers, use_transposed_convs=False,
        )
        self.dvae.load_state_dict(dvae_state, strict=False)
        self.dvae_mel = TorchMelSpectrogram(mel_norm_file=mel_norm_file, sampling_rate=self.config.audio.dvae_sample_rate)
        self.requires_grad_(False)
        self.eval()

    def train(self, mode: bool = True) -> "FrontEnd":
        return super().train(False)  # always frozen: the DVAE's codebook statistics must never update

    @torch.no_grad()
    def codes(self, wav: torch.Tensor) -> torch.Tensor:
        """DVAE codes of waveforms ``(b, 1, samples)`` at the dataset's rate: ``(b, codes)``, as coqui computes them."""
        import torchaudio

        if self.config.audio.sample_rate != self.config.audio.dvae_sample_rate:  # coqui's own resampling
            wav = torchaudio.functional.resample(
                wav, orig_freq=self.config.audio.sample_rate, new_freq=self.config.audio.dvae_sample_rate,
                lowpass_filter_width=64, rolloff=0.9475937167399596, resampling_method="kaiser_window",
                beta=14.769656459379492)
        FrontEnd.calls += wav.shape[0]
        return self.dvae.get_codebook_indices(self.dvae_mel(wav))

    @torch.no_grad()
    def conditioning_mel(self, wav: torch.Tensor) -> torch.Tensor:
        """The conditioning encoder's mel of waveforms ``(b, 1, samples)``: ``(b, 80, frames)``."""
        return self.style_mel(wav)

    def clip_features(self, wav: torch.Tensor) -> dict[str, np.ndarray]:
        """A clip's cache entry from its waveform ``(1, samples)``: its codes and its whole conditioning mel."""
        wav = wav.to(next(self.dvae.parameters()).device, torch.float32)[None]
        return {"codes": self.codes(wav)[0].to("cpu", torch.int16).numpy(),
                "style_mel": self.conditioning_mel(wav)[0].to("cpu", torch.float32).numpy()}


def model_key(base_model: str | os.PathLike[str], config) -> str:
    """The front end's identity: the DVAE's weights, the mel statistics and the settings that shape both mels."""
    base_model = Path(base_model)
    settings = json.dumps({"kind": KIND, "sample_rate": config.audio.sample_rate,
                           "dvae_sample_rate": config.audio.dvae_sample_rate, **style_mel_settings(config)},
                          sort_keys=True)
    files = model_files(base_model)
    return files_digest([files.path("dvae.pth"), files.path("mel_stats.pth")], settings)


def silence_frame(base_model: str | os.PathLike[str], config) -> np.ndarray:
    """The conditioning mel of silence (80 values): what a zero-padded voice prompt shows after its end. It is
    ``log(1e-5)`` over the mel statistics, computed through the mel itself so that it is the same numbers."""
    from TTS.tts.layers.tortoise.arch_utils import TorchMelSpectrogram

    mel = TorchMelSpectrogram(**style_mel_settings(config), normalize=False, sampling_rate=config.audio.sample_rate,
                              mel_fmin=0, mel_fmax=8000, n_mel_channels=80,
                              mel_norm_file=str(model_files(base_model).path("mel_stats.pth")))
    with torch.no_grad():
        return mel(torch.zeros(1, 1, 4 * style_mel_settings(config)["filter_length"]))[0, :, 2].numpy()


class ClipFeatures:
    """Every clip's front-end features, from the cache or computed (the front end built on the first miss, on
    ``device``, and freed by :meth:`release`)."""

    def __init__(self, config, xtts_config, device, *, root: str | os.PathLike[str] | None | bool = True) -> None:
        self.base_model = Path(config.base_model_dir)
        self.xtts_config = xtts_config
        self.device = torch.device(device)
        where = cache_root(config) if root is True else (root or None)
        self.cache = FeatureCache(where, KIND, model_key(self.base_model, xtts_config), VERSION)
        self.front_end: FrontEnd | None = None

    def of(self, clips: Sequence[Any]) -> list[dict[str, np.ndarray]]:
        """Features of ``clips`` (objects with ``audio_path`` and ``samples``), in order.

        Building the front end draws random numbers (the DVAE is initialised before its weights are loaded): the
        random generators are put back afterwards, so a run draws the same dropout whether its clips were cached
        or computed."""
        devices = [] if self.device.type != "cuda" else [
            self.device.index if self.device.index is not None else torch.cuda.current_device()]
        with torch.random.fork_rng(devices=devices):
            return [self.cache.get(clip.audio_path, self._compute, check=self._checker(clip.samples))
                    for clip in clips]

    def _compute(self, path: Path) -> dict[str, np.ndarray]:
        from alltalk_gui.core.engines.xtts.data import SAMPLE_RATE
        from alltalk_gui.core.training.data import read_audio

        if self.front_end is None:
            self.front_end = FrontEnd(self.base_model, self.xtts_config).to(self.device)
        return self.front_end.clip_features(read_audio(path, SAMPLE_RATE))

    def _checker(self, samples: int):
        hop = style_mel_settings(self.xtts_config)["hop_length"]
        tokens = self.xtts_config.model_args.gpt_num_audio_tokens - 2  # the DVAE's codebook size

        def check(arrays: dict[str, np.ndarray]) -> bool:
            codes, mel = arrays["codes"], arrays["style_mel"]
            return (codes.dtype == np.int16 and codes.ndim == 1 and abs(len(codes) - expected_codes(samples)) <= 1
                    and int(codes.min(initial=0)) >= 0 and int(codes.max(initial=0)) < tokens
                    and mel.dtype == np.float32 and mel.shape == (80, samples // hop + 1)
                    and bool(np.isfinite(mel).all()))

        return check

    def release(self) -> None:
        """Free the front end (its weights leave the card)."""
        if self.front_end is not None:
            self.front_end = None
            if self.device.type == "cuda":
                torch.cuda.empty_cache()

    def note(self) -> str:
        return self.cache.summary("Frozen front end (DVAE codes, conditioning mels)")


def expected_codes(samples: int) -> int:
    """About how many codes the DVAE gives a clip of ``samples``: one per 1024 samples (its mel's frames, hop 256,
    in fours, rounded up); the GPT reads ``ceil(samples / 1024)`` of them."""
    return -(-(samples // 256 + 1) // MEL_FRAMES_PER_CODE)
