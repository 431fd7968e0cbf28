"""Several GPUs for Orpheus: the FSDP config the app writes is one accelerate's launcher reads (transformer-based
wrap on the decoder layers, sharded checkpoints, loopback); and two CPU processes (gloo) train the tiny model
under FSDP as that config asks (:mod:`.fsdp_run`), save a sharded checkpoint, resume it exactly, train what one
unsharded process trains, and the export gathers the shards into the full weights."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch
import yaml

from alltalk_gui.core.engine_api.engine import get_engine
from alltalk_gui.core.engines.orpheus.fsdp import fsdp_config, write_fsdp_config
from alltalk_gui.core.training.checkpoints import CONFIG_FILE, STATE_FILE, read_checkpoint
from alltalk_gui.core.training.config import TrainConfig
from tests.core.engines.orpheus.fsdp_run import SAVE_AT, STEPS, launcher_env


def test_the_config_is_one_accelerate_reads(tmp_path):
    path = write_fsdp_config(tmp_path / "fsdp.yaml", 4, "bf16")
    assert yaml.safe_load(path.read_text())["num_processes"] == 4
    env = launcher_env(str(path))
    assert env["ACCELERATE_USE_FSDP"] == "true" and env["ACCELERATE_MIXED_PRECISION"] == "bf16"
    assert env["FSDP_AUTO_WRAP_POLICY"] == "TRANSFORMER_BASED_WRAP"
    assert env["FSDP_TRANSFORMER_CLS_TO_WRAP"] == "LlamaDecoderLayer"
    assert env["FSDP_STATE_DICT_TYPE"] == "SHARDED_STATE_DICT" and env["FSDP_SHARDING_STRATEGY"] == "FULL_SHARD"
    assert fsdp_config(2)["main_process_ip"] == "127.0.0.1"
    with pytest.raises(ValueError):
        fsdp_config(1)
    # What the app writes into a run's folder (Engine.accelerate_config): FSDP for a full fine-tune on several
    # processes; a LoRA run fits one card each and a single process needs none: accelerate's default.
    engine, full = get_engine("orpheus"), TrainConfig(engine="orpheus", mixed_precision="bf16")
    assert engine.accelerate_config(full, 2) == fsdp_config(2, "bf16")
    assert engine.accelerate_config(full, 1) is None
    assert engine.accelerate_config(replace(full, lora_rank=16), 2) is None


def run(config: Path, base: Path, dataset: Path, out: Path) -> None:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    result = subprocess.run([sys.executable, "-m", "tests.core.engines.orpheus.fsdp_run", str(config),
                             str(base), str(dataset), str(out)], env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.mark.slow
def test_two_cpu_processes_train_resume_and_gather(tiny_orpheus, project, tmp_path):
    from alltalk_gui.core.engines.orpheus import codec as snac
    from alltalk_gui.core.engines.orpheus.data import collate, load_audio, load_dataset, make_samples
    from alltalk_gui.core.engines.orpheus.files import load_tokenizer, special_tokens, validate_base_model
    from alltalk_gui.core.engines.orpheus.model import OrpheusLM, load_lm, loss
    from alltalk_gui.core.engines.orpheus.tuned import FSDP_WEIGHTS, checkpoint_state

    config = write_fsdp_config(tmp_path / "fsdp.yaml", 2, "no")
    run(config, tiny_orpheus, project / "dataset", tmp_path)  # a straight run, then a resume from its checkpoint
    straight = torch.load(tmp_path / f"straight_step{STEPS}.pt", weights_only=True)
    resumed = torch.load(tmp_path / f"resume_step{STEPS}.pt", weights_only=True)
    assert straight["units"] == 3  # the root (embedding, tied output, norm, loss) and one unit per decoder layer
    assert (tmp_path / "checkpoint" / FSDP_WEIGHTS).is_dir() and (tmp_path / "checkpoint" / "optimizer_0").is_dir()
    for key, value in straight["state"].items():
        torch.testing.assert_close(resumed["state"][key], value, msg=key)  # a resume equals the straight run

    # With what the loop writes beside the shards, the sharded save is a complete checkpoint for preview, export
    # and resume (accelerate writes no model.safetensors under FSDP).
    saved = tmp_path / "checkpoint"
    (saved / CONFIG_FILE).write_text(json.dumps(TrainConfig(engine="orpheus").to_dict()), encoding="utf-8")
    (saved / STATE_FILE).write_text(json.dumps({"global_step": SAVE_AT, "epoch": 0}), encoding="utf-8")
    assert read_checkpoint(saved).step == SAVE_AT

    # The export's gathering of the sharded checkpoint gives the weights FSDP itself gathers at that step.
    gathered = checkpoint_state(tmp_path / "checkpoint")
    at_save = torch.load(tmp_path / f"straight_step{SAVE_AT}.pt", weights_only=True)["state"]
    assert set(gathered) <= set(at_save) and "lm.model.embed_tokens.weight" in gathered
    for key, value in gathered.items():
        torch.testing.assert_close(value, at_save[key], msg=key)

    # FSDP over two processes trains what one process trains on both clips (gradients averaged).
    info = validate_base_model(tiny_orpheus)
    tokenizer = load_tokenizer(tiny_orpheus)
    special = special_tokens(tiny_orpheus, info.codec, tokenizer)
    train, _ = load_dataset(project / "dataset", tokenizer, special, info.codec, info.context, min_seconds=1.0,
                            max_seconds=30.0)
    codec = snac.load_codec(info.codec_dir)
    samples = make_samples(train[:2], special, lambda p: snac.encode(codec, load_audio(p, 24000)))
    torch.manual_seed(0)
    model = OrpheusLM(load_lm(tiny_orpheus, "fp32"), special)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for _ in range(STEPS):
        value = sum(loss(model, collate([s], special.pad))["loss"] for s in samples) / 2
        value.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    for key, value in model.state_dict().items():
        torch.testing.assert_close(straight["state"][key], value, rtol=1e-4, atol=1e-5, msg=key)
