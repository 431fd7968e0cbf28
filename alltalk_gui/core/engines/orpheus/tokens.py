"""Orpheus's token layout: the special tokens around a prompt, SNAC frames as tokens, and a training sequence.

Orpheus-TTS is a Llama that speaks in SNAC codes. Its tokenizer is Llama 3's with added tokens named
``<custom_token_N>`` (id = the first added id + N): N = 1..7 are start/end of speech, start/end of human, start/end
of AI and padding, and from N = 10 on come the audio tokens, one block of ``codebook_size`` per position in a
frame. Every id here is read from the tokenizer by those names (:meth:`SpecialTokens.from_tokenizer`), never
written as a number, so a tiny test tokenizer with a small vocabulary works the same way as Orpheus's 156,940.

A SNAC 24 kHz frame (about 1/12 s) holds 7 codes over three levels: 1 of the coarse level, 2 of the middle, 4
of the fine one. Orpheus orders them as (coarse, mid 1, fine 1, fine 2, mid 2, fine 3, fine 4) and maps the code
at position p of a frame to ``audio_base + p x codebook_size + code`` (:func:`frames_to_tokens`; read from
Orpheus's data notebook and decoder, written anew here). Frames whose coarse code repeats the previous kept
frame's are dropped before training, as Orpheus's own data preparation does (:func:`drop_repeated_frames`).

A training sequence (:func:`training_sequence`)::

    start_of_human, tokenizer("<speaker>: <text>") (BOS included), end_of_text, end_of_human,
    start_of_ai, start_of_speech, audio tokens..., end_of_speech, end_of_ai

and only what the model must say, from the first audio token to end_of_AI, is scored (the prompt is masked).
Generation gives the prompt up to start_of_speech and stops at end_of_speech.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

CUSTOM = "<custom_token_{}>"
END_OF_TEXT = "<|eot_id|>"          # Llama 3's end of turn; Orpheus closes the text with it
AUDIO_OFFSET = 10                   # <custom_token_10> is the first audio token
# Orpheus's order of a frame's 7 codes as (level, index of the code within the frame at that level).
FRAME_ORDER = ((0, 0), (1, 0), (2, 0), (2, 1), (1, 1), (2, 2), (2, 3))
IGNORE = -100                       # label of a position the loss does not score (torch's cross_entropy default)


class TokenError(ValueError):
    """The tokenizer or the codes do not fit Orpheus's layout; the message says what is missing or wrong."""


@dataclass(frozen=True)
class SpecialTokens:
    """The ids of Orpheus's special tokens and its audio-token block, as one tokenizer has them."""

    start_of_speech: int
    end_of_speech: int
    start_of_human: int
    end_of_human: int
    start_of_ai: int
    end_of_ai: int
    pad: int
    end_of_text: int
    audio_base: int                 # id of the first audio token (<custom_token_10>)
    codebook_size: int              # codes per SNAC level (4096 for snac_24khz)
    codes_per_frame: int = 7

    @classmethod
    def from_tokenizer(cls, tokenizer: Any, codebook_size: int, codes_per_frame: int = 7) -> "SpecialTokens":
        """Read the ids from ``tokenizer`` (a transformers tokenizer) by their names.

        Raises:
            TokenError: a special token is missing, or the tokenizer has fewer audio tokens than the codec needs.
        """
        def token_id(name: str) -> int:
            ids = tokenizer.convert_tokens_to_ids([name])
            value = ids[0] if ids else None
            if value is None or value == tokenizer.unk_token_id or tokenizer.convert_ids_to_tokens(value) != name:
                raise TokenError(f"The tokenizer has no '{name}': it is not an Orpheus-TTS tokenizer.")
            return int(value)

        custom = [token_id(CUSTOM.format(n)) for n in range(1, 8)]
        base = token_id(CUSTOM.format(AUDIO_OFFSET))
        last = CUSTOM.format(AUDIO_OFFSET + codes_per_frame * codebook_size - 1)
        if token_id(last) != base + codes_per_frame * codebook_size - 1:
            raise TokenError(f"The tokenizer's audio tokens are not consecutive ('{last}').")
        return cls(*custom, end_of_text=token_id(END_OF_TEXT), audio_base=base, codebook_size=codebook_size,
                   codes_per_frame=codes_per_frame)

    @property
    def audio_end(self) -> int:
        """One past the last audio token id."""
        return self.audio_base + self.codes_per_frame * self.codebook_size

    def is_audio(self, token: int) -> bool:
        return self.audio_base <= token < self.audio_end


