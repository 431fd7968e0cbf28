"""Speech from an Orpheus model: the prompt, sampling with the KV cache, and SNAC decoding to 24 kHz audio.

The model is prompted as it was trained (:func:`.tokens.prompt_ids`: ``"<speaker>: <text>"`` up to start of
speech) and sampled with transformers' ``generate`` (its KV cache: each new token costs one position, not the
whole sequence again) at Orpheus's settings (temperature 0.6, top-p 0.95, repetition penalty 1.1). It stops at
end of speech, or at a length cap: an untrained or confused model never says end of speech, and the cap keeps it
from running on for the whole context. The cap comes from the text's length (:func:`length_cap`: 2 s plus one
second per 6 characters, at 82 tokens a second, never more than ``max_new_tokens``) and from the context.

:class:`FrameGrammar` lets the model choose only tokens that make a frame: at each of a frame's 7 positions the
audio tokens of that position, and end of speech only where a frame is complete. A trained model says nothing
else anyway; the grammar keeps a model early in training (or the tiny test model) from stopping mid-frame or
saying text, so what it says can always be decoded. The codes are turned back into SNAC's three levels and
decoded in one pass (Orpheus's streaming decoder cuts a window of 4 frames; a preview needs no streaming).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from alltalk_gui.core.engines.orpheus.codec import CodecFacts
from alltalk_gui.core.engines.orpheus.tokens import SpecialTokens, prompt_ids, tokens_to_frames

SECONDS_BASE = 2.0            # the length cap: this much speech ...
CHARACTERS_PER_SECOND = 6.0   # ... plus a second for this many characters (slow speech is about 10 a second)


@dataclass
class OrpheusVoice:
    """A loaded Orpheus model, its tokenizer and codec, for synthesis."""

    lm: Any
    tokenizer: Any
    special: SpecialTokens
    codec: Any
    codec_facts: CodecFacts
    context: int
    speakers: list[str]


@dataclass(frozen=True)
class Sampling:
    """How tokens are drawn (the engine's generation options)."""

    temperature: float = 0.6
    top_p: float = 0.95
    repetition_penalty: float = 1.1
    max_new_tokens: int = 1200     # about 14.6 s of speech (Orpheus's own default)
    seed: int = 0


def length_cap(text: str, codec: CodecFacts, most: int) -> int:
    """New tokens allowed for ``text``: a whole number of frames, at most ``most``."""
    seconds = SECONDS_BASE + len(text) / CHARACTERS_PER_SECOND
    frames = math.ceil(seconds * codec.frame_rate)
    per_frame = codec.codes_per_frame
    return max(per_frame, min(frames * per_frame, most // per_frame * per_frame))


def frame_grammar(special: SpecialTokens, prompt_length: int):
    """A transformers LogitsProcessor that allows only the audio tokens of the next position in the frame, and end
    of speech where a frame is complete."""
    import torch
    from transformers import LogitsProcessor

    class FrameGrammar(LogitsProcessor):
        def __call__(self, input_ids, scores):
            said = input_ids.shape[1] - prompt_length
            position = said % special.codes_per_frame
            start = special.audio_base + position * special.codebook_size
            allowed = torch.full_like(scores, float("-inf"))
            allowed[:, start:start + special.codebook_size] = 0.0
            if position == 0 and said > 0:
                allowed[:, special.end_of_speech] = 0.0
            return scores + allowed

    return FrameGrammar()


def generate_tokens(voice: OrpheusVoice, speaker: str, text: str, sampling: Sampling) -> list[int]:
    """The audio tokens the model says for ``text`` as ``speaker`` (end of speech left off)."""
    import torch
    from transformers import LogitsProcessorList

    prompt = prompt_ids(voice.tokenizer, voice.special, speaker, text)
    room = voice.context - len(prompt) - 1
    cap = min(length_cap(text, voice.codec_facts, sampling.max_new_tokens), room)
    device = next(voice.lm.parameters()).device
    ids = torch.tensor([prompt], dtype=torch.long, device=device)
    torch.manual_seed(sampling.seed)
    with torch.inference_mode():
        out = voice.lm.generate(
            input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=max(cap, 1), do_sample=True,
            temperature=sampling.temperature, top_p=sampling.top_p, repetition_penalty=sampling.repetition_penalty,
            eos_token_id=voice.special.end_of_speech, pad_token_id=voice.special.pad, use_cache=True,
            logits_processor=LogitsProcessorList([frame_grammar(voice.special, len(prompt))]))
    said = out[0, len(prompt):].tolist()
    return [t for t in said if voice.special.is_audio(t)]


def speak(voice: OrpheusVoice, speaker: str, text: str, sampling: Sampling) -> Any:
    """``text`` spoken as ``speaker``: mono float32 numpy at the codec's rate (24 kHz)."""
    from alltalk_gui.core.engines.orpheus.codec import decode

    tokens = generate_tokens(voice, speaker, text, sampling)
    return decode(voice.codec, tokens_to_frames(tokens, voice.special))
