"""Issue 18 item 12: a base model's config.json is range-checked before anything is built from it."""

from __future__ import annotations

import json
import shutil
import time
import tracemalloc

import pytest

from alltalk_gui.core.engines.xtts.files import BaseModelError, load_xtts_config, validate_base_model


def _copy_with(tiny, tmp_path, **model_args):
    base = tmp_path / "base"
    shutil.copytree(tiny, base)
    config = json.loads((base / "config.json").read_text())
    config["model_args"].update(model_args)
    (base / "config.json").write_text(json.dumps(config))
    return base


def test_gpt_layers_2000_is_refused_at_once_without_building_anything(tiny, tmp_path):
    base = _copy_with(tiny, tmp_path, gpt_layers=2000)
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(BaseModelError, match=r"gpt_layers=2000 is outside 1\.\.128.*came with model\.pth"):
            validate_base_model(base)
        seconds, (_, peak) = time.perf_counter() - started, tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Reported: 8 s and 875 MB spent building a 2000-layer shape-only GPT before the refusal.
    assert seconds < 2.0 and peak < 50e6


@pytest.mark.parametrize("changes, words", [
    ({"gpt_n_model_channels": 10**6}, "gpt_n_model_channels=1000000 is outside"),
    ({"gpt_n_heads": 0}, "gpt_n_heads=0 is outside"),
    ({"gpt_n_model_channels": 66}, "not divisible by gpt_n_heads=4"),
    ({"gpt_max_audio_tokens": -1}, "gpt_max_audio_tokens=-1 is outside"),
    ({"gpt_stop_audio_token": 64}, "gpt_stop_audio_token=64 is not below gpt_num_audio_tokens=64"),
    ({"gpt_layers": "30"}, "gpt_layers must be a whole number"),
    ({"gpt_layers": True}, "gpt_layers must be a whole number"),
    ({"output_sample_rate": 10**9}, "output_sample_rate=1000000000 is outside"),
])
def test_out_of_range_values_are_named(tiny, tmp_path, changes, words):
    with pytest.raises(BaseModelError, match=words):
        load_xtts_config(_copy_with(tiny, tmp_path, **changes))


def test_the_tiny_and_the_real_shapes_are_in_range(tiny, tmp_path):
    load_xtts_config(tiny)
    real = {"gpt_layers": 30, "gpt_n_model_channels": 1024, "gpt_n_heads": 16, "gpt_num_audio_tokens": 1026,
            "gpt_start_audio_token": 1024, "gpt_stop_audio_token": 1025, "gpt_max_text_tokens": 402,
            "gpt_max_audio_tokens": 605, "gpt_number_text_tokens": 6681}
    load_xtts_config(_copy_with(tiny, tmp_path, **real))
