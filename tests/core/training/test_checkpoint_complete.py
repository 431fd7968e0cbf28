"""When a checkpoint folder counts as complete: one weights file (a single process, DDP) or an FSDP run's sharded
folder once torch's checkpoint writer finished it (its ``.metadata``, written after every shard); a folder missing
its state, its config or its weights, or a sharded folder still being written, never does. The Orpheus gloo test
(tests/core/engines/orpheus/test_fsdp.py) reads a real sharded save the same way."""

from __future__ import annotations

import json

import pytest

from alltalk_gui.core.training.checkpoints import (CONFIG_FILE, FSDP_DONE, FSDP_WEIGHTS, STATE_FILE, WEIGHTS_FILE,
                                                   CheckpointError, read_checkpoint, run_checkpoints)
from alltalk_gui.core.training.config import TrainConfig


def _checkpoint(run, step, weights, state=True, config=True):
    folder = run / "checkpoints" / f"step_{step:07d}"
    folder.mkdir(parents=True)
    if config:
        (folder / CONFIG_FILE).write_text(json.dumps(TrainConfig(engine="orpheus").to_dict()), encoding="utf-8")
    if weights == "file":
        (folder / WEIGHTS_FILE).write_bytes(b"weights")
    elif weights in ("sharded", "partial"):
        (folder / FSDP_WEIGHTS).mkdir()
        (folder / FSDP_WEIGHTS / "__0_0.distcp").write_bytes(b"shard")
        if weights == "sharded":
            (folder / FSDP_WEIGHTS / FSDP_DONE).write_bytes(b"metadata")
    if state:
        (folder / STATE_FILE).write_text(json.dumps({"global_step": step, "epoch": 1}), encoding="utf-8")
    return folder


def test_an_fsdp_checkpoint_is_complete_as_an_ordinary_one_is(tmp_path):
    run = tmp_path / "runs" / "r"
    ordinary, sharded = _checkpoint(run, 10, "file"), _checkpoint(run, 20, "sharded")
    assert read_checkpoint(sharded).step == 20 and read_checkpoint(sharded).engine == "orpheus"
    assert read_checkpoint(ordinary).step == 10
    assert [c.step for c in run_checkpoints(run)] == [10, 20]


@pytest.mark.parametrize("weights, state, config, missing", [
    (None, True, True, WEIGHTS_FILE),            # no weights at all
    ("partial", True, True, FSDP_DONE),          # shards still being written (or a save that died)
    ("sharded", False, True, STATE_FILE),        # the loop writes train_state.json last
    ("sharded", True, False, CONFIG_FILE),
    ("file", False, True, STATE_FILE),
])
def test_a_partial_checkpoint_is_never_complete(tmp_path, weights, state, config, missing):
    run = tmp_path / "runs" / "r"
    folder = _checkpoint(run, 30, weights, state=state, config=config)
    with pytest.raises(CheckpointError, match=missing):
        read_checkpoint(folder)
    assert run_checkpoints(run) == []


def test_a_new_optimizer_gets_its_state_before_a_sharded_load_without_moving_a_weight():
    """What the loop's FSDP resume does before accelerate's load (which fills only state the optimizer holds)."""
    import torch

    from alltalk_gui.core.training.levers import init_optimizer_state

    model = torch.nn.Linear(3, 2)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    init_optimizer_state(optimizer)
    assert {len(optimizer.state[p]) for p in model.parameters()} == {3}  # step, exp_avg, exp_avg_sq
    assert all(float(optimizer.state[p]["exp_avg_sq"].abs().sum()) == 0.0 for p in model.parameters())
    for key, value in model.state_dict().items():
        torch.testing.assert_close(value, before[key], rtol=0, atol=0)
    assert optimizer.param_groups[0]["lr"] == 1e-2 and all(p.grad is None for p in model.parameters())
