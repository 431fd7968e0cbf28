"""The smoothed loss curve: it follows a short run's fast fall and still calms a long run's noise."""

from __future__ import annotations

import math
import random
import statistics

from alltalk_gui.core.training.events import Eval, Started, Step
from alltalk_gui.gui.train.training_history import TrainingHistory


def _history(total: int, loss) -> TrainingHistory:
    history = TrainingHistory()
    history.add(Started(run_dir="r", device="cpu", processes=1, train_clips=8, eval_clips=2, steps_per_epoch=4,
                        total_steps=total, start_step=0, start_epoch=0, trainable_parameters=1, config={}))
    for step in range(1, total + 1):
        history.add(Step(step=step, epoch=0, loss=loss(step), parts={"loss_text_ce": 0.0, "loss_mel_ce": 0.0}, lr=1e-5,
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


def test_the_step_0_eval_is_the_base_model_baseline_apart_from_the_epoch_evals():
    history = _history(8, lambda step: 1.0)
    for step, loss in ((0, 3.0), (4, 2.0), (8, 1.5)):
        history.add(Eval(step=step, epoch=0, loss=loss, parts={"loss_text_ce": 0.0, "loss_mel_ce": loss}, clips=2, best=step > 0))
    assert (history.base_eval.x, history.base_eval.y) == ([0], [3.0])
    assert (history.eval_loss.x, history.eval_loss.y) == ([4, 8], [2.0, 1.5]) and history.last_eval == 1.5
