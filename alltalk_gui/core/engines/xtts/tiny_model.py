"""A tiny, randomly initialised XTTS v2 base-model folder for tests and smoke runs.

It has the real folder's file set (``model.pth``, ``config.json``, ``vocab.json``, ``dvae.pth``,
``mel_stats.pth``) and loads through exactly the code paths a real base model does, but every network is
small and random: a 2-layer GPT of width 64, a narrow DVAE with 62 audio codes, a BPE vocabulary of about 600
tokens trained here with ``tokenizers``. It speaks noise; it never pretends to be a voice, and its
``config.json`` says so in ``run_description``.

The vocabulary covers all 17 XTTS languages: it is trained on sample sentences of each one after XTTS's own
text cleaning (so Chinese arrives as pinyin with tone digits, Japanese as romaji, Korean romanised), its alphabet
holds the letters of every script the cleaned texts use (Latin with the accents of the European languages,
Cyrillic, Arabic, Devanagari), and it keeps XTTS's special tokens and one ``[code]`` token per language.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

from alltalk_gui.core import atomic

# Small enough that a CPU step takes well under a second, large enough to exercise every code path
# (perceiver resampler, conditioning encoder, masking of the conditioning segment).
TINY = {
    "gpt_layers": 2,
    "gpt_n_model_channels": 64,
    "gpt_n_heads": 4,
    "gpt_num_audio_tokens": 64,  # 62 DVAE codes + start + stop
    "gpt_start_audio_token": 62,
    "gpt_stop_audio_token": 63,
    "gpt_use_perceiver_resampler": True,
    "gpt_use_masking_gt_prompt_approach": True,
    "decoder_input_dim": 64,  # HiFi-GAN takes the GPT's latents, so it follows the GPT width
}
TINY_DVAE = {"codebook_dim": 32, "hidden_dim": 32, "num_resnet_blocks": 1}

_SPECIALS = ["[STOP]", "[UNK]", "[SPACE]"]
_CORPUS = (
    "the quick brown fox jumps over the lazy dog. a voice model learns from a few minutes of speech, "
    "one clip at a time! is it ready? yes: it's training now; twenty one, two, three, four, five. "
    "pack my box with five dozen liquor jugs. how vexingly quick daft zebras jump. sphinx of black quartz, "
    "judge my vow. hello world - this is a test of the tiny model."
)
# Every letter the cleaned text of an XTTS language may hold, so any sentence of the shipped samples, and most
# others, encode without [UNK]: Latin with the European languages' accents, Cyrillic, Arabic, Devanagari.
_LATIN = "abcdefghijklmnopqrstuvwxyzßàáâãäåæçèéêëìíîïñòóôõöøùúûüýÿąćčďęěğıłńňőœřśşšťůűźżž"
_CYRILLIC = "абвгдеёжзийклмнопрстуфхцчшщъыьэюяіїєґ"
_ARABIC = "".join(map(chr, range(0x0621, 0x064B))) + "".join(map(chr, range(0x064B, 0x0653))) + "ٰٱپچژکگی"
_DEVANAGARI = "".join(chr(c) for c in range(0x0900, 0x0980) if unicodedata.name(chr(c), ""))
_PUNCTUATION = "0123456789.,!?'-;:\"()¡¿«»،؟؛।॥"
TINY_VOCAB_SIZE = 600


# XTTS's cleaning of the Japanese samples (cutlet's romaji, with unidic-lite's dictionary), written out so that
# building the tiny model needs neither MeCab nor its 48 MB dictionary: only Japanese text itself does (the GPU
# kit carries no dictionary). tests/core/engines/test_xtts_languages.py checks it is still what cleaning gives.
CLEANED_JAPANESE_SAMPLES = ("kyou wa ii tenki desu ne.", "furui minato made arukimashita.", "arigatou, mata asu!")


def _training_text() -> list[str]:
    """The corpus the tiny BPE learns from: English test sentences plus every language's samples, cleaned."""
    from alltalk_gui.core.engines.xtts.sample_sentences import SAMPLE_SENTENCES
    from alltalk_gui.core.engines.xtts.text_check import TextChecker

    texts = [_CORPUS] * 4
    for code, sentences in SAMPLE_SENTENCES.items():
        cleaned = CLEANED_JAPANESE_SAMPLES if code == "ja" else [TextChecker(code).cleaned(s) for s in sentences]
        texts += list(cleaned) * 2
    return texts


