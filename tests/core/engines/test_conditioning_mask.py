"""The conditioning mask: every clip has the same chance of its conditioning span being left out of the mel loss,
however the clips are batched, and the stop-token targets are never left out."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from alltalk_gui.core.engines.xtts import conditioning_mask
from alltalk_gui.core.engines.xtts.conditioning_mask import MASK_RATE, mask_targets, mel_loss, mel_targets
from alltalk_gui.core.engines.xtts.model import load_gpt
from alltalk_gui.core.engines.xtts.data import Clip, ClipDataset, collate, split_batch
from alltalk_gui.core.training.data import BucketBatchSampler

CLIPS = [Clip(Path(f"c{i}.wav"), "hi", (1, 2), samples=22050 * (2 + i % 5), where=f"c{i}") for i in range(12)]
EPOCHS = 300


def _dataset(clips: list[Clip], *, is_eval: bool) -> ClipDataset:
    """CLIPS with stand-in front-end features of the right shapes (the mask does not look at them)."""
    import numpy as np

    features = [{"codes": np.zeros(c.samples // 1024 + 1, np.int16),
                 "style_mel": np.zeros((80, c.samples // 256 + 1), np.float32)} for c in clips]
    return ClipDataset(clips, features, seed=7, is_eval=is_eval, min_cond_samples=22050, max_cond_samples=44100,
                       hop=256, silence=np.zeros(80, np.float32))


def _masked_per_epoch(monkeypatch, micro_batch: int, oom_split: int = 1) -> set[tuple[int, str]]:
    """(epoch, clip) pairs whose span the loss masks, training CLIPS in micro-batches of ``micro_batch`` (cut into
    ``oom_split`` chunks, as after an out-of-memory error)."""
    dataset = _dataset(CLIPS, is_eval=False)
    sampler = BucketBatchSampler([c.samples for c in CLIPS], micro_batch, seed=7, bucket_batches=2)
    masked = set()
    for epoch in range(EPOCHS):
        dataset.set_epoch(epoch)
        sampler.set_epoch(epoch)
        for indices in sampler:
            batch = collate([dataset[i] for i in indices])
            for chunk in split_batch(batch, oom_split) if oom_split > 1 else [batch]:
                masked |= {(epoch, name) for name, m in zip(chunk["filenames"], chunk["cond_mask"]) if m}
    return masked


def test_every_clip_is_masked_at_the_stated_rate_whatever_the_micro_batch(monkeypatch):
    """Micro-batch 1, 2 and 4 (and 4 split in two after an out-of-memory error) mask exactly the same clips in
    every epoch, and each clip about MASK_RATE of the time (300 epochs: 1/4 within 0.08, 3.5 standard deviations)."""
    runs = {size: _masked_per_epoch(monkeypatch, size) for size in (1, 2, 4)}
    runs["4, split"] = _masked_per_epoch(monkeypatch, 4, oom_split=2)
    first = runs[1]
    assert all(masked == first for masked in runs.values())
    per_clip = Counter(name for _, name in first)
    assert set(per_clip) == {str(c.audio_path) for c in CLIPS}
    for name, count in per_clip.items():
        assert count / EPOCHS == pytest.approx(MASK_RATE, abs=0.08), name
    assert len(first) / (EPOCHS * len(CLIPS)) == pytest.approx(MASK_RATE, abs=0.02)


def test_eval_clips_are_never_masked():
    dataset = _dataset(CLIPS, is_eval=True)
    assert not any(dataset[i]["mask_conditioning"] for i in range(len(CLIPS)))


@pytest.fixture(scope="module")
def gpt(tiny):
    return load_gpt(tiny)[0].eval()


def _codes(gpt, seconds: list[float]) -> tuple[torch.Tensor, torch.Tensor]:
    wav_lengths = torch.tensor([int(s * 22050) for s in seconds])
    codes = torch.randint(0, gpt.stop_audio_token, (len(seconds), int(wav_lengths.max()) // gpt.code_stride_len + 1))
    return codes, wav_lengths


def test_the_span_covers_the_conditioning_codes_and_never_the_stop_token(gpt):
    codes, wav_lengths = _codes(gpt, [4.0, 2.0])
    targets, real = mel_targets(gpt, codes, wav_lengths)
    assert real.tolist() == [87, 44]  # ceil(samples / 1024)
    stop = gpt.stop_audio_token
    for row, n in enumerate(real.tolist()):
        assert (targets[row, n:n + 4] == stop).all() and (targets[row, n + 4:] == -1).all()
    # Clip 0: a 1-2 s slice -> codes 21..44; clip 1: a slice over the whole clip and beyond.
    cond_idxs = torch.tensor([[22050, 44100], [0, 10 * 22050]])
    masked = mask_targets(targets, real, cond_idxs, torch.tensor([True, True]), gpt.code_stride_len)
    assert (masked[0, 21:44] == -1).all() and (masked[0, :21] == targets[0, :21]).all()
    assert torch.equal(masked[0, 44:], targets[0, 44:])
    assert (masked[1, :44] == -1).all()
    for row, n in enumerate(real.tolist()):  # every stop-token target survives
        assert torch.equal(masked[row, n:], targets[row, n:])
        assert (masked[row] == stop).sum() == 4
    # Clips not chosen keep all their targets.
    untouched = mask_targets(targets, real, cond_idxs, torch.tensor([False, True]), gpt.code_stride_len)
    assert torch.equal(untouched[0], targets[0])


def test_the_loss_leaves_out_exactly_the_masked_span_and_stays_finite(gpt):
    codes, wav_lengths = _codes(gpt, [3.0, 1.0])
    logits = torch.randn(2, gpt.num_audio_tokens, int(torch.ceil(wav_lengths / 1024).max()) + 5)
    cond_idxs = torch.tensor([[0, 66150], [0, 22050]])  # each slice covers its whole clip
    loss = mel_loss(gpt, logits, codes, wav_lengths, cond_idxs, torch.tensor([True, True]))
    targets, real = mel_targets(gpt, codes, wav_lengths)
    for row, n in enumerate(real.tolist()):
        targets[row, :n] = -1  # everything but the stop tokens
    assert torch.isfinite(loss)
    assert loss.item() == pytest.approx(F.cross_entropy(logits, targets, ignore_index=-1).item(), rel=1e-6)


def test_the_draw_depends_only_on_seed_epoch_and_clip():
    assert conditioning_mask.chosen(1, 2, 3) == conditioning_mask.chosen(1, 2, 3)
    draws = [conditioning_mask.chosen(1, epoch, clip) for epoch in range(40) for clip in range(50)]
    assert sum(draws) / len(draws) == pytest.approx(MASK_RATE, abs=0.03)
