"""Parler-TTS training data: clips as DAC codes in Parler's delay pattern, the transcript as prompt tokens, the
speaker's description as (precomputed) Flan-T5 states, and batches of them.

**Labels.** Parler's decoder predicts the 9 DAC codebooks of a frame with a delay: codebook k runs k frames
behind codebook 0, so the model sees the coarse codes of a frame before the fine ones. For a clip of T frames
the labels are, per codebook k, k BOS codes, the T codes, then 9 - k EOS codes: T + 9 positions. That is what
Parler's training script builds (a BOS column, ``build_delay_pattern_mask``, EOS for the ends, the BOS column
dropped again); :func:`labels_from_codes` writes it directly, and the parity test checks that both agree. The
model masks the BOS codes and every EOS but the first of each codebook out of the loss itself.

**Description.** One speaker, one description (:mod:`.description`, saved in the project): Flan-T5 is frozen, so
its output for that text never changes. Parler's script runs T5 in every step because its descriptions differ
per utterance; here each distinct description is encoded once before training and T5 leaves memory
(:func:`alltalk_gui.core.engines.parler.model.encode_descriptions`). Batches carry the states.

Batches are dicts: ``labels`` (b x positions x 9, -100 padded), ``prompt_input_ids`` / ``prompt_attention_mask``
(b x tokens, the tokenizer's pad id 0), ``description_states`` (b x tokens x T5 width, zero padded) and
``description_mask``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alltalk_gui.core.engines.parler.files import CODEBOOK_SIZE, NUM_CODEBOOKS, SAMPLE_RATE, frames

BOS = CODEBOOK_SIZE + 1   # Parler's BOS code (decoder_start_token_id)
EOS = CODEBOOK_SIZE       # Parler's EOS code, also its padding code
IGNORE = -100             # label positions no loss is taken on (padding)
MIN_SECONDS = 1.0
MAX_SECONDS = 30.0        # Parler's own training keeps 2-30 s; 30 s is 2,584 frames + 9, within Mini's 4,096 positions


@dataclass(frozen=True)
class TrainClip:
    """A dataset clip checked for Parler training."""

    audio_path: Path
    text: str
    frames: int          # DAC frames at 44.1 kHz: the length key of length-bucketed batches
    where: str           # "metadata_train.csv line 4 (wavs/a.wav)", for messages


def labels_from_codes(codes) -> Any:
    """Parler's delayed labels of one clip: a LongTensor (frames + 9) x 9 from codes 9 x frames."""
    import torch

    codes = torch.as_tensor(codes, dtype=torch.long)
    k, t = codes.shape
    rows = [torch.cat([torch.full((i,), BOS), codes[i], torch.full((k - i,), EOS)]) for i in range(k)]
    return torch.stack(rows).T.contiguous()


def load_dataset(dataset_dir: str | os.PathLike[str], *, min_seconds: float, max_seconds: float,
                 text_check=None) -> tuple[list[TrainClip], list[TrainClip]]:
    """The training and eval clips of a dataset folder (the app's dataset export), every clip checked.

    Every problem is collected and reported together: a missing or unreadable audio file, a clip outside
    ``min_seconds``-``max_seconds``, an empty transcript, characters the tokenizer cannot read (``text_check``,
    a :class:`~alltalk_gui.core.engine_api.engine.TextCheck`). Nothing is skipped silently.

    Raises:
        alltalk_gui.core.training.data.DatasetError
    """
    from alltalk_gui.core.training.data import checked_clips

    return checked_clips(dataset_dir, "Parler-TTS", lambda folder, row, where: _check_clip(
        folder, row, where, min_seconds, max_seconds, text_check))