def build_tiny_vocab(path: str | os.PathLike[str]) -> None:
    """Train a small byte-pair vocabulary with the special tokens XTTS expects and write it to ``path``."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from TTS.tts.configs.xtts_config import XttsConfig

    languages = [f"[{lang}]" for lang in XttsConfig().languages]
    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    texts = _training_text()
    alphabet = sorted(set(_LATIN + _CYRILLIC + _ARABIC + _DEVANAGARI + _PUNCTUATION).union(*map(set, texts)) - {" "})
    trainer = trainers.BpeTrainer(
        vocab_size=TINY_VOCAB_SIZE,
        # [START] last, like the real vocabulary, so the GPT's text tokens are 0 .. id([START]).
        special_tokens=_SPECIALS + languages + ["[START]"],
        initial_alphabet=alphabet,
        limit_alphabet=len(alphabet),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    with atomic.atomic_path(path) as tmp:
        tokenizer.save(str(tmp))


def write_config(folder: Path, model_args: dict, tokenizer, description: str):
    """Write ``folder/config.json``: an XTTS v2 config with ``model_args`` (the GPT's architecture) over
    ``tokenizer``'s vocabulary (``vocab.json`` in the same folder); returns the config."""
    from TTS.tts.configs.xtts_config import XttsConfig

    config = XttsConfig()
    for key, value in model_args.items():
        setattr(config.model_args, key, value)
    config.model_args.gpt_number_text_tokens = tokenizer.get_number_tokens()
    config.model_args.gpt_start_text_token = tokenizer.tokenizer.token_to_id("[START]")
    config.model_args.gpt_stop_text_token = tokenizer.tokenizer.token_to_id("[STOP]")
    config.model_args.tokenizer_file = "vocab.json"
    config.run_description = description
    atomic.write_json(folder / "config.json", config.to_dict())
    return config


def build_tiny_xtts(folder: str | os.PathLike[str], seed: int = 0) -> Path:
    """Write a tiny random XTTS v2 base model into ``folder`` (created if needed) and return the folder.

    Deterministic for a given ``seed``. Takes a few seconds: most of it is HiFi-GAN, whose size coqui fixes.
    """
    import torch
    from TTS.tts.layers.xtts.dvae import DiscreteVAE
    from TTS.tts.models.xtts import Xtts

    from alltalk_gui.core.engines.xtts import gpt  # noqa: F401 (drops transformers' remark on coqui's GPT-2 ids)
    from alltalk_gui.core.engines.xtts.files import load_tokenizer

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    build_tiny_vocab(folder / "vocab.json")
    tokenizer = load_tokenizer(folder)

    config = write_config(folder, TINY, tokenizer, "alltalk_gui tiny random test model: not a voice")

    torch.manual_seed(seed)
    model = Xtts(config)
    model.tokenizer = tokenizer
    model.init_models()
    # Log-mel magnitudes of speech sit around -1 .. -10; any non-zero constants normalise equally well here.
    mel_stats = torch.linspace(-2.0, -6.0, 80)
    model.mel_stats.copy_(mel_stats)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    with atomic.atomic_path(folder / "model.pth") as tmp:
        torch.save({"config": config.to_dict(), "model": state}, tmp)

    dvae = DiscreteVAE(
        channels=80, normalization=None, positional_dims=1, num_tokens=TINY["gpt_num_audio_tokens"] - 2,
        kernel_size=3, num_layers=2, use_transposed_convs=False, **TINY_DVAE,
    )
    with atomic.atomic_path(folder / "dvae.pth") as tmp:
        torch.save(dvae.state_dict(), tmp)
    with atomic.atomic_path(folder / "mel_stats.pth") as tmp:
        torch.save(mel_stats, tmp)
    return folder
