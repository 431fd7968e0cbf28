"""Parler-TTS through the app's own training loop, as the app runs it (the launcher's child in the engine's
environment), on the tiny model and espeak-ng speech on the CPU: the eval loss falls, the description is measured
and kept with the run, the DAC codes are encoded once and read from the cache after, LoRA trains only the
adapters, a resume equals a straight run, and two processes train in step over gloo."""

from __future__ import annotations

import pytest
import torch

from tests.core.engines.parler.training_runs import base_state, checkpoint_state, of, parler_config, train


def test_a_full_fine_tune_lowers_the_eval_loss_and_keeps_its_description(jenny, full_run):
    events = full_run
    assert events[-1]["reason"] == "finished", events[-3:]
    evals = [e["loss"] for e in of(events, "eval")]
    assert len(of(events, "step")) == 6 and len(evals) == 4
    assert evals[-1] < 0.97 * evals[0], evals
    started = of(events, "started")[0]
    assert started["trainable_parameters"] > 0 and started["config"]["engine"] == "parler"
    logs = " ".join(e["message"] for e in of(events, "log"))
    assert "measured from the dataset: Jenny speaks" in logs
    description = (jenny / "runs" / "full" / "description.txt").read_text(encoding="utf-8")
    assert description.startswith("Jenny speaks") and "The recording is" in description
    assert "5 clip(s) encoded, 0 read from the cache" in logs or "0 clip(s) encoded, 5 read" in logs


def test_codes_come_from_the_cache_and_lora_trains_only_the_adapters(jenny, tiny_parler, full_run):
    # The session's full run filled the cache.
    cache = list((jenny / "feature_cache").glob("parler-dac44k-*/*.npz"))
    assert len(cache) == 5  # one file per clip
    stamps = {p: p.stat().st_mtime_ns for p in cache}
    events = train(parler_config(jenny, tiny_parler, "lora", lora_rank=4, lora_alpha=8.0, epochs=2, lr=1e-2))
    logs = " ".join(e["message"] for e in of(events, "log"))
    assert "0 clip(s) encoded, 5 read from the cache" in logs  # the codec encoded nothing this time
    assert {p: p.stat().st_mtime_ns for p in cache} == stamps
    assert events[-1]["reason"] == "finished"
    saved, base = checkpoint_state(jenny / "runs" / "lora"), base_state(tiny_parler)
    adapters = [k for k in saved if "lora_" in k]
    assert adapters and any(saved[k].abs().sum() > 0 for k in adapters if "lora_B" in k)  # B starts at zero
    assert of(events, "started")[0]["trainable_parameters"] == sum(saved[k].numel() for k in adapters)
    for key, value in saved.items():
        if "lora_" not in key:
            assert torch.equal(value, base[key.replace(".base_layer.", ".")]), key  # every base weight as it was
    assert not any(k.startswith(("text_encoder.", "audio_encoder.")) for k in saved)  # T5 and DAC are not trained


def test_a_resume_equals_a_straight_run(jenny, tiny_parler):
    kw = dict(batch_size=1, epochs=3, lr_schedule="cosine", warmup_steps=1)
    straight = train(parler_config(jenny, tiny_parler, "straight", max_steps=4, **kw))
    assert straight[-1]["reason"] == "max_steps" and straight[-1]["step"] == 4
    first = train(parler_config(jenny, tiny_parler, "split", max_steps=2, **kw))
    assert first[-1]["step"] == 2
    second = train(parler_config(jenny, tiny_parler, "split", max_steps=4, **kw), resume=True)
    assert of(second, "started")[0]["start_step"] == 2 and [e["step"] for e in of(second, "step")] == [3, 4]
    a, b = checkpoint_state(jenny / "runs" / "straight"), checkpoint_state(jenny / "runs" / "split")
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=1e-6, msg=name)
    assert [e["loss"] for e in of(straight, "step")] == pytest.approx(
        [e["loss"] for e in of(first + second, "step")], rel=1e-6)
    assert any(not torch.equal(a[n], base_state(tiny_parler)[n]) for n in a)  # the weights really moved


def test_two_processes_train_lora_in_step_over_gloo(jenny, tiny_parler):
    """DDP through ``accelerate launch`` on 2 CPU processes over gloo, with LoRA adapters (what the GPU kit's
    DDP-in-one-process test runs over NCCL: this is its CPU twin, with a real second process)."""
    events = train(parler_config(jenny, tiny_parler, "ddp", batch_size=1, max_steps=2, lora_rank=4), processes=2)
    assert events[-1]["reason"] == "max_steps", events[-3:]
    started = of(events, "started")
    assert len(started) == 1 and started[0]["processes"] == 2 and started[0]["steps_per_epoch"] == 2
    assert len(of(events, "done")) == 1 and len(of(events, "step")) == 2  # only the main process reports
    saved = checkpoint_state(jenny / "runs" / "ddp")
    assert any(saved[k].abs().sum() > 0 for k in saved if "lora_B" in k)  # the adapters learnt (B starts at zero)


def test_the_datasets_and_collate_reach_spawned_loader_workers(jenny, tiny_parler, engine_side):
    """Windows starts DataLoader workers (num_workers > 0) by spawning, which pickles the dataset and the collate
    function: the ones training_setup builds pickle, batch as before, and one spawned worker loads the same batch."""
    result = engine_side.call("loader_workers", project=str(jenny), base=str(tiny_parler), run="workers", spawn=True)
    assert 0 < result["spawn_seconds"] < 60, result
