"""The best checkpoint by the judge: likeness subject to intelligibility (no worse than the base's WER plus the
margin), MOS breaking ties, the clearest when none qualifies, the reason in words, and the over-training warning."""

from __future__ import annotations

from alltalk_gui.core.voice.judge import thresholds as t
from alltalk_gui.core.voice.judge.best import choose, describe, overtraining
from alltalk_gui.core.voice.judge.scores import StepScores


def scores(step, likeness, wer, mos) -> StepScores:
    return StepScores(step=step, checkpoint=f"step_{step:07d}" if step else None, likeness=likeness, error_rate=wer,
                      measure="wer", mos=mos, length_problems=0, seconds=1.0)


BASE = scores(0, 0.61, 0.05, 3.5)


def test_the_likest_checkpoint_that_is_clear_enough_wins():
    run = [BASE, scores(200, 0.75, 0.06, 3.6), scores(400, 0.84, 0.04, 3.9), scores(600, 0.90, 0.30, 3.8)]
    best, reason = choose(run)
    assert best.step == 400  # step 600 is likelier but its WER is far above the base's 0.05 + margin
    assert reason.startswith("step 400: likeness 0.84 (base 0.61), WER 0.04, MOS 3.9: the most like the speaker")


def test_naturalness_breaks_a_tie_in_likeness():
    run = [BASE, scores(200, 0.840, 0.05, 3.4), scores(400, 0.845, 0.05, 3.9), scores(600, 0.80, 0.05, 4.5)]
    best, reason = choose(run)
    assert best.step == 400 and "the most natural of those as alike" in reason
    run = [BASE, scores(200, 0.845, 0.05, 4.2), scores(400, 0.840, 0.05, 3.9)]
    assert choose(run)[0].step == 200


def test_the_margin_is_the_limit():
    edge = BASE.error_rate + t.ERROR_MARGIN
    assert choose([BASE, scores(200, 0.9, edge, 3.0), scores(400, 0.7, 0.0, 3.0)])[0].step == 200
    assert choose([BASE, scores(200, 0.9, edge + 0.01, 3.0), scores(400, 0.7, 0.0, 3.0)])[0].step == 400


def test_when_no_checkpoint_is_as_clear_as_the_base_the_clearest_is_chosen():
    best, reason = choose([BASE, scores(200, 0.9, 0.4, 3.0), scores(400, 0.8, 0.2, 3.0)])
    assert best.step == 400 and "no checkpoint is as clear as the base model (WER 0.05)" in reason


def test_only_existing_checkpoints_and_no_choice_without_judged_checkpoints():
    run = [BASE, scores(200, 0.9, 0.05, 3.0), scores(400, 0.8, 0.05, 3.0)]
    assert choose(run, available=[400])[0].step == 400  # step 200 was pruned
    assert choose([BASE]) is None and choose([]) is None
    assert choose([scores(200, 0.7, 0.5, 3.0)])[0].step == 200  # no base judged: every checkpoint qualifies


def test_describe_names_what_was_measured():
    assert describe(scores(400, 0.84, 0.04, 3.9), BASE) == "step 400: likeness 0.84 (base 0.61), WER 0.04, MOS 3.9"
    assert describe(scores(400, None, 0.04, None), None) == "step 400: WER 0.04"


def test_over_training_when_likeness_stalls_and_the_error_rises():
    healthy = [BASE, scores(200, 0.80, 0.05, 3.6), scores(400, 0.84, 0.05, 3.7)]
    assert overtraining(healthy) is None
    worse = healthy + [scores(600, 0.845, 0.15, 3.6)]
    warning = overtraining(worse)
    assert warning.startswith("Over-training: since step 400 the likeness has stopped rising (0.84 → 0.84) while "
                              "the WER rose (0.05 → 0.15) at step 600")
    assert overtraining(healthy + [scores(600, 0.90, 0.15, 3.6)]) is None  # still gaining likeness
