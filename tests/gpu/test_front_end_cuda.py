"""XTTS's frozen front end on a real CUDA GPU (its CUDA-only branches: the card's generator state put back after
the front end is built, the front end's memory handed back by ``release``). CPU twin:
tests/core/training/test_front_end_cache.py runs the same code on the CPU (counts, equal losses, equal weights).

On the card: the codes and conditioning mels are the CPU's (the DVAE's nearest-code choice may flip on a rare
near-tie between devices), the DVAE leaves the card after ``release``, and a training run that reads the cache
learns what a run that computed everything learns (fp32; the card's kernels are not bit-exact, hence the
tolerance)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from tests.core.training.tiny_training import fast_config


def _clips(project):
    from alltalk_gui.core.engines.xtts.data import SAMPLE_RATE
    from alltalk_gui.core.training.data import read_audio

    paths = sorted((project / "dataset" / "wavs").glob("*.wav"))[:4]
    return [SimpleNamespace(audio_path=p, samples=read_audio(p, SAMPLE_RATE).shape[-1]) for p in paths]


def _allocated() -> int:
    """Bytes the caching allocator hands out, less cuBLAS's workspaces. Since torch 2.0 cuBLAS takes a workspace per
    handle and stream from the caching allocator on the first matrix product (32 MiB on Hopper) and keeps it until
    the process ends: it is counted by ``memory_allocated`` but is not the front end's, and training reuses it (the
    H200 run of 2026-11-27 saw exactly 33,554,432 bytes left, in a worker whose first product was the DVAE's).
    ``empty_cache`` never frees it; only torch's private ``_cuda_clearCublasWorkspaces`` does."""
    import torch

    torch.cuda.synchronize()
    torch._C._cuda_clearCublasWorkspaces()
    return torch.cuda.memory_allocated()


def test_the_front_end_runs_on_the_card_and_leaves_it(gpu_project, tiny_gpu):
    import torch

    from alltalk_gui.core.engines.xtts.files import load_xtts_config
    from alltalk_gui.core.engines.xtts.front_end import ClipFeatures

    config = fast_config(gpu_project, tiny_gpu, "front-end")
    xtts_config = load_xtts_config(tiny_gpu)
    clips = _clips(gpu_project)
    on_cpu = ClipFeatures(config, xtts_config, "cpu", root=False).of(clips)
    before = _allocated()
    generator = torch.cuda.get_rng_state()
    front = ClipFeatures(config, xtts_config, "cuda", root=False)
    on_card = front.of(clips)
    assert front.front_end is not None and next(front.front_end.parameters()).is_cuda
    assert torch.equal(torch.cuda.get_rng_state(), generator)  # building the DVAE drew nothing the run will see
    front.release()
    assert _allocated() <= before  # the DVAE and both mels left the card
    for cpu, card in zip(on_cpu, on_card):
        assert cpu["codes"].shape == card["codes"].shape and np.mean(cpu["codes"] == card["codes"]) >= 0.95
        np.testing.assert_allclose(card["style_mel"], cpu["style_mel"], rtol=1e-3, atol=1e-3)


def test_a_run_from_the_cache_on_the_card_learns_what_an_uncached_one_learns(gpu_project, tiny_gpu, monkeypatch):
    from alltalk_gui.core.engines.xtts import front_end
    from alltalk_gui.core.training.events import Eval, Step
    from alltalk_gui.core.training.loop import train

    settings = dict(device="cuda", mixed_precision="no", batch_size=2, grad_accum_steps=2, max_steps=2)
    list(train(fast_config(gpu_project, tiny_gpu, "cache-fill", **settings)))  # every clip cached (or already)
    cached = list(train(fast_config(gpu_project, tiny_gpu, "cache-read", **settings)))
    monkeypatch.setattr(front_end, "cache_root", lambda config: None)
    uncached = list(train(fast_config(gpu_project, tiny_gpu, "cache-none", **settings)))

    def losses(events):
        return [e.loss for e in events if isinstance(e, (Step, Eval))]

    assert len(losses(cached)) >= 3
    assert losses(cached) == pytest.approx(losses(uncached), rel=1e-4, abs=1e-4)
