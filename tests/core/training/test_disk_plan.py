"""Issue 29 item 2, before training: what a run's checkpoints and an export need, against the free space.

Each engine says how big one checkpoint of a config is (:meth:`Engine.disk_needs`), from its base model's files
without loading them; the plan multiplies by the checkpoints on disk at once (those kept, the best, the one being
written) and adds an export. The real models' figures are checked on folders whose weights are sparse files of
the real sizes (nothing is written), the tiny model's against a checkpoint it really wrote.
"""

from __future__ import annotations

import json
import shutil
from collections import namedtuple
from pathlib import Path

import pytest

from alltalk_gui.core.engine_api.engine import get_engine
from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.disk_plan import plan_disk

GB = 1e9
# config.json's architecture of the published XTTS v2 (the fields the size is counted from).
XTTS_V2_ARGS = dict(gpt_n_model_channels=1024, gpt_layers=30, gpt_number_text_tokens=6681, gpt_num_audio_tokens=1026,
                    gpt_max_audio_tokens=605, gpt_max_text_tokens=402, gpt_use_perceiver_resampler=True)


def _sparse(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(size)  # the size, not the bytes: nothing is written


@pytest.fixture
def xtts_v2(tmp_path) -> Path:
    folder = tmp_path / "xtts_v2"
    _sparse(folder / "model.pth", 1_867_929_118)  # the published model.pth
    _sparse(folder / "dvae.pth", 210_514_388)
    (folder / "config.json").write_text(json.dumps({"model_args": XTTS_V2_ARGS}), encoding="utf-8")
    for name in ("vocab.json", "mel_stats.pth"):
        (folder / name).write_bytes(b"x" * 1000)
    return folder


@pytest.fixture
def f5_v1(tmp_path) -> Path:
    folder = tmp_path / "f5"
    _sparse(folder / "model_1250000.safetensors", 1_348_389_000)  # F5 v1 Base's EMA weights, fp32
    _sparse(folder / "vocos" / "pytorch_model.bin", 54_365_000)
    (folder / "vocos" / "config.yaml").write_text("x", encoding="utf-8")
    (folder / "vocab.txt").write_text(" \na\n", encoding="utf-8")
    return folder


@pytest.mark.parametrize("settings, low, high", [
    ({}, 5.2, 5.4),                                    # the whole GPT: 1.76 GB of weights + 3.53 GB of AdamW moments
    ({"freeze_conditioning": True}, 4.8, 5.0),         # no moments for the 46 M conditioning parameters
    ({"optimizer": "adamw8bit"}, 2.6, 2.7),            # 8-bit moments: 2 bytes per parameter
    ({"lora_rank": 16}, 1.77, 1.9),                    # the weights, and the adapters' moments only
])
def test_xtts_v2_checkpoint_sizes(xtts_v2, settings, low, high):
    needs = get_engine("xtts").disk_needs(TrainConfig(base_model_dir=str(xtts_v2)).with_values(settings))
    assert low * GB <= needs.checkpoint_bytes <= high * GB, needs.checkpoint_bytes / GB
    assert 2.07 * GB <= needs.export_bytes <= 2.09 * GB  # model.pth and dvae.pth (AllTalk's format carries it)


@pytest.mark.parametrize("settings, low, high", [
    ({}, 4.0, 4.1),                                    # fp32 weights + AdamW moments
    ({"ema_decay": 0.999}, 5.35, 5.45),                # + the EMA copy
    ({"lora_rank": 32, "optimizer": "adamw8bit"}, 1.35, 1.4),
])
def test_f5_checkpoint_sizes(f5_v1, settings, low, high):
    needs = get_engine("f5").disk_needs(TrainConfig(engine="f5", base_model_dir=str(f5_v1)).with_values(settings))
    assert low * GB <= needs.checkpoint_bytes <= high * GB, needs.checkpoint_bytes / GB
    assert 1.40 * GB <= needs.export_bytes <= 1.41 * GB


def test_no_base_model_no_plan(tmp_path):
    assert get_engine("xtts").disk_needs(TrainConfig(base_model_dir=str(tmp_path))) is None
    assert plan_disk(TrainConfig(base_model_dir=str(tmp_path), project_dir=str(tmp_path), run_name="r")) is None


Usage = namedtuple("Usage", "total used free")


def test_the_plan_counts_kept_best_and_the_one_being_written_and_finds_what_fits(xtts_v2, tmp_path, monkeypatch):
    config = TrainConfig(base_model_dir=str(xtts_v2), project_dir=str(tmp_path / "p"), run_name="r", keep_last=3)
    one = get_engine("xtts").disk_needs(config)
    free = int(one.export_bytes + 3.5 * one.checkpoint_bytes)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(10**13, 0, free))
    plan = plan_disk(config)
    assert plan.checkpoints == 5 and plan.folder == tmp_path / "p" / "runs" / "r" / "checkpoints"
    assert plan.needed_bytes() == 5 * one.checkpoint_bytes + one.export_bytes and not plan.enough
    assert plan.keep_last_that_fits() == 1  # 1 kept + the best + one being written = 3 of them
    warning = plan.warning()
    assert warning.startswith("Not enough free disk space for this run.")
    assert "5 checkpoints of about 5.29 GB (3 kept + the best + one being written)" in warning
    assert "Keeping 1 checkpoint instead of 3 would fit" in warning and str(plan.folder) in warning

    config.eval_each_epoch = False  # no evals: no best checkpoint besides the newest
    assert plan_disk(config).keep_last_that_fits() == 2


def test_a_resumed_run_counts_its_own_checkpoints(xtts_v2, tmp_path):
    config = TrainConfig(base_model_dir=str(xtts_v2), project_dir=str(tmp_path / "p"), run_name="r")
    step = config.run_dir / "checkpoints" / "step_0000010"
    step.mkdir(parents=True)
    (step / "train_state.json").write_text(json.dumps({"global_step": 10}), encoding="utf-8")
    (step / "train_config.json").write_text(json.dumps({"base_model_dir": "", "language": "en"}), encoding="utf-8")
    _sparse(step / "model.safetensors", 3 * 10**9)
    plan = plan_disk(config)
    assert plan.existing == 1 and plan.checkpoint_bytes >= 3 * 10**9  # the run's own size, not the estimate
    assert plan.needed_bytes() == 3 * plan.checkpoint_bytes + plan.export_bytes
