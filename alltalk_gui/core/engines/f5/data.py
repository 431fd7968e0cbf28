"""F5-TTS training data: clips as 24 kHz Vocos mels and token ids, their length checks, and batches.

F5 trains on the mel of each clip (Vocos: 24 kHz, 100 bands, hop 256, log of the clamped magnitude, exactly
f5-tts's ``get_vocos_mel_spectrogram``, which we call) and on the transcript's token ids
(:mod:`alltalk_gui.core.engines.f5.text`). There is no audio tokenizer and no fixed text/audio length budget
as XTTS has, so clips from 1 to 30 s are kept (F5's own dataset drops < 0.3 s and > 30 s; below 1 s there
is hardly a word to learn from, and a 30 s clip is 2,813 mel frames, the sequence length that sets the
activation memory). Audio is decoded with the app's own decoder (soundfile, PyAV for other formats), never
torchaudio's loader, which needs a system FFmpeg.

Batches are dicts ``{"mel": b x n x 100, "mel_lengths": b, "text": b x nt (-1 padded), "text_lengths": b}``,
what :func:`alltalk_gui.core.engines.f5.model.loss` takes. F5 batches by frames (its sampler fills 38,400
frames per GPU); a loop can do the same with :func:`frames` as the length key.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alltalk_gui.core.engines.f5.files import HOP_LENGTH, MEL, SAMPLE_RATE
from alltalk_gui.core.engines.f5.text import token_ids, tokenize

MIN_SECONDS = 1.0
MAX_SECONDS = 30.0


class ClipError(ValueError):
    """A clip cannot be used for F5 training; the message names it and says why."""


@dataclass(frozen=True)
class F5Clip:
    """One training clip: its audio file and the exact transcript."""

    audio_path: Path
    text: str


@dataclass(frozen=True)
class F5Sample:
    mel: Any            # torch.Tensor, frames x 100
    tokens: Any         # torch.LongTensor, token ids
    clip: F5Clip


def frames(seconds: float) -> int:
    """Mel frames F5 sees for a clip of ``seconds`` (centred STFT: one frame per hop plus one)."""
    return int(seconds * SAMPLE_RATE) // HOP_LENGTH + 1


def load_audio_24k(path: str | os.PathLike[str]):
    """Decode ``path`` to mono float32 at 24 kHz as a 1-D torch tensor."""
    import torch

    from alltalk_gui.core.audio.decode import load, resample, to_mono

    samples, rate = load(path)
    return torch.from_numpy(resample(to_mono(samples), rate, SAMPLE_RATE).copy())


def mel_spectrogram(wave):
    """Vocos mel of a 24 kHz waveform (1-D or b x samples): frames x 100 (or b x frames x 100)."""
    from alltalk_gui.core.engines.f5.upstream import f5_model_package

    f5_model_package()
    from f5_tts.model.modules import get_vocos_mel_spectrogram

    batched = wave.dim() == 2
    mel = get_vocos_mel_spectrogram(wave if batched else wave[None], n_fft=MEL["n_fft"],
                                    n_mel_channels=MEL["n_mel_channels"], target_sample_rate=SAMPLE_RATE,
                                    hop_length=HOP_LENGTH, win_length=MEL["win_length"])
    mel = mel.transpose(1, 2)
    return mel if batched else mel[0]


def prepare_clip(clip: F5Clip, vocab: dict[str, int]) -> F5Sample:
    """Load, check and featurise one clip.

    Raises:
        ClipError: shorter than 1 s or longer than 30 s, or no text.
    """
    import torch

    if not clip.text.strip():
        raise ClipError(f"{clip.audio_path.name} has no transcript.")
    wave = load_audio_24k(clip.audio_path)
    seconds = wave.numel() / SAMPLE_RATE
    if not MIN_SECONDS <= seconds <= MAX_SECONDS:
        raise ClipError(f"{clip.audio_path.name} is {seconds:.1f} s long; F5-TTS trains on clips of "
                        f"{MIN_SECONDS:g} to {MAX_SECONDS:g} s.")
    ids = torch.tensor(token_ids(tokenize(clip.text), vocab), dtype=torch.long)
    return F5Sample(mel=mel_spectrogram(wave), tokens=ids, clip=clip)


def prepare_clips(clips: list[F5Clip], vocab: dict[str, int]) -> tuple[list[F5Sample], list[str]]:
    """Featurise every usable clip; returns (samples, one message per clip left out)."""
    samples, skipped = [], []
    for clip in clips:
        try:
            samples.append(prepare_clip(clip, vocab))
        except ClipError as exc:
            skipped.append(str(exc))
    return samples, skipped


def collate(samples: list[F5Sample]) -> dict[str, Any]:
    """Pad a list of samples into one batch (mels with 0, token ids with -1 as f5-tts does)."""
    import torch
    from torch.nn.utils.rnn import pad_sequence

    return {
        "mel": pad_sequence([s.mel for s in samples], batch_first=True, padding_value=0.0),
        "mel_lengths": torch.tensor([s.mel.shape[0] for s in samples], dtype=torch.long),
        "text": pad_sequence([s.tokens for s in samples], batch_first=True, padding_value=-1),
        "text_lengths": torch.tensor([s.tokens.numel() for s in samples], dtype=torch.long),
    }


def clips_from_metadata(csv_path: str | os.PathLike[str]) -> list[F5Clip]:
    """The clips of a coqui/AllTalk ``metadata_*.csv`` (the app's dataset export), paths made absolute."""
    from alltalk_gui.core.dataset.metadata import read_metadata

    base = Path(csv_path).parent
    return [F5Clip(base / row.audio_file, row.text) for row in read_metadata(csv_path)]


def max_frames() -> int:
    """Mel frames of the longest clip kept (30 s): the sequence length memory estimates are made for."""
    return frames(MAX_SECONDS)



# -- the training loop's data (alltalk_gui.core.training.loop, through the engine) -----------------------------------

@dataclass(frozen=True)
class TrainClip:
    """A dataset clip checked for F5 training: its file, transcript, F5 tokens and length in mel frames."""

    audio_path: Path
    text: str
    tokens: tuple[str, ...]     # as F5 tokenizes the text (pinyin syllables for Chinese characters)
    frames: int                 # mel frames at 24 kHz: the length key of length-bucketed batches
    where: str                  # "metadata_train.csv line 4 (wavs/a.wav)", for messages


def load_dataset(dataset_dir: str | os.PathLike[str], vocab: list[str], *, min_seconds: float, max_seconds: float,
                 add_missing: bool) -> tuple[list[TrainClip], list[TrainClip]]:
    """The training and eval clips of a dataset folder (the app's dataset export), every clip checked.

    Every problem is collected and reported together: a missing or unreadable audio file, a clip outside
    ``min_seconds``-``max_seconds``, and characters the vocabulary lacks (unless
    ``add_missing``, the user's consent to add them). Nothing is skipped silently.

    Returns:
        (train clips, eval clips); the engine grows the vocabulary by what they lack when ``add_missing``
    Raises:
        alltalk_gui.core.training.data.DatasetError
    """
    from alltalk_gui.core.engines.f5.text import missing_report, missing_tokens
    from alltalk_gui.core.training.data import DatasetError, checked_clips

    train, evals = checked_clips(dataset_dir, "F5-TTS", lambda folder, row, where: _check_clip(
        folder, row, where, min_seconds, max_seconds))
    missing = missing_tokens([c.text for c in train + evals], vocab)
    if missing and not add_missing:
        raise DatasetError(missing_report(missing) + " To add them, set add_missing_characters=true (the Train "
                           "page: Advanced settings); to correct the transcripts, use the Transcribe & Edit step.")
    return train, evals


def _check_clip(dataset_dir: Path, row, where: str, min_seconds: float,
                max_seconds: float) -> tuple[str | None, TrainClip | None]:
    from alltalk_gui.core.audio.decode import AudioError, load  # NaN and infinity decode as 0

    path = (dataset_dir / row.audio_file).resolve()
    if not path.is_file():
        return f"{where}: the audio file does not exist.", None
    try:
        samples, rate = load(path)
    except AudioError as exc:
        return f"{where}: the audio file cannot be read ({str(exc).strip() or type(exc).__name__}).", None
    seconds = samples.shape[0] / rate
    if seconds > max_seconds:
        return (f"{where}: the clip is {seconds:.1f} s long; the limit is {max_seconds:g} s (max_audio_seconds). "
                "Split it into shorter clips."), None
    if seconds < min_seconds:
        return (f"{where}: the clip is {seconds:.2f} s long; the minimum is {min_seconds:g} s "
                "(min_audio_seconds): F5-TTS learns little from less than a second."), None
    return None, TrainClip(path, row.text, tuple(tokenize(row.text)), frames(seconds), where)


class ClipSet:
    """The clips as training items (:class:`F5Sample`: Vocos mel and token ids). ``mels[i]`` is clip ``i``'s mel
    computed once (:mod:`~alltalk_gui.core.engines.f5.mel_cache`); without ``mels`` a clip is decoded when asked for.

    Nothing here is random: the randomness of F5's objective (time, noise, masked span, dropped conditions)
    is drawn inside ``CFM.forward`` from torch's and Python's generators, whose states every checkpoint saves,
    so a resumed run draws what the straight run drew.
    """

    def __init__(self, clips: list[TrainClip], vocab: list[str], mels: list[Any] | None = None) -> None:
        if mels is not None and len(mels) != len(clips):
            raise ValueError(f"{len(clips)} clips but {len(mels)} mels")
        self.clips = clips
        self.ids = {token: i for i, token in enumerate(vocab)}
        self.mels = mels

    def set_epoch(self, epoch: int) -> None:  # noqa: ARG002 - the loop's dataset interface; order lives in the sampler
        return None

    def __len__(self) -> int:
        return len(self.clips)

    def __getitem__(self, index: int) -> F5Sample:
        import torch

        clip = self.clips[index]
        ids = torch.tensor(token_ids(list(clip.tokens), self.ids), dtype=torch.long)
        if self.mels is not None:
            mel = torch.from_numpy(self.mels[index])
        else:
            mel = mel_spectrogram(load_audio_24k(clip.audio_path))
        return F5Sample(mel=mel, tokens=ids, clip=F5Clip(clip.audio_path, clip.text))


def batch_size(batch: dict[str, Any]) -> int:
    return int(batch["mel"].shape[0])


def split_batch(batch: dict[str, Any], parts: int) -> list[dict[str, Any]]:
    """Cut a collated batch into ``parts`` smaller ones (the last may be smaller), each trimmed to its own longest
    mel and text: what the loop runs when a whole micro-batch does not fit in memory."""
    import math

    size = batch_size(batch)
    step = max(1, math.ceil(size / parts))
    out = []
    for start in range(0, size, step):
        rows = slice(start, start + step)
        mel_len, text_len = int(batch["mel_lengths"][rows].max()), int(batch["text_lengths"][rows].max())
        out.append({"mel": batch["mel"][rows, :mel_len], "mel_lengths": batch["mel_lengths"][rows],
                    "text": batch["text"][rows, :text_len], "text_lengths": batch["text_lengths"][rows]})
    return out
