"""A tiny, randomly initialised Parler-TTS model folder for tests and smoke runs (it speaks noise, not a voice).

The real architecture at toy width, written by Parler's own ``save_pretrained`` into the layout of the Hub's
``parler-tts-mini-v1`` (see :mod:`.files`), so it goes through every path a real base model does: the folder
check, ``from_pretrained``, training, generation, export. Parler's decoder (2 layers, width 32, 9 DAC codebooks
of 1024 codes, Parler's special codes 1024/1025 and 64 spare ids, as Mini v1) and a Flan-T5-shaped encoder
(gated-GELU T5, 2 layers, width 32) are tiny. The DAC is DAC 44.1 kHz itself: Parler's DAC wrapper builds
Descript's ``DAC`` with its fixed widths whatever the config says, so only its latent width can shrink (63 M
parameters, 250 MB; the test session makes one and shares it). The tokenizer is a small byte-level BPE learnt from
a fixed English text with T5's special tokens (pad 0, eos 1, unk 2) and T5's habit of ending every text with
``</s>``: Flan-T5's own tokenizer cannot be downloaded where the tests run.

The generation config suppresses the spare ids (1025 and up) as :mod:`.synthesis` does: a trained model never
samples them, a random one would, and DAC cannot decode them.
"""

from __future__ import annotations

import os
from pathlib import Path

from alltalk_gui.core.engines.parler.files import CODEBOOK_SIZE, NUM_CODEBOOKS, SAMPLE_RATE

TINY_T5 = {"d_model": 32, "d_kv": 8, "d_ff": 64, "num_layers": 2, "num_heads": 4, "feed_forward_proj": "gated-gelu",
           "relative_attention_num_buckets": 8, "dropout_rate": 0.0}
TINY_DECODER = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "ffn_dim": 64,
                "max_position_embeddings": 4096, "dropout": 0.1}
TINY_DAC_LATENT = 64
TOKENIZER_VOCAB = 400
# What the tokenizer learns its merges from: plain English, the descriptions' words, the test sentences.
_CORPUS = (
    "Jenny speaks at a moderate speed with a slightly low-pitched voice, slightly expressive and animated. "
    "The recording is very clear and very close-sounding, almost no background noise, in a small room. "
    "Hello there, this is a short test of the voice. The quick brown fox jumps over the lazy dog. "
    "She sells sea shells by the sea shore; he reads a book of a hundred and twenty pages! What a day? "
    "numbers 0 1 2 3 4 5 6 7 8 9, and some names: Jon, Lea, Gary, Laura, Mike, Anna."
)


def build_tiny_tokenizer(folder: Path):
    """Write a T5-like fast tokenizer (tokenizer.json, tokenizer_config.json, special_tokens_map.json)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=TOKENIZER_VOCAB, special_tokens=["<pad>", "</s>", "<unk>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator([_CORPUS] * 4, trainer=trainer)
    tokenizer.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>", eos_token="</s>",
                                   unk_token="<unk>", model_max_length=512)
    fast.save_pretrained(str(folder))
    return fast


def build_tiny_parler(folder: str | os.PathLike[str], seed: int = 0) -> Path:
    """Write a tiny random Parler-TTS model folder into ``folder`` (created if needed) and return the folder.

    Deterministic for a given ``seed``. Runs in the engine's environment (:mod:`.environment`).
    """
    import torch

    from alltalk_gui.core.engines.parler.upstream import configs, model_class

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tiny_tokenizer(folder)
    vocab = len(tokenizer)
    parler_config, decoder_config, dac_config = configs()
    from transformers import T5Config

    t5 = T5Config(vocab_size=vocab, is_encoder_decoder=False, **TINY_T5)
    dac = dac_config(num_codebooks=NUM_CODEBOOKS, codebook_size=CODEBOOK_SIZE, latent_dim=TINY_DAC_LATENT,
                     model_bitrate=8, frame_rate=86, sampling_rate=SAMPLE_RATE)
    decoder = decoder_config(vocab_size=CODEBOOK_SIZE + 64, pad_token_id=CODEBOOK_SIZE, eos_token_id=CODEBOOK_SIZE,
                             bos_token_id=CODEBOOK_SIZE + 1, num_codebooks=NUM_CODEBOOKS, **TINY_DECODER)
    config = parler_config.from_sub_models_config(t5, dac, decoder, vocab_size=vocab, pad_token_id=CODEBOOK_SIZE,
                                                  decoder_start_token_id=CODEBOOK_SIZE + 1)
    torch.manual_seed(seed)
    model = model_class()(config).eval()
    generation = model.generation_config
    generation.decoder_start_token_id = CODEBOOK_SIZE + 1
    generation.bos_token_id = CODEBOOK_SIZE + 1
    generation.pad_token_id = generation.eos_token_id = CODEBOOK_SIZE
    generation.do_sample = True
    generation.max_length = 30 * 86
    generation.suppress_tokens = list(range(CODEBOOK_SIZE + 1, decoder.vocab_size))
    model.save_pretrained(str(folder))
    return folder
