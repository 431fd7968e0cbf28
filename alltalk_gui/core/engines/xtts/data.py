"""XTTS v2 training data: clips from the dataset's metadata CSVs as batches for the GPT.

* :func:`load_clips` reads ``metadata_train.csv`` / ``metadata_eval.csv`` (through
  :mod:`alltalk_gui.core.dataset.metadata`, the same reader the dataset export's files are checked with), opens every
  audio file and tokenises every transcript *before training starts*. Every problem (missing or unreadable
  file, a clip too long or too short, a transcript with characters the base model's vocabulary lacks, a
  transcript too long) is collected and reported together in one :class:`DatasetError`; nothing is skipped
  silently and no clip is ever swapped for another (coqui's ``XTTSDataset`` replaces a failing clip with clip
  #1).
* :class:`ClipDataset` gives each clip's tokens, its DVAE codes and a conditioning slice drawn the way coqui draws
  it (a random 3 - 6 s slice of the same clip, whose position the loss may mask), cut from the clip's cached
  conditioning mel (:mod:`~alltalk_gui.core.engines.xtts.front_end`); deterministic in (seed, epoch, index), so a
  resumed run sees exactly the same slices.
* :func:`collate` pads them into a batch, :func:`gpt_inputs` turns a batch into the GPT's inputs, and
  :func:`split_batch` cuts one for the out-of-memory retry.
"""

from __future__ import annotations

import math
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import torch
from torch.utils.data import Dataset

from alltalk_gui.core.dataset.metadata import EVAL_CSV, TRAIN_CSV, MetadataError, read_metadata
from alltalk_gui.core.engines.xtts import conditioning_mask
from alltalk_gui.core.training.data import DatasetError, check_dataset_folder, read_audio

SAMPLE_RATE = 22050


@dataclass(frozen=True)
class Clip:
    audio_path: Path
    text: str
    tokens: tuple[int, ...]
    samples: int  # length at 22 050 Hz
    where: str  # "metadata_train.csv line 4 (wavs/a.wav)", for messages


def unknown_characters(tokenizer, text: str, language: str) -> list[str]:
    """Characters of ``text`` (after coqui's text cleaning) that the vocabulary maps to [UNK]."""
    unk = tokenizer.tokenizer.token_to_id("[UNK]")
    cleaned = tokenizer.preprocess_text(text, language.split("-")[0])
    bad = []
    for ch in sorted(set(cleaned) - {" "}):
        if unk in tokenizer.tokenizer.encode(ch).ids:
            bad.append(ch)
    return bad


def load_clips(dataset_dir: str | os.PathLike[str], csv_name: str, tokenizer, language: str, *,
               max_audio_seconds: float, min_audio_seconds: float, max_text_tokens: int) -> list[Clip]:
    """Read and check every clip listed in ``dataset_dir/csv_name``.

    Raises:
        DatasetError: the CSV is missing or malformed, lists no clips, or any clip has a problem (all listed).
    """
    dataset_dir = Path(dataset_dir)
    csv_path = dataset_dir / csv_name
    try:
        rows = read_metadata(csv_path)
    except MetadataError as exc:
        raise DatasetError(f"The dataset in {dataset_dir} cannot be read: {exc}") from exc
    if not rows:
        raise DatasetError(f"{csv_path} lists no clips. Training needs at least one training and one eval clip.")

    import soundfile as sf

    unk = tokenizer.tokenizer.token_to_id("[UNK]")
    stop = tokenizer.tokenizer.token_to_id("[STOP]")
    max_samples = int(max_audio_seconds * SAMPLE_RATE)
    min_samples = int(min_audio_seconds * SAMPLE_RATE)
    clips: list[Clip] = []
    problems: list[str] = []
    for number, row in enumerate(rows, start=2):  # line 1 is the header
        where = f"{csv_name} line {number} ({row.audio_file})"
        path = (dataset_dir / row.audio_file).resolve()
        if not path.is_file():
            problems.append(f"{where}: the audio file does not exist.")
            continue
        try:
            wav = read_audio(path, SAMPLE_RATE)
        except (sf.LibsndfileError, RuntimeError, ValueError, OSError) as exc:
            problems.append(f"{where}: the audio file cannot be read ({str(exc).strip() or type(exc).__name__}).")
            continue
        samples = wav.shape[-1]
        if samples > max_samples:
            problems.append(
                f"{where}: the clip is {samples / SAMPLE_RATE:.1f} s long; the limit is {max_audio_seconds:g} s "
                "(max_audio_seconds). Split it into shorter clips."
            )
            continue
        if samples < min_samples:
            problems.append(f"{where}: the clip is {samples / SAMPLE_RATE:.2f} s long; the minimum is "
                            f"{min_audio_seconds:g} s.")
            continue
        if not torch.isfinite(wav).all():
            problems.append(f"{where}: the audio holds invalid (NaN or infinite) samples.")
            continue
        try:
            tokens = tokenizer.encode(row.text, language)
        except NotImplementedError:
            raise DatasetError(f"The base model's tokenizer does not support the language '{language}'.") from None
        except ImportError as exc:  # zh / ja text cleaning needs packages coqui-tts does not install by default
            raise DatasetError(_missing_language_packages(language, exc)) from None
        if unk in tokens or stop in tokens:
            bad = unknown_characters(tokenizer, row.text, language)
            shown = ", ".join(f"'{c}'" for c in bad) if bad else "some characters"
            problems.append(f"{where}: the text has characters the base model's vocabulary does not know: {shown}. "
                            "Edit the transcript (spell them out or remove them).")
            continue
        if len(tokens) > max_text_tokens:
            problems.append(f"{where}: the text is {len(tokens)} tokens long; the limit is {max_text_tokens} "
                            "(max_text_tokens). Split the clip.")
            continue
        clips.append(Clip(path, row.text, tuple(tokens), samples, where))
    if problems:
        raise DatasetError(f"{len(problems)} clip(s) in {csv_path} cannot be used; nothing was changed:", problems)
    return clips


