"""What a DataLoader worker gets on Windows, checked on a real :class:`TrainingSetup`: Windows (and macOS) start the
workers (``num_workers`` > 0) by spawning, which pickles the dataset and the collate function to send them over.
A lambda, a closure or a local class fails there ("Can't pickle local object") and nowhere on Linux, where workers
fork. Plain torch and pickle, so the Parler tests run it in the engine's own environment too."""

from __future__ import annotations

import pickle
import time
from typing import Any


def same(a: Any, b: Any) -> bool:
    """Whether two batches (dicts, lists, tuples, dataclasses of tensors and plain values) are equal."""
    import dataclasses

    import torch

    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and same(dataclasses.asdict(a), dataclasses.asdict(b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def first_batch(dataset, collate, size: int = 2):
    return collate([dataset[i] for i in range(min(size, len(dataset)))])


def round_trip(setup) -> None:
    """Pickle ``setup``'s datasets and collate function as spawning does; the copies give the same batches.

    Raises:
        AssertionError, pickle.PicklingError, AttributeError: what does not pickle, or a copy that batches otherwise.
    """
    collate = pickle.loads(pickle.dumps(setup.collate))
    for name in ("train_set", "eval_set"):
        original = getattr(setup, name)
        copy = pickle.loads(pickle.dumps(original))
        assert type(copy) is type(original) and len(copy) == len(original), name
        assert same(first_batch(copy, collate), first_batch(original, setup.collate)), name


def spawned_batch(setup) -> float:
    """One batch of ``setup.train_set`` from a DataLoader whose one worker is spawned, as on Windows; it must equal
    the batch built in this process. Returns the seconds it took (the worker imports torch and the engine)."""
    import torch

    start = time.monotonic()
    loader = torch.utils.data.DataLoader(setup.train_set, batch_size=2, collate_fn=setup.collate, num_workers=1,
                                         multiprocessing_context="spawn")
    batch = next(iter(loader))
    seconds = time.monotonic() - start
    assert same(batch, first_batch(setup.train_set, setup.collate))
    return seconds
