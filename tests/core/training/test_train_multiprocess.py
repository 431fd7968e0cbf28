"""Two CPU processes under ``accelerate launch`` (DDP over gloo): gradients synchronise, events are written once.

accelerate's ``--cpu`` launcher starts several processes only through MPI; without it, ``--multi_gpu`` (which
is torchrun) starts them, and ``Accelerator(cpu=True)`` (our ``device=cpu``) makes them a gloo process group.

The test launches this very file as the training script; run as a script (``__main__``) it trains through the
real child-process entry (:func:`alltalk_gui.core.training.runner.main`) and then saves its process's GPT weights, so
the test can compare the two processes' parameters.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from alltalk_gui.core.training.config import TrainConfig


def test_two_processes_stay_in_sync_and_write_events_once(tmp_path):
    import torch

    from alltalk_gui.core.engines.xtts.model import gpt_state_from_model_file
    from alltalk_gui.core.engines.xtts.tiny_model import build_tiny_xtts
    from alltalk_gui.testing.speech import make_speech_dataset

    tiny = build_tiny_xtts(tmp_path / "tiny")
    project = tmp_path / "project"
    make_speech_dataset(project / "dataset", n_train=4, n_eval=1)
    config = TrainConfig(project_dir=str(project), base_model_dir=str(tiny), run_name="ddp", device="cpu",
                         language="en", epochs=1, batch_size=1, lr=1e-3, warmup_steps=0,
                         options={"min_conditioning_seconds": 1.0, "max_conditioning_seconds": 2.0})
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(config.to_dict()))
    out = tmp_path / "weights"
    out.mkdir()
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "2", "--num_machines", "1",
           "--multi_gpu", "--mixed_precision", "no", "--dynamo_backend", "no", __file__, str(config_file), str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=400, env=env, cwd=Path(__file__).parents[3])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]

    rank0 = torch.load(out / "rank0.pt", weights_only=True)
    rank1 = torch.load(out / "rank1.pt", weights_only=True)
    base = gpt_state_from_model_file(tiny / "model.pth")
    assert rank0.keys() == rank1.keys()
    for name in rank0:
        assert torch.equal(rank0[name], rank1[name]), name  # DDP averaged the gradients: identical updates
    assert any(not torch.equal(rank0[n], base[n]) for n in rank0)  # and they did train

    lines = (project / "runs" / "ddp" / "events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    types = [e["type"] for e in events]
    assert types.count("started") == 1 and types.count("done") == 1
    started = events[types.index("started")]
    assert started["processes"] == 2 and started["steps_per_epoch"] == 2  # 4 clips, 1 per process per step
    assert [e["step"] for e in events if e["type"] == "step"] == [1, 2]
    assert events[-1]["reason"] == "finished"
    from safetensors.torch import load_file

    saved = load_file(str(project / "runs" / "ddp" / "checkpoints" / "step_0000002" / "model.safetensors"))
    assert all(torch.equal(saved[n], rank0[n]) for n in rank0)  # the checkpoint holds the synchronised weights


def _launched(config_file: str, out_dir: str) -> int:
    import torch

    from alltalk_gui.core.training import loop as train_module
    from alltalk_gui.core.training.runner import main as runner_main

    runs = []

    class RecordingRun(train_module.TrainingRun):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            runs.append(self)

    train_module.TrainingRun = RecordingRun
    code = runner_main(["--config", config_file])
    run = runs[0]
    weights = run.accelerator.unwrap_model(run.prepared.model).state_dict()
    torch.save({k: v.detach().clone() for k, v in weights.items()},
               Path(out_dir) / f"rank{run.accelerator.process_index}.pt")
    return code


if __name__ == "__main__":
    sys.exit(_launched(sys.argv[1], sys.argv[2]))
else:
    pytestmark = pytest.mark.slow
