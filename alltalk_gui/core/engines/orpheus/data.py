"""Orpheus-TTS training data: the dataset's clips checked, turned into token sequences once, and batched.

Each row of ``metadata_train.csv`` / ``metadata_eval.csv`` becomes one sequence (:mod:`.tokens`): the prompt
``"<speaker>: <text>"`` (the speaker is the row's ``speaker_name``, which the dataset export fills with the
project's speaker name), then the clip's SNAC codes as audio tokens, repeated frames dropped as Orpheus does. The
codes come from :class:`~.codes.ClipCodes`: the codec runs once per clip, at the first training run.

Limits (:func:`check_clip`): a clip must be at least ``min_seconds`` long and at most ``max_seconds``, and its
whole sequence (prompt + the clip's frames x 7 + 2) must fit the model's context (:func:`.files.context_length`,
8,192 tokens for Orpheus 3B: about 97 s of speech; the tiny test model's 2,048: about 24 s). Every problem of
every clip is listed at once (:class:`~alltalk_gui.core.training.data.DatasetError`), before any model loads.

Batches are dicts ``{"input_ids", "attention_mask", "labels"}`` (b x n), padded on the right with Orpheus's pad
token; ``labels`` hold the token to score at each position and :data:`~.tokens.IGNORE` for the prompt and the
padding. The length key for length-bucketed batches is the sequence length in tokens.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from alltalk_gui.core.engines.orpheus.codec import CodecFacts
from alltalk_gui.core.engines.orpheus.tokens import IGNORE, SpecialTokens, drop_repeated_frames, frames_to_tokens, \
    prompt_ids, training_sequence

MIN_SECONDS = 1.0
MAX_SECONDS = 30.0      # the profiles' limit: activation memory grows with it (30 s = 2,461 audio tokens)


@dataclass(frozen=True)
class OrpheusClip:
    """A dataset clip checked for Orpheus training."""

    audio_path: Path
    text: str
    speaker: str
    prompt: tuple[int, ...]       # token ids up to start-of-speech (:func:`.tokens.prompt_ids`)
    seconds: float
    length: int                   # tokens of its sequence before repeated frames are dropped (an upper bound)
    where: str                    # "metadata_train.csv line 4 (wavs/a.wav)", for messages


@dataclass(frozen=True)
class Sample:
    """One clip as the model trains on it."""

    input_ids: Any                # torch.LongTensor (n,)
    scored_from: int              # index of the first scored token (the first audio token)


def sequence_length(prompt_tokens: int, seconds: float, codec: CodecFacts) -> int:
    """Tokens of a clip's sequence before repeated frames are dropped: prompt, 7 per frame, end of speech and AI."""
    return prompt_tokens + codec.frames(round(seconds * codec.sample_rate)) * codec.codes_per_frame + 2


def load_dataset(dataset_dir: str | os.PathLike[str], tokenizer: Any, special: SpecialTokens, codec: CodecFacts,
                 context: int, *, min_seconds: float, max_seconds: float) -> tuple[list[OrpheusClip], list[OrpheusClip]]:
    """The training and eval clips of a dataset folder, every clip checked and every problem reported together.

    Raises:
        alltalk_gui.core.training.data.DatasetError
    """
    from alltalk_gui.core.training.data import checked_clips

    def check(folder: Path, row, where: str) -> tuple[str | None, OrpheusClip | None]:
        prompt = tuple(prompt_ids(tokenizer, special, row.speaker_name, row.text))
        return check_clip(folder / row.audio_file, row.text, row.speaker_name, prompt, where, codec, context,
                          min_seconds, max_seconds)

    return checked_clips(dataset_dir, "Orpheus-TTS", check)


