"""Range checks on a base model's ``config.json`` before any model is built from it.

The shape-only GPT that :func:`alltalk_gui.core.engines.xtts.files.validate_base_model` builds to compare
tensor shapes costs time and memory in proportion to the numbers in ``config.json``: a shared or damaged
config with ``gpt_layers=2000`` took 8 s and 875 MB before its weights were found not to match. Each value the
model is built from is checked here first against a range that holds every real XTTS v2 (30 layers, width 1024,
16 heads, 402 text / 605 audio positions, 1026 or 8194 audio tokens) and the tiny test model (2 layers, width
64, 4 heads), with a wide margin either way.
"""

from __future__ import annotations

from typing import Any

# model_args field -> (smallest, largest) accepted value; all are whole numbers.
LIMITS: dict[str, tuple[int, int]] = {
    "gpt_layers": (1, 128),
    "gpt_n_model_channels": (8, 8192),
    "gpt_n_heads": (1, 128),
    "gpt_max_text_tokens": (1, 8192),
    "gpt_max_audio_tokens": (1, 16384),
    "gpt_max_prompt_tokens": (1, 4096),
    "gpt_num_audio_tokens": (3, 65536),
    "gpt_start_audio_token": (0, 65535),
    "gpt_stop_audio_token": (0, 65535),
    "gpt_number_text_tokens": (1, 262144),
    "gpt_start_text_token": (0, 262143),
    "gpt_stop_text_token": (0, 262143),
    "gpt_code_stride_len": (1, 65536),
    "input_sample_rate": (8000, 192000),
    "output_sample_rate": (8000, 192000),
    "output_hop_length": (1, 8192),
    "decoder_input_dim": (1, 8192),
    "d_vector_dim": (1, 8192),
}
OPTIONAL = {"gpt_number_text_tokens", "gpt_start_text_token", "gpt_stop_text_token"}  # filled from vocab.json


def range_errors(raw_model_args: Any, defaults: Any) -> list[str]:
    """What is out of range in config.json's ``model_args``, one phrase per problem; empty when fine.

    Args:
        raw_model_args: the ``model_args`` object as read from the JSON file. Checked before coqui reads it:
            coqpit replaces a whole ``model_args`` holding one value of the wrong type by its defaults (the
            full-size model), with only a warning.
        defaults: coqui's ``XttsArgs()``, for the values the file leaves out.
    """
    if not isinstance(raw_model_args, dict):
        return [f"model_args must be an object, not {type(raw_model_args).__name__}"]
    model_args = {name: raw_model_args.get(name, getattr(defaults, name, None)) for name in LIMITS}
    errors = []
    for name, (low, high) in LIMITS.items():
        value = model_args[name]
        if value is None and name in OPTIONAL:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            errors.append(f"{name} must be a whole number, not {value!r}")
        elif not low <= value <= high:
            errors.append(f"{name}={value} is outside {low}..{high}")
    if not errors:
        if model_args["gpt_n_model_channels"] % model_args["gpt_n_heads"]:
            errors.append(f"gpt_n_model_channels={model_args['gpt_n_model_channels']} is not divisible by "
                          f"gpt_n_heads={model_args['gpt_n_heads']}")
        for name in ("gpt_start_audio_token", "gpt_stop_audio_token"):
            if model_args[name] >= model_args["gpt_num_audio_tokens"]:
                errors.append(f"{name}={model_args[name]} is not below gpt_num_audio_tokens="
                              f"{model_args['gpt_num_audio_tokens']}")
    return errors
