"""The smoothed loss curve: it follows a short run's fast fall and still calms a long run's noise."""

from __future__ import annotations

import math
import random
import statistics

from alltalk_gui.core.training.events import Started, Step
from alltalk_gui.gui.train.training_history import TrainingHistory


def _history(total: int, loss) -> TrainingHistory:
    history = TrainingHistory()
    history.add(Started(run_dir="r", device="cpu", processes=1, train_clips=8, eval_clips=2, steps_per_epoch=4,
                        total_steps=total, start_step=0, start_epoch=0, trainable_parameters=1, config={}))
    for step in range(1, total + 1):
        history.add(Step(step=step, epoch=0, loss=loss(step), loss_text_ce=0.0, loss_mel_ce=0.0, lr=1e-5,
                         grad_norm=1.0, samples_per_s=1.0, step_time_s=0.1, total_steps=total))
    return history


def test_a_short_run_s_smoothed_loss_follows_its_fall():
    history = _history(48, lambda step: 4.5 * math.exp(-step / 8) + 0.3)
    at_20 = history.loss.x.index(20)
    assert history.loss_smooth.y[at_20] < 1.25 * history.loss.y[at_20]


def test_a_long_run_s_smoothed_loss_is_calm():
    rng = random.Random(0)
    history = _history(20_000, lambda step: 1.0 + rng.gauss(0, 0.2))
    assert statistics.stdev(history.loss_smooth.y[1000:]) < 0.2 * statistics.stdev(history.loss.y[1000:])
