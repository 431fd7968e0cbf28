"""Build coqui's XTTS ``GPT`` with a given architecture (no weights).

Its own module because both :mod:`~alltalk_gui.core.engines.xtts.files` (which checks a base model's tensor shapes
against the GPT its config calls for) and :mod:`~alltalk_gui.core.engines.xtts.model` (which loads weights into it)
build one; neither imports the other for it.
"""

from __future__ import annotations

import logging
import re

from torch import nn


class _PlaceholderTokenIds(logging.Filter):
    """Drops transformers' remark that a coqui GPT-2 config's bos/eos token id (50256) lies outside its vocabulary.

    coqui builds its GPT-2 configs with GPT-2's default bos/eos ids and a ``vocab_size`` that only sizes the
    position tables (256 for training, the audio codes for inference); its own start/stop tokens are separate,
    and the ids are never read. transformers 5 printed "Model config: bos_token_id must be `None` or an integer
    within the vocabulary (between 0 and 255), got 50256. This may result in unexpected behavior." on every XTTS
    train, preview and export: a warning nobody can act on.
    """

    PATTERN = re.compile(r"Model config: (bos|eos)_token_id must be .* got 50256\.")

    def filter(self, record: logging.LogRecord) -> bool:
        return not self.PATTERN.search(record.getMessage())


# Installed on import: every GPT coqui builds in this process (training, previews, exports) comes after it.
logging.getLogger("transformers.configuration_utils").addFilter(_PlaceholderTokenIds())


def build_gpt(config, tokenizer, checkpointing: bool = False) -> nn.Module:
    """coqui's ``GPT`` with the architecture in ``config.model_args`` and the tokenizer's text tokens.

    Mirrors ``Xtts.init_models``, which takes the number of text tokens and the start/stop ids from the
    tokenizer rather than from config.json.
    """
    return build_gpt_from_args(
        config.model_args, number_text_tokens=tokenizer.get_number_tokens(),
        start_text_token=tokenizer.tokenizer.token_to_id("[START]"),
        stop_text_token=tokenizer.tokenizer.token_to_id("[STOP]"), checkpointing=checkpointing,
    )


def build_gpt_from_args(args, *, number_text_tokens: int, start_text_token: int, stop_text_token: int,
                        checkpointing: bool = False) -> nn.Module:
    """coqui's ``GPT`` from ``XttsArgs`` and explicit text-token numbers (benchmarks build the real-size GPT
    this way without a vocabulary file)."""
    from TTS.tts.layers.xtts.gpt import GPT

    return GPT(
        layers=args.gpt_layers,
        model_dim=args.gpt_n_model_channels,
        start_text_token=start_text_token,
        stop_text_token=stop_text_token,
        heads=args.gpt_n_heads,
        max_text_tokens=args.gpt_max_text_tokens,
        max_mel_tokens=args.gpt_max_audio_tokens,
        max_prompt_tokens=args.gpt_max_prompt_tokens,
        number_text_tokens=number_text_tokens,
        num_audio_tokens=args.gpt_num_audio_tokens,
        start_audio_token=args.gpt_start_audio_token,
        stop_audio_token=args.gpt_stop_audio_token,
        use_perceiver_resampler=args.gpt_use_perceiver_resampler,
        code_stride_len=args.gpt_code_stride_len,
        checkpointing=checkpointing,
    )
