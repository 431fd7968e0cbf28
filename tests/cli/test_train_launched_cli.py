"""``alltalk-gui train --processes 2``: the CLI follows the processes' events, and a kill of the CLI stops them
through the STOP file with a checkpoint instead of orphaning them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

FAST = ["--set", "min_conditioning_seconds=1", "--set", "max_conditioning_seconds=2", "--set", "device=cpu",
        "--set", "lr=0.001", "--set", "warmup_steps=0", "--set", "batch_size=1"]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_sigterm_to_the_cli_stops_both_processes_with_a_checkpoint(tmp_path):
    from alltalk_gui.core.engines.xtts.tiny_model import build_tiny_xtts
    from alltalk_gui.testing.speech import make_speech_dataset

    tiny = build_tiny_xtts(tmp_path / "tiny")
    project = tmp_path / "voice"
    assert subprocess.run([sys.executable, "-m", "alltalk_gui", "new", str(project)]).returncode == 0
    make_speech_dataset(project / "dataset", n_train=4, n_eval=1)
    cli = subprocess.Popen([sys.executable, "-m", "alltalk_gui", "train", str(project), "--base-model", str(tiny),
                            "--run", "two", "--epochs", "100", "--processes", "2", *FAST],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env={**os.environ, "OMP_NUM_THREADS": "1"})
    events = project / "runs" / "two" / "events.jsonl"
    deadline = time.time() + 300
    while not (events.exists() and b'"type": "step"' in events.read_bytes()):
        assert cli.poll() is None and time.time() < deadline, cli.communicate()
        time.sleep(0.1)
    children = psutil.Process(cli.pid).children(recursive=True)
    cli.send_signal(signal.SIGTERM)
    out, err = cli.communicate(timeout=300)
    assert cli.returncode == 0, out + err
    assert "Done (stopped)" in out and "run again with --resume" in out
    last = json.loads(events.read_text().splitlines()[-1])
    assert last["type"] == "done" and last["reason"] == "stopped"
    assert (project / "runs" / "two" / "checkpoints" / f"step_{last['step']:07d}" / "train_state.json").is_file()
    assert not (project / "runs" / "two" / "STOP").exists()
    gone, alive = psutil.wait_procs(children, timeout=30)
    assert not alive  # no training process was left behind