def frames_to_tokens(levels: Sequence[Sequence[int]], special: SpecialTokens) -> list[int]:
    """SNAC codes (three levels of n, 2n and 4n codes) as Orpheus's 7n audio token ids.

    Raises:
        TokenError: the levels' lengths are not n, 2n, 4n or a code is outside the codebook.
    """
    coarse, mid, fine = (list(map(int, level)) for level in levels)
    n = len(coarse)
    if len(mid) != 2 * n or len(fine) != 4 * n:
        raise TokenError(f"SNAC levels of {n}, {len(mid)} and {len(fine)} codes are not n, 2n and 4n.")
    by_level = (coarse, mid, fine)
    width = (1, 2, 4)
    out: list[int] = []
    for frame in range(n):
        for position, (level, index) in enumerate(FRAME_ORDER):
            code = by_level[level][frame * width[level] + index]
            if not 0 <= code < special.codebook_size:
                raise TokenError(f"SNAC code {code} is outside the codebook of {special.codebook_size}.")
            out.append(special.audio_base + position * special.codebook_size + code)
    return out


def tokens_to_frames(tokens: Sequence[int], special: SpecialTokens) -> tuple[list[int], list[int], list[int]]:
    """Audio token ids back to SNAC's three levels; a trailing part frame is dropped, and so is every frame that
    holds a token out of place (a model that has not learnt yet may say a code at the wrong position).
    """
    levels: tuple[list[int], list[int], list[int]] = ([], [], [])
    for start in range(0, len(tokens) - special.codes_per_frame + 1, special.codes_per_frame):
        frame = tokens[start:start + special.codes_per_frame]
        codes = [t - special.audio_base - p * special.codebook_size for p, t in enumerate(frame)]
        if any(not 0 <= c < special.codebook_size for c in codes):
            continue
        by_level: tuple[list[int], list[int], list[int]] = ([], [], [])
        for code, (level, _index) in zip(codes, FRAME_ORDER):
            by_level[level].append(code)
        for level in range(3):
            levels[level].extend(by_level[level])
    return levels


def drop_repeated_frames(tokens: Sequence[int], codes_per_frame: int = 7) -> list[int]:
    """Drop every frame whose first (coarse) token equals that of the last kept frame, as Orpheus's data
    preparation does: held sounds and silences become shorter, and the model learns fewer idle frames.

    Raises:
        TokenError: ``tokens`` is not a whole number of frames.
    """
    if len(tokens) % codes_per_frame:
        raise TokenError(f"{len(tokens)} audio tokens are not whole frames of {codes_per_frame}.")
    kept = list(tokens[:codes_per_frame])
    for start in range(codes_per_frame, len(tokens), codes_per_frame):
        if tokens[start] != kept[-codes_per_frame]:
            kept.extend(tokens[start:start + codes_per_frame])
    return kept


def prompt_ids(tokenizer: Any, special: SpecialTokens, speaker: str, text: str) -> list[int]:
    """The prompt the model answers: human turn with ``"<speaker>: <text>"``, then start of AI and of speech."""
    words = f"{speaker}: {text}" if speaker else text
    encoded = list(tokenizer(words, add_special_tokens=True)["input_ids"])
    return [special.start_of_human, *encoded, special.end_of_text, special.end_of_human, special.start_of_ai,
            special.start_of_speech]


def training_sequence(prompt: Sequence[int], audio: Sequence[int], special: SpecialTokens) -> tuple[list[int], int]:
    """The whole sequence of one clip and where its scored part begins (the first audio token)."""
    return [*prompt, *audio, special.end_of_speech, special.end_of_ai], len(prompt)
