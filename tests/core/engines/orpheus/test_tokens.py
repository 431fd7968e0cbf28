"""Orpheus's token layout: special ids read from the tokenizer by name, SNAC frames as tokens and back in Orpheus's
order, repeated frames dropped as Orpheus's data preparation does, and the prompt around "<speaker>: <text>"."""

from __future__ import annotations

import pytest

from alltalk_gui.core.engines.orpheus.files import load_tokenizer, special_tokens
from alltalk_gui.core.engines.orpheus.tiny_model import TINY_SNAC, build_tokenizer
from alltalk_gui.core.engines.orpheus.tokens import (
    IGNORE, SpecialTokens, TokenError, drop_repeated_frames, frames_to_tokens, prompt_ids, tokens_to_frames,
    training_sequence,
)


@pytest.fixture(scope="module")
def special(tiny_orpheus) -> SpecialTokens:
    return special_tokens(tiny_orpheus)


def test_special_ids_come_from_the_tokenizer_by_name(tiny_orpheus, special):
    tokenizer = load_tokenizer(tiny_orpheus)
    assert tokenizer.convert_ids_to_tokens(special.start_of_speech) == "<custom_token_1>"
    assert tokenizer.convert_ids_to_tokens(special.pad) == "<custom_token_7>"
    assert tokenizer.convert_ids_to_tokens(special.audio_base) == "<custom_token_10>"
    assert tokenizer.convert_ids_to_tokens(special.end_of_text) == "<|eot_id|>"
    # Orpheus's layout relative to its first added token (128256 in the real tokenizer): +1 .. +7, audio from +10.
    first = special.start_of_speech - 1
    assert (special.end_of_speech, special.start_of_human, special.end_of_human, special.start_of_ai,
            special.end_of_ai, special.pad, special.audio_base) == tuple(first + n for n in (2, 3, 4, 5, 6, 7, 10))
    assert special.audio_end == special.audio_base + 7 * TINY_SNAC["codebook_size"]
    assert special.audio_end <= len(tokenizer)


def test_a_tokenizer_without_orpheus_tokens_is_refused():
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    plain = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"a": 0, "[UNK]": 1}, "[UNK]")),
                                    unk_token="[UNK]")
    with pytest.raises(TokenError, match="custom_token_1"):
        SpecialTokens.from_tokenizer(plain, 64)
    short = build_tokenizer(codebook_size=8)  # audio tokens for a codebook of 8, not 64
    with pytest.raises(TokenError, match="custom_token_"):
        SpecialTokens.from_tokenizer(short, 64)


def test_frames_map_to_tokens_in_orpheus_order_and_back(special):
    size = special.codebook_size
    coarse, mid, fine = [1, 2], [3, 4, 5, 6], [7, 8, 9, 10, 11, 12, 13, 14]
    tokens = frames_to_tokens((coarse, mid, fine), special)
    base = special.audio_base
    # Frame 0: coarse 0, mid 0, fine 0, fine 1, mid 1, fine 2, fine 3 at positions 0..6 of the frame.
    assert tokens[:7] == [base + 0 * size + 1, base + 1 * size + 3, base + 2 * size + 7, base + 3 * size + 8,
                          base + 4 * size + 4, base + 5 * size + 9, base + 6 * size + 10]
    assert tokens[7] == base + 2
    assert tokens_to_frames(tokens, special) == (coarse, mid, fine)
    with pytest.raises(TokenError, match="n, 2n and 4n"):
        frames_to_tokens(([1], [2], [3, 4, 5, 6]), special)
    with pytest.raises(TokenError, match="outside the codebook"):
        frames_to_tokens(([size], [0, 0], [0, 0, 0, 0]), special)


def test_frames_said_out_of_place_and_a_part_frame_are_dropped(special):
    tokens = frames_to_tokens(([1, 2], [3, 4, 5, 6], [7, 8, 9, 10, 11, 12, 13, 14]), special)
    swapped = tokens[:7] + [tokens[8], tokens[7]] + tokens[9:] + tokens[:3]  # frame 2 broken, a part frame after
    assert tokens_to_frames(swapped, special) == ([1], [3, 4], [7, 8, 9, 10])


def test_repeated_frames_are_dropped_by_their_coarse_code():
    frames = [[5, 1, 1, 1, 1, 1, 1], [5, 2, 2, 2, 2, 2, 2], [6, 3, 3, 3, 3, 3, 3], [6, 4, 4, 4, 4, 4, 4],
              [5, 9, 9, 9, 9, 9, 9]]
    kept = drop_repeated_frames([t for f in frames for t in f])
    assert kept == frames[0] + frames[2] + frames[4]
    with pytest.raises(TokenError, match="whole frames"):
        drop_repeated_frames([1, 2, 3])


def test_the_prompt_and_the_scored_part(tiny_orpheus, special):
    tokenizer = load_tokenizer(tiny_orpheus)
    prompt = prompt_ids(tokenizer, special, "tara", "Hello there.")
    words = tokenizer("tara: Hello there.")["input_ids"]
    assert words[0] == tokenizer.bos_token_id
    assert prompt == [special.start_of_human, *words, special.end_of_text, special.end_of_human,
                      special.start_of_ai, special.start_of_speech]
    audio = frames_to_tokens(([1], [2, 3], [4, 5, 6, 7]), special)
    sequence, start = training_sequence(prompt, audio, special)
    assert sequence[start:] == [*audio, special.end_of_speech, special.end_of_ai]
    assert IGNORE < 0
