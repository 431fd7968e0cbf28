"""Speak with a Parler-TTS model: the description says who speaks and how, the text what. Engine environment.

``ParlerTTSForConditionalGeneration.generate`` with Parler's sampling options (:data:`SAMPLING`, the engine's
generation settings): sampling on, at ``temperature`` with ``top_k`` / ``top_p``, and a repetition penalty.
Parler's own README samples at temperature 1.0 with transformers' default top-k of 50. Its codes 1025 and up
(BOS and 62 spare ids) are suppressed: DAC cannot decode them, and a trained model never samples them anyway.
Long text is spoken sentence by sentence (Parler's inference guide does the same: one generation is at most
30 s, and quality falls off before that), each with the same description and seed, joined with a short pause.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from alltalk_gui.core.engines.parler.files import CODEBOOK_SIZE, SAMPLE_RATE

SENTENCE_PAUSE_S = 0.2
MAX_CHARACTERS = 300            # one generation's text; longer sentences are cut at clause marks
FRAMES_PER_SECOND = SAMPLE_RATE / 512


@dataclass(frozen=True)
class Sampling:
    """Parler's sampling options (the engine's preview settings)."""

    temperature: float = 1.0
    top_k: int = 50
    top_p: float = 1.0
    repetition_penalty: float = 1.0
    seed: int = 0
    max_seconds: float = 30.0   # one generation's longest audio (Parler's generation config: 30 s)

    def generate_kwargs(self, vocab_size: int) -> dict[str, Any]:
        return {"do_sample": True, "temperature": self.temperature, "top_k": self.top_k, "top_p": self.top_p,
                "repetition_penalty": self.repetition_penalty,
                "max_new_tokens": int(self.max_seconds * FRAMES_PER_SECOND) + 9,
                "suppress_tokens": list(range(CODEBOOK_SIZE + 1, vocab_size))}


def generate(model, tokenizer, description: str, text: str, sampling: Sampling, device) -> Any:
    """One generation: mono float32 numpy at 44.1 kHz."""
    import numpy as np
    import torch

    described = tokenizer(description, return_tensors="pt").to(device)
    prompt = tokenizer(text, return_tensors="pt").to(device)
    torch.manual_seed(sampling.seed)
    with torch.no_grad():
        audio = model.generate(input_ids=described.input_ids, attention_mask=described.attention_mask,
                               prompt_input_ids=prompt.input_ids, prompt_attention_mask=prompt.attention_mask,
                               **sampling.generate_kwargs(model.config.decoder.vocab_size))
    return np.asarray(audio.float().cpu().numpy().reshape(-1), dtype=np.float32)


def speak(model, tokenizer, description: str, pieces: list[str], sampling: Sampling, device) -> Any:
    """Each piece with the same description and seed, joined (:func:`join`)."""
    return join([generate(model, tokenizer, description, piece, sampling, device) for piece in pieces])


def join(parts: list[Any]) -> Any:
    """Spoken pieces one after another with :data:`SENTENCE_PAUSE_S` of silence between them (either side of the
    engine's boundary: the app joins the pieces it asked the child for one by one)."""
    import numpy as np

    pause = np.zeros(int(SAMPLE_RATE * SENTENCE_PAUSE_S), np.float32)
    return np.concatenate([x for part in parts for x in (part, pause)][:-1]) if parts else np.zeros(0, np.float32)
