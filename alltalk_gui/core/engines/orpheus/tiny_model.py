"""A tiny, randomly initialised Orpheus-TTS base folder for tests and smoke runs (it speaks noise, not a voice).

The same layout and code paths as a real base folder (:mod:`.files`): a ``LlamaForCausalLM`` of Llama 3.2's shape
conventions (grouped-query attention 3:1, SiLU MLP, RMSNorm, rope theta 500,000, tied embeddings) at width 96
and 2 layers; a byte-level BPE tokenizer with Llama 3's ``<|begin_of_text|>`` and ``<|eot_id|>`` and Orpheus's
``<custom_token_N>`` tokens (so every special id is found by name, as in the real one); and a SNAC codec with
snac_24khz's conventions (24 kHz, encoder strides 2-4-8-8 = 512 samples, quantizer strides 4-2-1: 7 codes a
frame) but narrow layers and a codebook of 64. The vocabulary is then about 800 tokens instead of 156,940, and
the context 2,048 tokens (about 24 s of speech), so the clip limit that comes from the context is exercised too.
Its weights are drawn with a standard deviation of 0.05, not Llama's 0.02: at width 96, 0.02 gives output rows of
norm 0.2 and logits within +-2, a flat distribution no fine-tune that freezes the (tied) output projection can
sharpen (measured: LoRA alone could not move the loss), while a trained Orpheus has sharp logits. At 0.05 LoRA
learns as a full fine-tune does, a little slower.

Written by :func:`build_tiny_orpheus` (the CLI: ``make-test-model --engine orpheus``); deterministic for a seed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from alltalk_gui.core import atomic
from alltalk_gui.core.engines.orpheus.codec import CODEC_DIR
from alltalk_gui.core.engines.orpheus.tokens import AUDIO_OFFSET, CUSTOM, END_OF_TEXT

BEGIN_OF_TEXT = "<|begin_of_text|>"
TINY_SNAC = {"sampling_rate": 24000, "encoder_dim": 8, "encoder_rates": [2, 4, 8, 8], "latent_dim": None,
             "decoder_dim": 32, "decoder_rates": [8, 8, 4, 2], "attn_window_size": None, "codebook_size": 64,
             "codebook_dim": 4, "vq_strides": [4, 2, 1], "noise": True, "depthwise": True}
TINY_LLAMA = {"hidden_size": 96, "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 6,
              "num_key_value_heads": 2, "max_position_embeddings": 2048, "rope_theta": 500000.0,
              "rms_norm_eps": 1e-5, "tie_word_embeddings": True, "hidden_act": "silu", "initializer_range": 0.05}
TEXT_MERGES = 96  # byte-level BPE merges learnt from the sample text below, on top of the 256 byte tokens
SAMPLE_TEXT = [
    "The quick brown fox jumps over the lazy dog.", "Hello, this is a short test of the speech model.",
    "She sells sea shells by the sea shore.", "Guten Morgen, wie geht es dir heute?",
    "Bonjour, je m'appelle Marie et je parle français.", "¿Dónde está la biblioteca?", "speaker: tara, leo, zac",
]


def build_tokenizer(codebook_size: int, codes_per_frame: int = 7):
    """A transformers fast tokenizer with Orpheus's layout: text tokens, Llama 3's two specials, then
    ``<custom_token_0>`` .. ``<custom_token_{10 + 7 x codebook_size - 1}>``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=256 + TEXT_MERGES, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(SAMPLE_TEXT, trainer)
    customs = [CUSTOM.format(n) for n in range(AUDIO_OFFSET + codes_per_frame * codebook_size)]
    tok.add_special_tokens([BEGIN_OF_TEXT, END_OF_TEXT, *customs])
    bos = tok.token_to_id(BEGIN_OF_TEXT)
    tok.post_processor = processors.TemplateProcessing(single=f"{BEGIN_OF_TEXT} $A", pair=f"{BEGIN_OF_TEXT} $A $B",
                                                       special_tokens=[(BEGIN_OF_TEXT, bos)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=BEGIN_OF_TEXT, eos_token=END_OF_TEXT,
                                   pad_token=CUSTOM.format(7))


def build_tiny_codec(folder: str | os.PathLike[str], seed: int = 0) -> Path:
    """Write a tiny random SNAC (``config.json`` + ``pytorch_model.bin``) into ``folder``."""
    import torch
    from snac import SNAC

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    atomic.write_json(folder / "config.json", TINY_SNAC)
    torch.manual_seed(seed)
    codec = SNAC(**TINY_SNAC).eval()
    seed_codebooks(codec, seed)
    with atomic.atomic_path(folder / "pytorch_model.bin") as tmp:
        torch.save(codec.state_dict(), tmp)
    return folder


def seed_codebooks(codec, seed: int = 0) -> None:
    """Set each quantizer's codebook to latents the encoder gives for a gliding, pulsing tone with noise, as a VQ
    codebook is initialised from data. With random codebooks a random encoder's latents all land on two or three
    codes, every frame repeats the last, and Orpheus's repeated-frame removal leaves nothing to train on; seeded
    this way, 3 s of espeak-ng speech uses about 20 of the 64 coarse codes and few frames repeat."""
    import numpy as np
    import torch

    rate = TINY_SNAC["sampling_rate"]
    t = np.arange(rate * 8) / rate
    pitch = 100 + 400 * (0.5 + 0.5 * np.sin(2 * np.pi * 0.3 * t))
    noise = np.random.default_rng(seed).standard_normal(t.size)
    signal = 0.3 * np.sin(2 * np.pi * np.cumsum(pitch) / rate) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t)) + 0.05 * noise
    generator = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        residual = codec.encoder(codec.preprocess(torch.tensor(signal, dtype=torch.float32)[None, None]))
        for quantizer in codec.quantizer.quantizers:
            pooled = torch.nn.functional.avg_pool1d(residual, quantizer.stride, quantizer.stride)
            latents = quantizer.in_proj(pooled)[0].T
            chosen = torch.randperm(latents.shape[0], generator=generator)[:quantizer.codebook_size]
            quantizer.codebook.weight.copy_(latents[chosen])
            residual = residual - quantizer(residual)[0]


def build_tiny_orpheus(folder: str | os.PathLike[str], seed: int = 0) -> Path:
    """Write a tiny random Orpheus base folder into ``folder`` (created if needed) and return it."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    from alltalk_gui.core.engines.orpheus.tokens import SpecialTokens

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(TINY_SNAC["codebook_size"])
    special = SpecialTokens.from_tokenizer(tokenizer, TINY_SNAC["codebook_size"])
    vocab = len(tokenizer) + (-len(tokenizer)) % 8  # padded, as Orpheus's 156,940 pads its 156,938 tokens
    config = LlamaConfig(**TINY_LLAMA, vocab_size=vocab, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=special.end_of_speech, pad_token_id=special.pad)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(bos_token_id=tokenizer.bos_token_id, eos_token_id=special.end_of_speech,
                                               pad_token_id=special.pad)
    model.save_pretrained(str(folder), safe_serialization=True)
    tokenizer.save_pretrained(str(folder))
    build_tiny_codec(folder / CODEC_DIR, seed)
    info = {"what": "tiny random Orpheus-TTS test model (speaks noise, not a voice)", "seed": seed}
    atomic.write_text(folder / "README.md", json.dumps(info, indent=2) + "\n")
    return folder
