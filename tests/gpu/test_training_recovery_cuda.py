"""Training on a real CUDA GPU, when things go other than planned: fp16 with loss scaling (cards without bf16), a
real out-of-memory error and its recovery, and a resume equal to a straight run. The profiles themselves are in
test_training_cuda.py."""

from __future__ import annotations

import math

import pytest

from tests.gpu.kit import QUICK, assert_trained, of_type, train_cli


def test_fp16_with_loss_scaling_as_on_a_card_without_bf16(gpu_project, tiny_gpu):
    """Pre-Ampere cards (GTX 10xx, RTX 20xx) train in fp16 with a GradScaler: forced here on any card."""
    events = train_cli(gpu_project, tiny_gpu, "fp16", "--profile", "high",
                       settings=QUICK + ("mixed_precision=fp16",))
    assert_trained(events, steps=3)
    assert of_type(events, "started")[0]["config"]["mixed_precision"] == "fp16"


def _train_here(project, base, run: str, **settings) -> list:
    """The training loop in this process (so the test can cap this process's GPU memory), with the High
    profile adapted to this card exactly as the command line does it."""
    from alltalk_gui.core.machine.gpu import list_devices
    from alltalk_gui.core.training.config import TrainConfig
    from alltalk_gui.core.training.loop import train
    from alltalk_gui.core.training.profiles import apply_profile

    gpu = next(d for d in list_devices() if d.kind == "cuda")
    config = apply_profile(TrainConfig(project_dir=str(project), base_model_dir=str(base), run_name=run,
                                       device="cuda", language="en"), "high", gpu)
    quick = dict(max_steps=2, memory_interval_s=0.0, min_conditioning_seconds=2.0, max_conditioning_seconds=3.0,
                 lr=1e-4, eval_each_epoch=False)
    return list(train(config.with_values({**quick, **settings})))


def _peak_reserved_gib(events: list) -> float:
    from alltalk_gui.core.training.events import Memory

    return max(e.stats["cuda_peak_reserved"] for e in events if isinstance(e, Memory))


def test_a_real_out_of_memory_error_is_recovered_with_the_same_effective_batch(gpu_project, tiny_gpu):
    """Measure the peak with 1 and with 8 clips per micro-batch, then cap this process between the two: 8 clips
    cannot fit, so CUDA raises a real out-of-memory error, and the run must go on in smaller micro-batches with
    the effective batch of 8 kept."""
    import torch

    from alltalk_gui.core.training.events import Done, MicroBatch, Step

    peaks = {}
    for clips in (1, 8):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        events = _train_here(gpu_project, tiny_gpu, f"oom_measure_{clips}", batch_size=clips,
                             grad_accum_steps=8 // clips)
        assert isinstance(events[-1], Done) and events[-1].reason == "max_steps", events[-3:]
        peaks[clips] = _peak_reserved_gib(events)
    assert peaks[8] > peaks[1] * 1.05, f"8 clips ({peaks[8]:.3f} GiB) should need more than 1 ({peaks[1]:.3f})"
    total_gib = torch.cuda.get_device_properties(0).total_memory / 1024**3
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.set_per_process_memory_fraction((peaks[1] + peaks[8]) / 2 / total_gib, 0)
    try:
        events = _train_here(gpu_project, tiny_gpu, "oom_recover", batch_size=8, grad_accum_steps=1)
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0, 0)
        torch.cuda.empty_cache()
    assert isinstance(events[-1], Done) and events[-1].reason == "max_steps", events[-3:]
    assert [e.step for e in events if isinstance(e, Step)] == [1, 2]
    changes = [e for e in events if isinstance(e, MicroBatch) and e.cause == "out_of_memory"]
    assert changes, f"no out-of-memory recovery under a cap of {(peaks[1] + peaks[8]) / 2:.3f} GiB ({peaks})"
    assert all(e.effective_batch == 8 and e.micro_batch * e.grad_accum == 8 for e in changes), changes
    assert changes[-1].micro_batch < 8


def test_resume_on_cuda_equals_a_straight_run(gpu_project, tiny_gpu):
    settings = ("memory_interval_s=0", "min_conditioning_seconds=1", "max_conditioning_seconds=2", "lr=1e-4",
                "eval_each_epoch=false", "batch_size=1", "grad_accum_steps=1", "epochs=3")
    straight = train_cli(gpu_project, tiny_gpu, "straight", "--profile", "high", settings=settings + ("max_steps=4",))
    train_cli(gpu_project, tiny_gpu, "split", "--profile", "high", settings=settings + ("max_steps=2",))
    resumed = train_cli(gpu_project, tiny_gpu, "split", "--profile", "high", "--resume",
                        settings=settings + ("max_steps=4",))
    assert of_type(resumed, "started")[-1]["start_step"] == 2
    a = [e["loss"] for e in of_type(straight, "step")]
    b = [e["loss"] for e in of_type(resumed, "step")]
    assert [e["step"] for e in of_type(resumed, "step")][-2:] == [3, 4]
    # bf16 autocast and CUDA's non-deterministic reductions: equal to a few parts in a thousand, not bit for bit.
    assert b[-2:] == pytest.approx(a[-2:], rel=5e-3), (a, b)
    assert all(math.isfinite(x) for x in a + b)


def test_a_micro_step_of_the_loop_never_waits_for_the_card(gpu_project, tiny_gpu):
    """The loop's own code (core/training) syncs the host with the card once per optimizer step at most (the
    gradient norm's check, the step's report), never per micro-batch: with 8 micro-batches a step it must sync no
    more than with 2. A blocking copy to the card (a batch, a tensor made from a Python number) waits for every
    micro-step queued before it, so the host could not run ahead of the card. torch's sync debug mode warns at
    each synchronising call, from the Python line that made it."""
    import warnings

    import torch

    def loop_syncs(accumulation: int) -> int:
        torch.cuda.set_sync_debug_mode("warn")
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                _train_here(gpu_project, tiny_gpu, f"syncs_{accumulation}", batch_size=1,
                            grad_accum_steps=accumulation, memory_interval_s=3600.0)
        finally:
            torch.cuda.set_sync_debug_mode(0)
        return sum("core/training" in str(w.filename).replace("\\", "/") for w in caught
                   if "synchroniz" in str(w.message))

    assert loop_syncs(8) <= loop_syncs(2), "a micro-step of the loop waits for the card"
