"""Out-of-memory recovery, auto sizing and the skipping of non-finite updates on the tiny model. This machine has no GPU, so the GPU's
out-of-memory error is injected: ``gpt_loss`` raises ``torch.OutOfMemoryError`` (with CUDA's own message) for
micro-batches above a size, from a chosen call on, exactly where a real one would come from the forward pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.engines.xtts import model as xtts_model
from alltalk_gui.core.training.events import Checkpoint, Done, Error, Log, MicroBatch, Started, Step
from alltalk_gui.core.training.loop import MEMORY_FILE, latest_checkpoint, train
from alltalk_gui.core.engines.xtts.data import ClipDataset, collate, split_batch
from alltalk_gui.testing.speech import make_speech_dataset
from tests.core.training.tiny_training import fast_config


@pytest.fixture(scope="module")
def setup(tmp_path_factory, tiny) -> tuple[Path, Path]:
    project = tmp_path_factory.mktemp("project")
    make_speech_dataset(project / "dataset", n_train=8, n_eval=1)
    return project, tiny


def _config(project: Path, tiny: Path, run: str, **kw) -> TrainConfig:
    return fast_config(project, tiny, run, **{"batch_size": 4, "grad_accum_steps": 2, "epochs": 5, "max_steps": 3,
                                               "eval_each_epoch": False, **kw})


class InjectedOutOfMemory:
    """Wraps ``gpt_loss``: from call ``from_call`` on (1-based), micro-batches of more than ``max_clips`` clips
    raise the error CUDA raises. Records the clips of every pass that went through."""

    def __init__(self, monkeypatch, *, max_clips: int, from_call: int = 1) -> None:
        self.real, self.max_clips, self.from_call = xtts_model.gpt_loss, max_clips, from_call
        self.calls, self.passed = 0, []
        monkeypatch.setattr(xtts_model, "gpt_loss", self)

    def __call__(self, gpt, inputs, weights, **kw):
        self.calls += 1
        clips = inputs["text_inputs"].shape[0]
        if self.calls >= self.from_call and clips > self.max_clips:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (injected by the test)")
        self.passed.append(clips)
        return self.real(gpt, inputs, weights, **kw)


def test_split_batch_keeps_every_clip_and_trims_the_padding():
    items = [{"text": torch.arange(1, n + 1), "codes": torch.arange(n * 2), "samples": 2048 * n,
              "conditioning": torch.zeros(80, 50), "cond_idxs": [0, 10 * n], "mask_conditioning": n == 7,
              "filename": f"c{n}.wav"} for n in (3, 7, 2, 5, 4)]
    batch = collate(items)
    parts = split_batch(batch, 2)
    assert [p["filenames"] for p in parts] == [["c3.wav", "c7.wav", "c2.wav"], ["c5.wav", "c4.wav"]]
    assert parts[1]["padded_text"].shape == (2, 5) and parts[1]["audio_codes"].shape[0] == 2
    assert torch.equal(parts[0]["audio_codes"], batch["audio_codes"][:3])
    assert torch.equal(parts[1]["cond_mels"], batch["cond_mels"][3:])
    for key in ("cond_idxs", "cond_mask", "text_lengths", "wav_lengths"):
        assert [x for p in parts for x in p[key]] == batch[key], key
    assert [len(p["filenames"]) for p in split_batch(batch, 8)] == [1] * 5


def test_out_of_memory_halves_the_micro_batch_and_keeps_the_effective_batch(setup, monkeypatch):
    """The error comes at the second micro-batch of step 2, after the first has already been backpropagated:
    both are done again in smaller pieces; every later step runs in micro-batches of one clip."""
    project, tiny = setup
    oom = InjectedOutOfMemory(monkeypatch, max_clips=1, from_call=4)
    events = list(train(_config(project, tiny, "recover")))
    assert isinstance(events[-1], Done) and events[-1].reason == "max_steps", events[-3:]
    changes = [e for e in events if isinstance(e, MicroBatch)]
    assert [(e.cause, e.step, e.micro_batch, e.grad_accum, e.effective_batch) for e in changes] == [
        ("out_of_memory", 2, 2, 4, 8), ("out_of_memory", 2, 1, 8, 8)]
    assert "effective batch is unchanged" in changes[0].message
    assert [e.step for e in events if isinstance(e, Step)] == [1, 2, 3]
    # Step 1: two micro-batches of 4. Step 2: the first micro-batch went through (4) before the error, then
    # the whole step again in single clips (8). Step 3: single clips (8).
    assert oom.passed == [4, 4, 4] + [1] * 8 + [1] * 8
    assert all(torch.isfinite(torch.tensor(e.loss)) for e in events if isinstance(e, Step))


def test_running_out_with_one_clip_stops_with_a_checkpoint_and_advice_and_resumes(setup, monkeypatch):
    project, tiny = setup
    with monkeypatch.context() as patch:
        InjectedOutOfMemory(patch, max_clips=0, from_call=3)
        events = list(train(_config(project, tiny, "give_up", profile="high")))
    kinds = [type(e) for e in events]
    assert kinds[-3:] == [Checkpoint, Error, Done] and events[-1].reason == "error"
    checkpoint, error = events[-3], events[-2]
    assert checkpoint.step == 1 and checkpoint.reason == "out_of_memory"
    assert error.kind == "out_of_memory" and "Medium VRAM profile" in error.message
    assert [e.micro_batch for e in events if isinstance(e, MicroBatch)] == [2, 1]
    assert latest_checkpoint(project / "runs" / "give_up").name == "step_0000001"

    resumed = list(train(_config(project, tiny, "give_up", profile="high"), resume=True))
    assert resumed[-1].reason == "max_steps" and [e.step for e in resumed if isinstance(e, Step)] == [2, 3]


def test_auto_sizing_probes_the_largest_micro_batch_and_keeps_the_effective_batch(setup, monkeypatch):
    project, tiny = setup
    oom = InjectedOutOfMemory(monkeypatch, max_clips=2)
    events = list(train(_config(project, tiny, "auto", auto_micro_batch=True, batch_size=4, grad_accum_steps=1,
                                max_steps=2)))
    assert events[-1].reason == "max_steps", events[-3:]
    probe = next(e for e in events if isinstance(e, MicroBatch))
    assert (probe.cause, probe.micro_batch, probe.grad_accum, probe.effective_batch) == ("probe", 2, 2, 4)
    assert events.index(probe) < events.index(next(e for e in events if isinstance(e, Started)))
    started = next(e for e in events if isinstance(e, Started))
    assert (started.config["batch_size"], started.config["grad_accum_steps"]) == (2, 2)
    assert sum(isinstance(e, MicroBatch) for e in events) == 1  # the probe's choice never ran out in training
    # The probe's two passes (2 clips need accumulation: the second runs while the first's gradients are held),
    # then 2 steps x 2 x 2.
    assert oom.passed[:2] == [2, 2] and oom.passed[2:] == [2, 2, 2, 2]
    # The probe's own peak is recorded apart from the run's (on a card its failed tries fill Auto's cap; on the
    # CPU resident memory keeps no window, so the run's peak includes it).
    [session] = json.loads((project / "runs" / "auto" / MEMORY_FILE).read_text())
    assert 0 < session["probe_peak_gib"] <= session["measured_peak_gib"] == pytest.approx(events[-1].peak_memory_gib,
                                                                                          abs=1e-3)

    resumed = list(train(_config(project, tiny, "auto", auto_micro_batch=True, batch_size=4, grad_accum_steps=1,
                                 max_steps=3), resume=True))
    assert resumed[-1].reason == "max_steps" and not any(isinstance(e, MicroBatch) for e in resumed)


class GradientsTakeRoom(InjectedOutOfMemory):
    """A card on which ``max_clips`` clips fit a pass, but only ``max_clips_with_gradients`` while the gradients of
    an earlier micro-batch are held (as with gradient accumulation): the error CUDA raises otherwise."""

    def __init__(self, monkeypatch, *, max_clips: int, max_clips_with_gradients: int) -> None:
        super().__init__(monkeypatch, max_clips=max_clips)
        self.with_gradients = max_clips_with_gradients

    def __call__(self, gpt, inputs, weights, **kw):
        holding = any(p.grad is not None for p in gpt.parameters())
        if holding and inputs["text_inputs"].shape[0] > self.with_gradients:
            self.calls += 1
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (injected by the test)")
        return super().__call__(gpt, inputs, weights, **kw)


def test_auto_sizing_counts_the_gradients_an_accumulating_micro_step_holds(setup, monkeypatch):
    """4 clips fit one pass but not beside the gradients of the micro-batch before: the probe tries sizes as
    training runs them, so it picks 2 and training never runs out (a one-pass probe picked 4, and the first step
    ran out and halved it: the H200's card rehearsal, 2026-11-27)."""
    project, tiny = setup
    GradientsTakeRoom(monkeypatch, max_clips=4, max_clips_with_gradients=2)
    events = list(train(_config(project, tiny, "auto_gradients", auto_micro_batch=True, batch_size=8,
                                grad_accum_steps=1, max_steps=2)))
    assert events[-1].reason == "max_steps", events[-3:]
    changes = [(e.cause, e.micro_batch, e.grad_accum) for e in events if isinstance(e, MicroBatch)]
    assert changes == [("probe", 2, 4)]


def test_auto_sizing_with_nothing_that_fits_says_what_to_change(setup, monkeypatch):
    project, tiny = setup
    InjectedOutOfMemory(monkeypatch, max_clips=0)
    events = list(train(_config(project, tiny, "nothing_fits", auto_micro_batch=True, profile="auto")))
    assert [type(e) for e in events] == [Log, Error, Done] and events[0].message.startswith("Setting up")
    assert events[1].kind == "out_of_memory" and "Low VRAM profile" in events[1].message
    assert latest_checkpoint(project / "runs" / "nothing_fits") is None


def test_the_measured_peak_is_recorded_for_each_session(setup):
    project, tiny = setup
    events = list(train(_config(project, tiny, "peak", max_steps=1)))
    done = events[-1]
    assert done.peak_memory_gib > 0 and done.estimated_memory_gib is None  # the tiny model: no estimate
    sessions = json.loads((project / "runs" / "peak" / MEMORY_FILE).read_text())
    assert len(sessions) == 1 and sessions[0]["measured_peak_gib"] == pytest.approx(done.peak_memory_gib, abs=1e-3)
    assert sessions[0]["measure"] == "peak RSS" and sessions[0]["micro_batch"] == 4
    assert sessions[0]["probe_peak_gib"] is None  # no Auto sizing, no probe


def test_the_recorded_estimate_is_for_the_longest_clip_the_run_trains_on(setup, monkeypatch):
    """As the profiles' estimates: memory.json's prediction is asked for the run's longest training clip (the
    espeak clips here are 2-4 s), not for the 11.6 s limit (the tiny model gets no figure; the question is seen)."""
    from alltalk_gui.core.dataset.clip_lengths import longest_clip_seconds
    from alltalk_gui.core.engine_api.engine import get_engine

    project, tiny = setup
    engine = type(get_engine("xtts"))
    asked, real = [], engine.estimate_memory

    def estimate_memory(self, config, **kw):
        asked.append(config.max_audio_seconds)
        return real(self, config, **kw)

    monkeypatch.setattr(engine, "estimate_memory", estimate_memory)
    config = _config(project, tiny, "sized", max_steps=1)
    list(train(config))
    longest = longest_clip_seconds(project / "dataset")
    assert config.max_audio_seconds > 5 and asked and asked[-1] == pytest.approx(longest, abs=0.01)


def test_a_nan_loss_skips_that_update_and_training_goes_on(setup, monkeypatch):
    project, tiny = setup
    real, calls = xtts_model.gpt_loss, []

    def nan_at_third_call(gpt, inputs, weights, **kw):
        calls.append(1)
        losses = real(gpt, inputs, weights, **kw)
        if len(calls) == 3:  # the first micro-batch of step 2
            losses = {k: v * float("nan") for k, v in losses.items()}
        return losses

    monkeypatch.setattr(xtts_model, "gpt_loss", nan_at_third_call)
    events = list(train(_config(project, tiny, "nan")))
    assert events[-1].reason == "max_steps"
    warnings = [e for e in events if isinstance(e, Log) and e.level == "warning"]
    assert len(warnings) == 1 and "Step 2" in warnings[0].message and "skipped" in warnings[0].message
    from safetensors.torch import load_file

    weights = load_file(str(latest_checkpoint(project / "runs" / "nan") / "model.safetensors"))
    assert all(torch.isfinite(t).all() for t in weights.values())


def test_conditioning_slices_never_start_where_coqui_would_mask_the_whole_clip(setup):
    """coqui's mask starts at start // 256 on the 1024-sample code axis: a start below 256 masks every target."""
    from alltalk_gui.core.engines.xtts.files import load_tokenizer
    from alltalk_gui.core.engines.xtts.data import load_dataset

    project, tiny = setup
    clips, _ = load_dataset(project / "dataset", load_tokenizer(tiny), "en", max_audio_seconds=11.6,
                            min_audio_seconds=0.5, max_text_tokens=200)
    starts = []
    for epoch in range(200):
        dataset = ClipDataset(clips, [{}] * len(clips), seed=1, is_eval=False, min_cond_samples=22050,
                              max_cond_samples=44100, hop=256, silence=torch.zeros(80))
        dataset.set_epoch(epoch)
        starts += [dataset._conditioning(torch.zeros(80, clip.samples // 256 + 1), clip.samples, i)[1][0]
                   for i, clip in enumerate(clips)]
    assert min(starts) >= 256 and len(set(starts)) > 100
