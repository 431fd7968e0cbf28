"""Our training loss equals Parler-TTS's own training step on the same batch (random weights, the tiny model of the
real architecture): the delayed labels are the ones Parler's script builds, and the loss and its 9 codebook parts
are its ``train_step``'s, with the decoder's dropout (train mode) and without."""

from __future__ import annotations

import pytest

DESCRIPTION = "Jenny speaks at a moderate speed with a slightly low-pitched voice. The recording is very clear."
TEXTS = ["Hello there, this is a short test of the voice.", "The quick brown fox jumps over the lazy dog!"]


def test_the_delay_pattern_is_parlers(engine_side):
    # From 7 frames up (Parler's builder leaves shorter sequences unpatterned; a clip is at least 1 s = 86 frames).
    assert engine_side.call("labels_agree", lengths=[7, 9, 10, 37, 300]) is True


@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
def test_our_loss_is_parlers_train_step(engine_side, tiny_parler, train):
    # Two clips of different lengths: the shorter one's labels are padded, and Parler divides by every position.
    result = engine_side.call("parity", base=str(tiny_parler), description=DESCRIPTION, texts=TEXTS, lengths=[31, 44],
                              train=train)
    assert result["positions"] == result["num_items"] == 2 * (44 + 9)
    assert result["ours"] == pytest.approx(result["theirs"], rel=1e-6, abs=1e-6)
    assert result["ours_parts"] == pytest.approx(result["theirs_parts"], rel=1e-6, abs=1e-6)
    assert sum(result["ours_parts"]) / 9 == pytest.approx(result["ours"], rel=1e-6)
    assert 5.0 < result["ours"] < 9.0  # random weights over 1088 codes: about ln(1088) = 7.0 per position
