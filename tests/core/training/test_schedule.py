"""The learning-rate schedule: each profile adapts at least as much as AllTalk's defaults, the warm-up is short,
the rate follows the effective batch by the square-root rule, and a resume with more epochs goes on smoothly."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from alltalk_gui.testing.speech import make_speech_dataset
from alltalk_gui.core.training import schedule
from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.events import Started, Step
from alltalk_gui.core.training.loop import STATE_FILE, latest_checkpoint, train
from alltalk_gui.core.training.profiles import PROFILE_NAMES, apply_profile
from alltalk_gui.core.training.schedule import ALLTALK, XTTS_FINETUNE_WEBUI, Schedule, plan, summed_lr
from tests.core.training.tiny_training import fast_config

BASE = TrainConfig(project_dir="p", base_model_dir="b")


def _plan(config: TrainConfig, train_clips: int, processes: int = 1) -> Schedule:
    """What the loop builds for ``train_clips`` clips (loop.py: plan(cfg, micro_batches_per_epoch(...)))."""
    return plan(config, schedule.micro_batches_per_epoch(train_clips, config.batch_size, processes), processes)


@pytest.mark.parametrize("name", PROFILE_NAMES)
@pytest.mark.parametrize("minutes", [3, 5, 10])
def test_each_profile_adapts_at_least_as_much_as_alltalks_defaults(name, minutes):
    clips = schedule.train_clips_for_minutes(minutes)
    plan_ = _plan(apply_profile(BASE, name), clips)
    assert summed_lr(plan_) >= ALLTALK.summed_lr(clips)
    assert plan_.total_steps >= ALLTALK.steps(clips) or name != "low"  # LoRA gets at least AllTalk's steps


def test_the_five_minute_figures_in_the_profile_files():
    """5 minutes = 43 training clips: AllTalk 110 steps, 4.4e-4; xtts-finetune-webui 132 steps, 6.6e-4;
    High and Medium 60 steps, 5.85e-4; Low 120 steps at 1e-4."""
    clips = schedule.train_clips_for_minutes(5)
    assert clips == 43
    assert (ALLTALK.steps(clips), XTTS_FINETUNE_WEBUI.steps(clips)) == (110, 132)
    assert ALLTALK.summed_lr(clips) == pytest.approx(4.4e-4)
    assert XTTS_FINETUNE_WEBUI.summed_lr(clips) == pytest.approx(6.6e-4)
    for name in ("high", "medium"):
        plan_ = _plan(apply_profile(BASE, name), clips)
        assert (plan_.total_steps, plan_.warmup_steps) == (60, 3)
        assert summed_lr(plan_) == pytest.approx(5.85e-4)
    low = _plan(apply_profile(BASE, "low"), clips)
    assert (low.total_steps, low.warmup_steps, low.peak_lr) == (120, 6, pytest.approx(1e-4))
    # The old recipe (cosine to 0 after 20 warm-up steps, 5e-6) gave about a third of AllTalk's.
    old = _plan(dataclasses.replace(BASE, lr=5e-6, lr_schedule="cosine", batch_size=2, grad_accum_steps=4), clips)
    assert summed_lr(dataclasses.replace(old, warmup_steps=20, decay_start=20)) == pytest.approx(1.5e-4, rel=0.05)


def test_the_warm_up_is_at_most_5_percent_and_the_rate_then_constant():
    plan_ = _plan(dataclasses.replace(BASE, batch_size=2, grad_accum_steps=4, warmup_steps=20), 43)
    assert plan_.warmup_steps == 3 <= 0.05 * plan_.total_steps
    assert [round(plan_.factor(s), 3) for s in range(5)] == [0.25, 0.5, 0.75, 1.0, 1.0]
    assert plan_.factor(plan_.total_steps - 1) == 1.0
    long = _plan(dataclasses.replace(BASE, epochs=1000), 43)
    assert long.warmup_steps == 20  # warmup_steps caps it on long runs


def test_the_rate_follows_the_effective_batch_by_the_square_root_rule():
    at_8 = dataclasses.replace(BASE, lr=1e-5, batch_size=2, grad_accum_steps=4)
    assert schedule.peak_lr(at_8) == pytest.approx(1e-5)
    assert schedule.peak_lr(dataclasses.replace(at_8, grad_accum_steps=8)) == pytest.approx(1e-5 * math.sqrt(2))
    assert schedule.peak_lr(at_8, processes=4) == pytest.approx(2e-5)
    assert schedule.peak_lr(dataclasses.replace(at_8, batch_size=1, grad_accum_steps=2)) == pytest.approx(5e-6)
    # Out-of-memory splitting and the probe trade micro-batch for accumulation: same effective batch, same rate.
    assert schedule.peak_lr(dataclasses.replace(at_8, batch_size=1, grad_accum_steps=8)) == pytest.approx(1e-5)
    assert schedule.peak_lr(dataclasses.replace(at_8, lr_batch=0, grad_accum_steps=16)) == 1e-5  # scaling off


@pytest.mark.parametrize("kind", ["constant", "cosine"])
def test_resume_with_more_epochs_keeps_the_rate_continuous(kind):
    config = dataclasses.replace(BASE, lr_schedule=kind, batch_size=2, grad_accum_steps=4, epochs=10)
    before = _plan(config, 43)
    for step in (2, 30, 60):  # in the warm-up, half-way, at the old end
        after = schedule.resume(before, _plan(dataclasses.replace(config, epochs=20), 43), step)
        assert after.total_steps == 120 and after.warmup_steps == before.warmup_steps
        assert after.lr(step) == pytest.approx(before.lr(step))
        # and no jump afterwards either: one step changes the rate by no more than the old curve's largest step
        largest = max(abs(before.lr(s + 1) - before.lr(s)) for s in range(before.total_steps))
        assert all(abs(after.lr(s + 1) - after.lr(s)) <= largest + 1e-12 for s in range(step, 119))
        if kind == "cosine" and step == 30:
            assert after.lr(119) < after.lr(30) / 50  # the re-fitted decay ends near 0 at the new horizon


def test_schedule_round_trips_through_the_checkpoint_state(tmp_path):
    from alltalk_gui.core.training.checkpoints import CheckpointError, read_state

    plan_ = _plan(dataclasses.replace(BASE, lr_schedule="cosine"), 43)
    (tmp_path / STATE_FILE).write_text(json.dumps({"global_step": 3, "schedule": plan_.to_dict()}))
    assert Schedule.from_dict(read_state(tmp_path)["schedule"]) == plan_
    (tmp_path / STATE_FILE).write_text(json.dumps({"global_step": 3, "schedule": {"peak": 1}}))
    with pytest.raises(CheckpointError, match="'schedule' does not describe"):
        read_state(tmp_path)


# -- the loop uses the same schedule ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("project")
    make_speech_dataset(root / "dataset", n_train=4, n_eval=1)
    return root


def test_the_loop_follows_the_schedule_and_a_resume_with_more_epochs_continues_it(project, tiny):
    """Cosine decay over 2 epochs, stopped after 4 of its 8 steps, then resumed asking for 4 epochs: the rate goes
    on from where it stood, without a jump, down to the new end; the checkpoint holds the schedule the loop used."""
    kw = dict(batch_size=1, grad_accum_steps=1, lr_schedule="cosine", lr=1e-3, lr_batch=2, eval_each_epoch=False)
    first = list(train(fast_config(project, tiny, "more", epochs=2, max_steps=4, **kw)))
    started = next(e for e in first if isinstance(e, Started))
    expected = _plan(fast_config(project, tiny, "more", epochs=2, **kw), started.train_clips)
    assert started.steps_per_epoch * 2 == expected.total_steps == 8
    assert expected.peak_lr == pytest.approx(1e-3 / math.sqrt(2))
    lrs = [e.lr for e in first if isinstance(e, Step)]  # each the rate set for the next step
    assert lrs == pytest.approx([expected.lr(s) for s in range(1, 5)])
    state = json.loads((latest_checkpoint(project / "runs" / "more") / STATE_FILE).read_text())
    assert Schedule.from_dict(state["schedule"]) == expected

    second = list(train(fast_config(project, tiny, "more", epochs=4, **kw), resume=True))
    more = [e.lr for e in second if isinstance(e, Step)]
    resumed = schedule.resume(expected, _plan(fast_config(project, tiny, "more", epochs=4, **kw), 4), 4)
    assert len(more) == 12 and more == pytest.approx([resumed.lr(s) for s in range(5, 17)])
    largest = max(abs(expected.lr(s + 1) - expected.lr(s)) for s in range(8))
    rates = lrs + more
    assert all(0 <= a - b <= largest for a, b in zip(rates, rates[1:]))  # falls, never by more than before
    assert more[-1] == pytest.approx(0.0, abs=1e-12)
