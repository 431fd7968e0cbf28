"""packaging/entry.py, the frozen app's entry script: besides opening the app it must run the modules the app
starts as child processes with ``sys.executable -m MODULE``, since in a frozen app sys.executable is the app
itself. Run here through the development Python: the same script, the same dispatch."""

from __future__ import annotations

import json
import subprocess
import sys

from alltalk_gui.core.engines.xtts.tiny_model import build_tiny_xtts
from alltalk_gui.testing.speech import make_speech_dataset
from tests.core.training.tiny_training import fast_config
from tests.packaging.conftest import ROOT

ENTRY = ROOT / "packaging" / "entry.py"


def entry(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ENTRY), *args], capture_output=True, text=True, timeout=timeout)


def test_the_gpu_scan_runs_as_a_child_module():
    done = entry("-m", "alltalk_gui", "gpu", "--json")
    assert done.returncode == 0, done.stderr
    assert any(device["kind"] == "cpu" for device in json.loads(done.stdout))


def test_the_training_runner_trains_as_a_child_module(tmp_path):
    tiny = build_tiny_xtts(tmp_path / "tiny")
    make_speech_dataset(tmp_path / "project" / "dataset", n_train=2, n_eval=1)
    config = fast_config(tmp_path / "project", tiny, "child", max_steps=1, batch_size=1)
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(config.to_dict()))
    events = tmp_path / "events.jsonl"
    done = entry("-u", "-m", "alltalk_gui.core.training.runner", "--config", str(config_file), "--events", str(events))
    assert done.returncode == 0, done.stderr[-3000:]
    last = json.loads(events.read_text().splitlines()[-1])
    assert last["type"] == "done" and last["reason"] == "max_steps"


def test_other_modules_are_refused():
    done = entry("-m", "os")
    assert done.returncode == 2 and "not one of the modules this app runs" in done.stderr
