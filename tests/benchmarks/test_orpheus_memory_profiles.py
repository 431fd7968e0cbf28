"""The Orpheus benchmark's random base folder (``benchmarks/orpheus_memory_profiles.py --write-base``), which the GPU
kit writes during call 2's tests for call 3: a complete write is a base folder transformers loads; a write that is
stopped leaves nothing that looks whole, and the next write finishes it. A narrow Llama stands in for the real
config (the real one is 6.6 GB of shards)."""

from __future__ import annotations

import json

import pytest

from alltalk_gui.core.engines.orpheus import memory_estimate
from tests.benchmarks.scripts import load_script

SCRIPT = load_script("orpheus_memory_profiles.py")
NARROW = dict(memory_estimate.ORPHEUS_3B_CONFIG, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
              num_attention_heads=2, num_key_value_heads=1, head_dim=32, vocab_size=512)


@pytest.fixture
def narrow(monkeypatch):
    monkeypatch.setattr(memory_estimate, "ORPHEUS_3B_CONFIG", NARROW)


def test_write_base_writes_a_folder_transformers_loads(narrow, tmp_path, capsys):
    from transformers import AutoModelForCausalLM

    base = tmp_path / "base"
    assert SCRIPT.main(["--base", str(base), "--write-base", "--device", "cpu"]) == 0
    assert "random base ready" in capsys.readouterr().out
    assert json.loads((base / "config.json").read_text())["hidden_size"] == 64
    assert not (tmp_path / "base.partial").exists()
    lm = AutoModelForCausalLM.from_pretrained(str(base), local_files_only=True)
    assert sum(p.numel() for p in lm.parameters()) > 0


def test_a_stopped_write_leaves_no_base_and_the_next_one_finishes(narrow, tmp_path, monkeypatch):
    import safetensors.torch

    base = tmp_path / "base"
    real_save = safetensors.torch.save_file

    def stopped(*_args, **_kwargs):
        raise KeyboardInterrupt  # the kit's time limit interrupts the writer like Ctrl+C

    monkeypatch.setattr(safetensors.torch, "save_file", stopped)
    with pytest.raises(KeyboardInterrupt):
        SCRIPT.write_random_base(base, "orpheus_3b")
    assert not base.exists()  # call 3 would write it again rather than load half of it
    monkeypatch.setattr(safetensors.torch, "save_file", real_save)
    assert SCRIPT.write_random_base(base, "orpheus_3b") == base
    assert (base / "config.json").is_file() and (base / "model.safetensors.index.json").is_file()
    assert not (tmp_path / "base.partial").exists()


def test_write_base_needs_a_folder():
    with pytest.raises(SystemExit):
        SCRIPT.parse_args(["--write-base"])


def test_a_case_trains_as_many_clips_a_micro_batch_as_it_names():
    """Until the H200's third run every case collated one clip whatever its micro-batch (its records' "8 x 1" and
    "4 x 2" each trained one clip a micro-step): a micro-batch of 3 is 3 clips, each scored from its audio."""
    special = SCRIPT.special_tokens(memory_estimate.ORPHEUS_3B_CONFIG)
    batch = SCRIPT.random_batch(special, 2.0, 1000, clips=3)
    clips, n = batch["input_ids"].shape
    assert clips == 3 and abs(n - memory_estimate.tokens(2.0)) <= 7 and int(batch["attention_mask"].sum()) == 3 * n
    assert (batch["labels"][:, :SCRIPT.PROMPT_TOKENS] == -100).all() and (batch["labels"][:, -1] >= 0).all()
    assert not (batch["input_ids"][0] == batch["input_ids"][1]).all()  # clips of their own
