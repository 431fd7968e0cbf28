"""Training data that is the same for every engine: dataset errors, audio reading and length-bucketed batches.

* :class:`DatasetError` lists every clip-level problem found at once; an engine's clip loader
  (``core/engines/<name>/data.py``) raises it, so a user fixes all of them in one go.
* :func:`check_dataset_folder` checks that a dataset folder with both metadata CSVs exists, before an engine
  reads its clips; :func:`checked_clips` reads both CSVs and checks every row with the engine's own clip check.
* :func:`read_audio` decodes with soundfile (coqui's ``load_audio`` needs a system FFmpeg and, without it, its
  dataset recurses forever) and resamples to the engine's rate with torchaudio's band-limited resampler.
* :class:`BucketBatchSampler` visits every clip exactly once per epoch, grouping clips of similar length into
  batches so less compute goes to padding.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Callable, Iterator

import torch
from torch.utils.data import Sampler

from alltalk_gui.core.dataset.metadata import EVAL_CSV, TRAIN_CSV


class DatasetError(ValueError):
    """The dataset cannot be trained on. ``problems`` lists every clip-level problem found."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        self.problems = problems or []
        full = message if not self.problems else message + "\n" + "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(full)


def read_audio(path: str | os.PathLike[str], sample_rate: int) -> torch.Tensor:
    """Decode an audio file to a mono float tensor of shape ``(1, samples)`` at ``sample_rate`` (the engine's: each
    engine's clip loader names its own), clipped to [-1, 1].

    soundfile reads WAV/FLAC/OGG without FFmpeg. Stereo is averaged; other rates are resampled with torchaudio's
    band-limited resampler (pure torch, no FFmpeg either).
    """
    import soundfile as sf

    data, rate = sf.read(str(path), dtype="float32", always_2d=True)
    wav = torch.from_numpy(data.T.copy()).mean(dim=0, keepdim=True)
    if rate != sample_rate:
        import torchaudio

        wav = torchaudio.functional.resample(wav, rate, sample_rate)
    return wav.clamp_(-1.0, 1.0)


def check_dataset_folder(dataset_dir: str | os.PathLike[str]) -> Path:
    """The dataset folder, once it is known to exist and to hold an eval CSV.

    Raises:
        DatasetError: no folder, or no eval clips file.
    """
    dataset_dir = Path(dataset_dir)
    if not dataset_dir.is_dir():
        raise DatasetError(f"There is no dataset folder at {dataset_dir}. Export the dataset first (Export dataset "
                           "on the Transcribe & Edit page, or alltalk-gui dataset PROJECT).")
    if not (dataset_dir / EVAL_CSV).is_file():
        raise DatasetError(f"{dataset_dir} has no {EVAL_CSV}. Training needs at least one eval clip to measure "
                           "progress; export the dataset with an eval share, or add one line to that file.")
    return dataset_dir


# An engine's check of one metadata row: (dataset folder, row, "file line N (audio)") -> (a problem in plain
# words, None) or (None, the engine's clip).
ClipCheck = Callable[[Path, Any, str], "tuple[str | None, Any]"]


def checked_clips(dataset_dir: str | os.PathLike[str], engine_title: str,
                  check: ClipCheck) -> tuple[list[Any], list[Any]]:
    """The training and eval clips of a dataset folder (the app's dataset export), each row checked by the engine's
    ``check``; every problem is collected and raised together, so a user fixes all of them in one go.

    Raises:
        DatasetError: no folder or CSV, an unreadable or empty CSV, or any clip ``check`` refuses (all listed).
    """
    from alltalk_gui.core.dataset.metadata import MetadataError, read_metadata

    dataset_dir = check_dataset_folder(dataset_dir)
    problems: list[str] = []
    loaded: dict[str, list[Any]] = {}
    for csv_name in (TRAIN_CSV, EVAL_CSV):
        try:
            rows = read_metadata(dataset_dir / csv_name)
        except MetadataError as exc:
            raise DatasetError(f"The dataset in {dataset_dir} cannot be read: {exc}") from exc
        if not rows:
            raise DatasetError(f"{dataset_dir / csv_name} lists no clips. Training needs at least one training and "
                               "one eval clip.")
        loaded[csv_name] = clips = []
        for number, row in enumerate(rows, start=2):  # line 1 is the header
            problem, clip = check(dataset_dir, row, f"{csv_name} line {number} ({row.audio_file})")
            if problem:
                problems.append(problem)
            else:
                clips.append(clip)
    if problems:
        raise DatasetError(f"{len(problems)} clip(s) in {dataset_dir} cannot be used by {engine_title}; nothing was "
                           "changed:", problems)
    return loaded[TRAIN_CSV], loaded[EVAL_CSV]


class BucketBatchSampler(Sampler[list[int]]):
    """Length-bucketed batches: every clip exactly once per epoch, order fixed by (seed, epoch).

    Training: shuffle all clips, cut the order into groups of ``batch_size * bucket_batches`` clips, sort each
    group by length, cut it into batches, and shuffle the batches. Eval: sorted by length, no shuffling.
    """

    def __init__(self, lengths: list[int], batch_size: int, *, seed: int, shuffle: bool = True,
                 bucket_batches: int = 8) -> None:
        self.lengths = lengths
        self.batch_size = batch_size
        self.drop_last = False
        self.seed = seed
        self.shuffle = shuffle
        self.bucket_batches = bucket_batches
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return math.ceil(len(self.lengths) / self.batch_size)

    def __iter__(self) -> Iterator[list[int]]:
        n = len(self.lengths)
        if not self.shuffle:
            order = sorted(range(n), key=lambda i: self.lengths[i])
            yield from (order[i:i + self.batch_size] for i in range(0, n, self.batch_size))
            return
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        order = torch.randperm(n, generator=g).tolist()
        group = self.batch_size * self.bucket_batches
        batches: list[list[int]] = []
        for start in range(0, n, group):
            chunk = sorted(order[start:start + group], key=lambda i: self.lengths[i])
            batches.extend(chunk[i:i + self.batch_size] for i in range(0, len(chunk), self.batch_size))
        for i in torch.randperm(len(batches), generator=g).tolist():
            yield batches[i]
