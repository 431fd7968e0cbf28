"""Speech from an Orpheus model: the length cap comes from the text, what the model says is always whole frames of
audio tokens at their positions, it stops at end of speech, and SNAC decodes it to 24 kHz audio."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from alltalk_gui.core.engines.orpheus.codec import load_codec
from alltalk_gui.core.engines.orpheus.files import load_tokenizer, special_tokens, validate_base_model
from alltalk_gui.core.engines.orpheus.model import load_lm
from alltalk_gui.core.engines.orpheus.synthesis import OrpheusVoice, Sampling, generate_tokens, length_cap, speak
from alltalk_gui.core.engines.orpheus.tokens import tokens_to_frames


@pytest.fixture(scope="module")
def voice(tiny_orpheus) -> OrpheusVoice:
    info = validate_base_model(tiny_orpheus)
    tokenizer = load_tokenizer(tiny_orpheus)
    return OrpheusVoice(load_lm(tiny_orpheus, "fp32").eval(), tokenizer, special_tokens(tiny_orpheus),
                        load_codec(info.codec_dir), info.codec, info.context, ["tara"])


def test_the_length_cap_comes_from_the_text(voice):
    facts = voice.codec_facts
    short, longer = length_cap("Hi.", facts, 1200), length_cap("Hello there, this is a longer sentence.", facts, 1200)
    assert short % 7 == 0 and longer % 7 == 0 and short < longer <= 1200
    assert short == 7 * int(np.ceil((2.0 + 3 / 6.0) * facts.frame_rate))
    assert length_cap("x" * 1000, facts, 1000) == 994  # whole frames within max_new_tokens


def test_the_model_says_whole_frames_within_the_cap(voice):
    tokens = generate_tokens(voice, "tara", "Hi.", Sampling(seed=1))
    assert len(tokens) == length_cap("Hi.", voice.codec_facts, 1200)  # an untrained model never stops by itself
    levels = tokens_to_frames(tokens, voice.special)
    assert len(levels[0]) * 7 == len(tokens)  # every token at its place in a frame
    few = Sampling(seed=1, max_new_tokens=35)
    assert generate_tokens(voice, "tara", "Hi.", few) == tokens[:35]  # the seed decides
    assert generate_tokens(voice, "tara", "Hi.", Sampling(seed=2, max_new_tokens=35)) != tokens[:35]


def test_it_stops_at_end_of_speech(voice):
    lm = voice.lm
    end = voice.special.end_of_speech
    with torch.no_grad():
        saved = lm.lm_head.weight[end].clone()
        lm.lm_head.weight[end] = lm.model.norm.weight.sign() * 50  # end of speech outweighs everything it may
    try:
        tokens = generate_tokens(voice, "tara", "Hi.", Sampling(seed=1))
    finally:
        with torch.no_grad():
            lm.lm_head.weight[end] = saved
    # End of speech comes early, and only where a frame is complete (the grammar allows it nowhere else).
    assert 0 < len(tokens) < length_cap("Hi.", voice.codec_facts, 1200) and len(tokens) % 7 == 0


def test_speech_is_24khz_audio(voice):
    audio = speak(voice, "tara", "Hi.", Sampling(seed=3, max_new_tokens=70))
    assert audio.dtype == np.float32 and audio.ndim == 1
    assert audio.size == 10 * 2048  # 10 frames of 2,048 samples at 24 kHz
    assert np.isfinite(audio).all() and np.abs(audio).max() <= 1.0