def check_clip(path: Path, text: str, speaker: str, prompt: tuple[int, ...], where: str, codec: CodecFacts,
               context: int, min_seconds: float, max_seconds: float) -> tuple[str | None, OrpheusClip | None]:
    """(a problem in plain words, None) or (None, the checked clip)."""
    from alltalk_gui.core.audio.decode import AudioError, probe

    path = path.resolve()
    if not path.is_file():
        return f"{where}: the audio file does not exist.", None
    try:
        seconds = probe(path).duration_s
    except AudioError as exc:
        return f"{where}: the audio file cannot be read ({str(exc).strip() or type(exc).__name__}).", None
    if seconds > max_seconds:
        return (f"{where}: the clip is {seconds:.1f} s long; the limit is {max_seconds:g} s (max_audio_seconds). "
                "Split it into shorter clips."), None
    if seconds < min_seconds:
        return (f"{where}: the clip is {seconds:.2f} s long; the minimum is {min_seconds:g} s "
                "(min_audio_seconds)."), None
    length = sequence_length(len(prompt), seconds, codec)
    if length > context:
        return (f"{where}: its words and {seconds:.1f} s of speech take {length} tokens; the model reads at most "
                f"{context}. Split it into shorter clips."), None
    return None, OrpheusClip(path, text, speaker, prompt, seconds, length, where)


def load_audio(path: str | os.PathLike[str], sample_rate: int):
    """Decode ``path`` to mono float32 numpy at ``sample_rate`` (a dataset exported at another rate is resampled)."""
    from alltalk_gui.core.audio.decode import load, resample, to_mono

    samples, rate = load(path)
    return resample(to_mono(samples), rate, sample_rate)


def clip_tokens(levels, special: SpecialTokens) -> list[int]:
    """A clip's SNAC levels as the audio tokens Orpheus trains on (repeated frames dropped)."""
    return drop_repeated_frames(frames_to_tokens(levels, special), special.codes_per_frame)


def make_samples(clips: list[OrpheusClip], special: SpecialTokens, codes: Callable[[Path], Any]) -> list[Sample]:
    """Each clip's training sample; ``codes(path)`` gives its SNAC levels (through the cache)."""
    import torch

    samples = []
    for clip in clips:
        ids, start = training_sequence(clip.prompt, clip_tokens(codes(clip.audio_path), special), special)
        samples.append(Sample(torch.tensor(ids, dtype=torch.long), start))
    return samples


class ClipSet:
    """The samples as the loop's dataset; nothing here is random (dropout draws from torch's generator, whose
    state every checkpoint saves)."""

    def __init__(self, samples: list[Sample]) -> None:
        self.samples = samples

    def set_epoch(self, epoch: int) -> None:  # noqa: ARG002 - the loop's dataset interface; order lives in the sampler
        return None

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> Sample:
        return self.samples[index]

    @property
    def lengths(self) -> list[int]:
        return [int(s.input_ids.numel()) for s in self.samples]


def collate(samples: list[Sample], pad: int) -> dict[str, Any]:
    """Pad samples on the right into one batch; labels score only each sample's answer."""
    import torch

    longest = max(int(s.input_ids.numel()) for s in samples)
    ids = torch.full((len(samples), longest), pad, dtype=torch.long)
    labels = torch.full((len(samples), longest), IGNORE, dtype=torch.long)
    mask = torch.zeros((len(samples), longest), dtype=torch.long)
    for row, sample in enumerate(samples):
        n = int(sample.input_ids.numel())
        ids[row, :n] = sample.input_ids
        labels[row, sample.scored_from:n] = sample.input_ids[sample.scored_from:]
        mask[row, :n] = 1
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def batch_size(batch: dict[str, Any]) -> int:
    return int(batch["input_ids"].shape[0])


def split_batch(batch: dict[str, Any], parts: int) -> list[dict[str, Any]]:
    """Cut a collated batch into ``parts`` smaller ones (the last may be smaller), each trimmed to its own longest
    sequence: what the loop runs when a whole micro-batch does not fit in memory."""
    import math

    size = batch_size(batch)
    step = max(1, math.ceil(size / parts))
    out = []
    for start in range(0, size, step):
        rows = slice(start, start + step)
        longest = int(batch["attention_mask"][rows].sum(dim=1).max())
        out.append({key: value[rows, :longest] for key, value in batch.items()})
    return out
