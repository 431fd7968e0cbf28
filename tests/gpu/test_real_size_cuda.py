"""The real-size XTTS v2 GPT (441 M parameters, random weights) takes one optimizer step per profile on 11 s clips
on the card, through the memory benchmark's own cases (each in its own process), and stays inside its target.

The full measurement (10 timed steps, the AllTalk baseline beside it) is ``benchmarks/gpu/run.sh``; this test is
the pass/fail part: every profile runs at real size without an error, within its memory target."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "memory_profiles.py"


def test_one_real_size_step_per_profile_on_11_s_clips(tmp_path):
    from alltalk_gui.core.training.profiles import load_profile

    out = tmp_path / "real_size.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--device", "cuda", "--steps", "1", "--warmup", "0",
                           "--clip-seconds", "11", "--profiles", "low,medium,high", "--out", str(out)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    records = {r["profile"]: r for r in json.loads(out.read_text())}
    assert sorted(records) == ["high", "low", "medium"]
    for name, record in records.items():
        assert not record.get("error"), record
        assert record["steps"] == 1 and record["clip_s"] == 11.0
        assert record["final_loss"] is not None and record["final_loss"] == record["final_loss"]  # not NaN
        target = load_profile(name).target_gib
        # The pass/fail line of the memory table: the profile's promise on the real model.
        assert record["peak_reserved_gib"] <= target, f"{name}: {record['peak_reserved_gib']:.2f} GiB > {target}"