def _check_clip(dataset_dir: Path, row, where: str, min_seconds: float, max_seconds: float,
                text_check) -> tuple[str | None, TrainClip | None]:
    from alltalk_gui.core.audio.decode import AudioError, load, resample, to_mono

    path = (dataset_dir / row.audio_file).resolve()
    if not path.is_file():
        return f"{where}: the audio file does not exist.", None
    if not row.text.strip():
        return f"{where}: the transcript is empty.", None
    if text_check is not None and (problem := text_check.problem(row.text)):
        return f"{where}: {problem}", None
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
                "(min_audio_seconds)."), None
    # DAC frames of the clip as the codec will get it: resampled to 44.1 kHz (soxr's output length has no
    # closed form worth trusting; resampling a clip costs milliseconds).
    return None, TrainClip(path, row.text, frames(resample(to_mono(samples), rate, SAMPLE_RATE).shape[0]), where)


class ClipSet:
    """The clips as training items: delayed labels from cached codes, prompt ids, and the description's states.

    Nothing here is random; dropout draws from torch's generator, whose state every checkpoint saves."""

    def __init__(self, clips: list[TrainClip], codes: list[Any], prompt_ids: list[list[int]],
                 description_states: Any) -> None:
        self.clips, self.codes, self.prompt_ids, self.description_states = clips, codes, prompt_ids, description_states

    def set_epoch(self, epoch: int) -> None:  # noqa: ARG002 - the loop's dataset interface; order lives in the sampler
        return None

    def __len__(self) -> int:
        return len(self.clips)

    def __getitem__(self, index: int) -> dict[str, Any]:
        import torch

        return {"labels": labels_from_codes(self.codes[index]),
                "prompt": torch.tensor(self.prompt_ids[index], dtype=torch.long),
                "description": self.description_states}


def collate(samples: list[dict[str, Any]], pad_id: int = 0) -> dict[str, Any]:
    """Pad samples into one batch (labels with -100, prompts with the tokenizer's pad id, states with 0)."""
    import torch
    from torch.nn.utils.rnn import pad_sequence

    prompts = [s["prompt"] for s in samples]
    descriptions = [s["description"] for s in samples]
    return {
        "labels": pad_sequence([s["labels"] for s in samples], batch_first=True, padding_value=IGNORE),
        "prompt_input_ids": pad_sequence(prompts, batch_first=True, padding_value=pad_id),
        "prompt_attention_mask": pad_sequence([torch.ones_like(p) for p in prompts], batch_first=True),
        "description_states": pad_sequence(descriptions, batch_first=True),
        "description_mask": pad_sequence([torch.ones(len(d), dtype=torch.long) for d in descriptions],
                                         batch_first=True),
    }


def batch_size(batch: dict[str, Any]) -> int:
    return int(batch["labels"].shape[0])


def split_batch(batch: dict[str, Any], parts: int) -> list[dict[str, Any]]:
    """Cut a batch into ``parts`` smaller ones, each trimmed to its own longest labels, prompt and description:
    what the loop runs when a whole micro-batch does not fit in memory."""
    import math

    size = batch_size(batch)
    step = max(1, math.ceil(size / parts))
    out = []
    for start in range(0, size, step):
        rows = slice(start, start + step)
        labels = batch["labels"][rows]
        keep = int((labels[..., 0] != IGNORE).sum(dim=1).max())
        prompt_len = int(batch["prompt_attention_mask"][rows].sum(dim=1).max())
        description_len = int(batch["description_mask"][rows].sum(dim=1).max())
        out.append({"labels": labels[:, :keep],
                    "prompt_input_ids": batch["prompt_input_ids"][rows, :prompt_len],
                    "prompt_attention_mask": batch["prompt_attention_mask"][rows, :prompt_len],
                    "description_states": batch["description_states"][rows, :description_len],
                    "description_mask": batch["description_mask"][rows, :description_len]})
    return out


def positions(batch: dict[str, Any]) -> int:
    """Label positions of a batch, padding included: what Parler's training script divides the summed loss by."""
    return int(batch["labels"].shape[0] * batch["labels"].shape[1])


MAX_FRAMES = frames(int(MAX_SECONDS * SAMPLE_RATE))
DELAY = NUM_CODEBOOKS  # positions the delay pattern adds to a clip
