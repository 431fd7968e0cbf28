"""Auto sizing's micro-batch probe on the CPU, through the command line, for each engine: ``alltalk-gui train DIR
--profile auto --set auto_micro_batch=true`` runs the real probe under bf16 autocast and reports it as a
``micro_batch`` event with cause ``probe``; and the probe's passes reach the model exactly as the training steps'
do (same tensors on the same device in the same dtypes, autocast and gradients in the same state, the same
trainable parameters).

On a CUDA card a probe that fed the model otherwise crashed Auto for both engines (2026-11-26: the batch left on
the CPU, and XTTS's frozen DVAE run under autocast); on the CPU the device cannot differ, but the way the batch
reaches the model can, and that is what these tests compare.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from alltalk_gui.testing.speech import make_speech_dataset
from tests.cli.test_train_cli import FAST, cli

ROOT = Path(__file__).resolve().parents[2]
# Tiny runs: the probe tries the effective batch of 2 first, then one optimizer step.
QUICK = ["--set", "auto_micro_batch=true", "--set", "mixed_precision=bf16", "--set", "batch_size=2",
         "--set", "grad_accum_steps=1", "--set", "max_steps=1", "--set", "eval_each_epoch=false"]
ENGINE_SETTINGS = {
    "xtts": FAST,
    "f5": ["--set", "device=cpu", "--set", "lr=0.003", "--set", "warmup_steps=0"],
}


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("probe") / "voice"
    assert cli("new", str(root), "--language", "en").returncode == 0
    make_speech_dataset(root / "dataset", n_train=2, n_eval=1)
    return root


@pytest.fixture(scope="module")
def base_models(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("tiny")
    made = {}
    for engine in ENGINE_SETTINGS:
        made[engine] = folder / engine
        result = cli("make-test-model", str(made[engine]), "--engine", engine)
        assert result.returncode == 0, result.stderr
    return made


@pytest.mark.parametrize("engine", sorted(ENGINE_SETTINGS))
def test_auto_probes_the_micro_batch_on_the_cpu_as_a_training_step_feeds_the_model(project, base_models, engine,
                                                                                     tmp_path):
    record = tmp_path / "model_inputs.json"
    command = [sys.executable, "-m", "tests.cli.model_inputs", str(record), "train", str(project), "--engine",
               engine, "--base-model", str(base_models[engine]), "--profile", "auto", "--run", f"auto_{engine}",
               *ENGINE_SETTINGS[engine], *QUICK]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    events = [json.loads(line) for line in
              (project / "runs" / f"auto_{engine}" / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    started = next(e for e in events if e["type"] == "started")
    assert started["config"]["mixed_precision"] == "bf16" and started["config"]["auto_micro_batch"] is True
    probe = [e for e in events if e["type"] == "micro_batch" and e["cause"] == "probe"]
    assert len(probe) == 1 and events.index(probe[0]) < events.index(started), probe
    assert (probe[0]["micro_batch"], probe[0]["grad_accum"], probe[0]["effective_batch"]) == (2, 1, 2)
    assert "Auto sizing: 2 clip(s) of the longest length" in probe[0]["message"]
    assert events[-1]["type"] == "done" and events[-1]["reason"] == "max_steps"

    calls = json.loads(record.read_text(encoding="utf-8"))
    probes = [c for c in calls if c.pop("stage") == "probe"]
    steps = calls[len(probes):]
    assert probes and steps and calls[:len(probes)] == probes, "the probe's passes come first"
    # Every probe pass and every training pass: the same inputs, autocast, gradients and trainable parameters.
    assert all(c == steps[0] for c in probes + steps), json.dumps({"probe": probes[0], "step": steps[0]}, indent=1)
    # The run's bf16 autocast is on inside the model (the prepared model applies it), not around the engine's
    # frozen front end or data: on the way in nothing is cast.
    assert steps[0]["autocast"] == {"cpu": False, "cuda": False} and steps[0]["grad_enabled"]
    assert all(dtype in ("torch.float32", "torch.int64", "torch.int32", "torch.bool")
               for _, dtype, _ in steps[0]["tensors"].values()), steps[0]["tensors"]