def _missing_language_packages(language: str, exc: ImportError) -> str:
    from alltalk_gui.core.engine_api.languages import UnknownLanguage, missing_sentence

    try:
        return missing_sentence(language) or f"Cannot prepare {language} text for XTTS: {exc}."
    except UnknownLanguage:
        return f"Cannot prepare {language} text for XTTS: {exc}."


def load_dataset(dataset_dir: str | os.PathLike[str], tokenizer, language: str, **limits: Any
                 ) -> tuple[list[Clip], list[Clip]]:
    """Training and eval clips of a dataset folder, both fully checked (see :func:`load_clips`).

    Raises:
        DatasetError: a problem in either file, or no eval clip.
    """
    dataset_dir = check_dataset_folder(dataset_dir)
    train = load_clips(dataset_dir, TRAIN_CSV, tokenizer, language, **limits)
    evals = load_clips(dataset_dir, EVAL_CSV, tokenizer, language, **limits)
    return train, evals


PROMPT_MASK_SAMPLES = 256  # coqui's perceiver_cond_length_compression, which its loss mask divides by


class ClipDataset(Dataset):
    """One item per clip: text tokens, the clip's DVAE codes and a conditioning mel slice, as coqui's GPT trainer
    uses them.

    ``features[i]`` is clip ``i``'s frozen front end (:mod:`~alltalk_gui.core.engines.xtts.front_end`: ``codes``
    and the whole clip's ``style_mel``, hop ``hop``); the voice prompt is a slice of that mel, padded to the longest
    slice with ``silence`` (the mel of silence, one column).
    """

    def __init__(self, clips: list[Clip], features: Sequence[dict[str, Any]], *, seed: int, is_eval: bool,
                 min_cond_samples: int, max_cond_samples: int, hop: int, silence: Any, masking: bool = True) -> None:
        if len(features) != len(clips):
            raise ValueError(f"{len(clips)} clips but {len(features)} front-end entries")
        self.clips = clips
        self.features = features
        self.seed = seed
        self.is_eval = is_eval
        self.min_cond = min_cond_samples
        self.max_cond = max_cond_samples
        self.hop = hop
        self.silence = torch.as_tensor(silence, dtype=torch.float32).reshape(-1, 1)
        self.masking = masking  # XTTS v2: condition on a slice of the target clip and mask it from the loss
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.clips)

    def __getitem__(self, index: int) -> dict[str, Any]:
        clip, features = self.clips[index], self.features[index]
        cond, cond_idxs = self._conditioning(torch.from_numpy(features["style_mel"]), clip.samples, index)
        return {
            "text": torch.tensor(clip.tokens, dtype=torch.int32),
            "codes": torch.from_numpy(features["codes"]).long(),
            "samples": clip.samples,
            "conditioning": cond,
            "max_cond_samples": self.max_cond,
            "cond_idxs": cond_idxs,
            # Whether the loss leaves this clip's conditioning span out: a draw per (seed, epoch, clip), so the
            # same clips are masked however they are batched (see engines/xtts/conditioning_mask.py).
            "mask_conditioning": self.masking and not self.is_eval and conditioning_mask.chosen(
                self.seed, self.epoch, index),
            "filename": str(clip.audio_path),
        }

    def _conditioning(self, mel: torch.Tensor, total: int, index: int) -> tuple[torch.Tensor, list[int]]:
        """A slice of the clip's conditioning mel, drawn as coqui's ``get_prompt_slice`` draws its samples: random
        length in [min, max] samples (the middle length for eval), at a random start (0 for eval); half the clip
        when the clip is shorter. Seeded by (seed, epoch, index) so resumes and workers agree. The start moves back
        to a whole mel frame; the slice is padded to ``max`` samples' frames with the mel of silence, where coqui's
        zero-padded slice has it. Returns the slice (80 x frames) and its span in samples."""
        rng = random.Random(f"{self.seed}/{self.epoch}/{index}")
        length = (self.min_cond + self.max_cond) // 2 if self.is_eval else rng.randint(self.min_cond, self.max_cond)
        if total - length < 0:
            length = total // 2
        # Starts in the first 256 samples (12 ms) are not drawn: under coqui's own mask (sample/256 positions on
        # the 1024-sample code axis) they masked a clip's whole row. Our mask never does (conditioning_mask.py),
        # but the draws stay as they were, so seeds give the same slices as before.
        first = min(PROMPT_MASK_SAMPLES, total - length)
        start = 0 if self.is_eval else rng.randint(first, total - length)
        frame = start // self.hop
        piece = mel[:, frame:frame + length // self.hop + 1]
        width = self.max_cond // self.hop + 1
        piece = torch.cat([piece, self.silence.expand(-1, width - piece.shape[1])], dim=1)
        start = frame * self.hop
        return piece, [start, start + length]


def collate(items: list[dict[str, Any]], masking: bool = True) -> dict[str, Any]:
    """Pad a list of items into a batch.

    Tensors (moved to the device with the batch): ``padded_text`` (B, T) int32, ``audio_codes`` (B, N) long (0 after
    a clip's codes: the GPT puts its stop token there), ``cond_mels`` (B, 1, 80, F). On the host, as plain lists
    (accelerate moves tensors only): ``text_lengths``, ``wav_lengths`` (samples), ``cond_idxs`` ([start, end) in
    samples, or None), ``cond_lens`` (None, or coqui's padded prompt length when not masking), ``cond_mask`` (the
    clips whose conditioning span the loss leaves out), ``filenames``. The GPT's length arithmetic and the loss mask
    run on them without waiting for the device (:func:`gpt_inputs`).
    """
    b = len(items)
    text_lengths = [len(it["text"]) for it in items]
    code_lengths = [len(it["codes"]) for it in items]
    padded_text = torch.zeros(b, max(text_lengths), dtype=torch.int32)
    codes = torch.zeros(b, max(code_lengths), dtype=torch.long)
    for i, it in enumerate(items):
        padded_text[i, : text_lengths[i]] = it["text"]
        codes[i, : code_lengths[i]] = it["codes"]
    cond_mels = torch.stack([it["conditioning"] for it in items]).unsqueeze(1)
    return {
        "padded_text": padded_text, "audio_codes": codes, "cond_mels": cond_mels,
        "text_lengths": text_lengths, "wav_lengths": [it["samples"] for it in items],
        # coqui reports the padded length as cond_lens when not masking (its quirk, kept so the objective is the same).
        "cond_idxs": [list(it["cond_idxs"]) for it in items] if masking else None,
        "cond_lens": None if masking else [it.get("max_cond_samples", cond_mels.shape[-1]) for it in items],
        "cond_mask": [bool(it.get("mask_conditioning", False)) for it in items],
        "filenames": [it["filename"] for it in items],
    }


def gpt_inputs(batch: dict[str, Any]) -> dict[str, Any]:
    """What :func:`~alltalk_gui.core.engines.xtts.model.gpt_loss` takes, from a batch: its device tensors, and its
    host lists as CPU tensors (lengths and slices on the CPU: coqui's GPT slices and loops over them per clip, which
    on the device would wait for it once a clip)."""

    def host(values, dtype):
        return None if values is None else torch.tensor(values, dtype=dtype)

    return {
        "text_inputs": batch["padded_text"], "audio_codes": batch["audio_codes"], "cond_mels": batch["cond_mels"],
        "text_lengths": host(batch["text_lengths"], torch.long), "wav_lengths": host(batch["wav_lengths"], torch.long),
        "cond_idxs": host(batch["cond_idxs"], torch.long), "cond_lens": host(batch["cond_lens"], torch.long),
        "cond_mask": host(batch["cond_mask"], torch.bool),
    }


def split_batch(batch: dict[str, Any], parts: int) -> list[dict[str, Any]]:
    """Cut a collated batch into ``parts`` smaller batches (the last may be smaller), each trimmed to its own
    longest text (the GPT reads each clip's codes up to its own length): what the training loop runs when a whole micro-batch does not fit in memory."""
    size = len(batch["filenames"])
    step = max(1, math.ceil(size / parts))
    out = []
    for start in range(0, size, step):
        rows = slice(start, start + step)
        text_len = max(batch["text_lengths"][rows])

        def part(values):
            return None if values is None else values[rows]

        out.append({
            "padded_text": batch["padded_text"][rows, :text_len], "audio_codes": batch["audio_codes"][rows],
            "cond_mels": batch["cond_mels"][rows], "text_lengths": part(batch["text_lengths"]),
            "wav_lengths": part(batch["wav_lengths"]), "cond_idxs": part(batch["cond_idxs"]),
            "cond_lens": part(batch["cond_lens"]), "cond_mask": part(batch["cond_mask"]),
            "filenames": batch["filenames"][rows],
        })
    return out
