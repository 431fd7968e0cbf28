"""The real-size models (random weights) take one optimizer step per profile on the card, through the memory
benchmarks' own cases (each in its own process), and stay inside their targets: the XTTS v2 GPT (441 M
parameters) on 11 s clips, the F5-TTS v1 Base DiT (337 M) on 30 s clips.

The full measurements (several timed steps, each engine's own baseline beside them) are ``benchmarks/gpu/run.sh``;
these tests are the pass/fail part: every profile runs at real size without an error, within its memory target."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.mark.parametrize(("engine", "script", "clip_s"), [("xtts", "memory_profiles.py", 11.0),
                                                          ("f5", "f5_memory_profiles.py", 30.0)])
def test_one_real_size_step_per_profile(tmp_path, engine, script, clip_s):
    from alltalk_gui.core.training.profiles import load_profile

    out = tmp_path / "real_size.json"
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), "--device", "cuda", "--steps", "1", "--warmup",
                           "0", "--clip-seconds", str(clip_s), "--profiles", "low,medium,high", "--out", str(out)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    records = {r["profile"]: r for r in json.loads(out.read_text())}
    assert sorted(records) == ["high", "low", "medium"]
    for name, record in records.items():
        assert not record.get("error"), record
        assert record["steps"] == 1 and record["clip_s"] == clip_s
        assert record["final_loss"] is not None and record["final_loss"] == record["final_loss"]  # not NaN
        target = load_profile(name, engine).target_gib
        # The pass/fail line of the memory table: the profile's promise on the real model.
        assert record["peak_reserved_gib"] <= target, f"{name}: {record['peak_reserved_gib']:.2f} GiB > {target}"
