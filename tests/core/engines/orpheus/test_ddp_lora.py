"""Orpheus's LoRA profiles on several cards train data-parallel (accelerate's DDP; only full fine-tunes use FSDP):
two CPU processes under ``accelerate launch`` (gloo) through the real child-process entry, with the profiles'
reentrant activation checkpointing and two micro-batches a step, end with the same adapters, which trained.
(The launched script is ``tests/core/training/test_train_multiprocess.py``, which saves each process's weights.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from alltalk_gui.core.training.config import TrainConfig

pytestmark = pytest.mark.slow
LAUNCHED = Path(__file__).parents[2] / "training" / "test_train_multiprocess.py"


def test_two_processes_train_the_same_adapters_with_checkpointing(project, tiny_orpheus, tmp_path):
    config = TrainConfig(engine="orpheus", project_dir=str(project), base_model_dir=str(tiny_orpheus), run_name="ddp",
                         device="cpu", language="en", epochs=1, batch_size=1, grad_accum_steps=2, lr=1e-2,
                         lr_batch=0, warmup_steps=0, lora_rank=4, lora_alpha=8.0, lora_dropout=0.0,
                         gradient_checkpointing=True, memory_interval_s=0.0, eval_each_epoch=False,
                         max_audio_seconds=30.0, min_audio_seconds=1.0).with_values({"base_weights": "fp32"})
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(config.to_dict()))
    out = tmp_path / "weights"
    out.mkdir()
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "2", "--num_machines", "1",
           "--multi_gpu", "--mixed_precision", "no", "--dynamo_backend", "no", str(LAUNCHED), str(config_file),
           str(out)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=Path(__file__).parents[4],
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rank0 = torch.load(out / "rank0.pt", weights_only=True)
    rank1 = torch.load(out / "rank1.pt", weights_only=True)
    adapters = [name for name in rank0 if "lora_B" in name]
    assert adapters and rank0.keys() == rank1.keys()
    for name in rank0:
        assert torch.equal(rank0[name], rank1[name]), name  # DDP averaged the gradients: identical updates
    first = [name for name in adapters if "layers.0." in name]
    assert first and all(rank0[name].abs().sum() > 0 for name in first)  # B starts at zero: the first layer learnt
