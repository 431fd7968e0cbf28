"""benchmarks/parler_memory_profiles.py without the real-size model: its arguments, and a run of one profile and of
Parler's own settings on the tiny model's architecture in the engine's environment (records complete, the CPU
adaptations and Parler's README settings noted, auto skipped on the CPU with its reason). Nothing here times
anything."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.benchmarks.scripts import BENCHMARKS, load_script
from tests.engine_envs import parler_python  # noqa: F401  (a fixture)


@pytest.fixture(scope="module")
def pmp():
    return load_script("parler_memory_profiles.py")


def test_quick_and_full_settings(pmp):
    quick = pmp.parse_args(["--quick"])
    assert (quick.clip_seconds, quick.grad_accum, quick.warmup, quick.steps, quick.size) == (10.0, 1, 1, 1, "mini")
    assert quick.profiles == list(pmp.CASES) and quick.profiles[-1] == "parler-baseline"
    full = pmp.parse_args(["--device", "cuda", "--size", "large", "--profiles", "low"])
    assert (full.clip_seconds, full.grad_accum, full.steps, full.size, full.profiles) == (10.0, None, 3, "large", ["low"])
    with pytest.raises(SystemExit):
        pmp.parse_args(["--profiles", "huge"])


def test_a_profile_and_parlers_own_settings_run_on_the_tiny_architecture(parler_python, tmp_path):
    out = tmp_path / "tiny.json"
    result = subprocess.run([sys.executable, str(BENCHMARKS / "parler_memory_profiles.py"), "--size", "tiny",
                             "--quick", "--device", "cpu", "--clip-seconds", "2", "--profiles",
                             "medium,auto,parler-baseline", "--out", str(out)],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    medium, auto, baseline = json.loads(out.read_text())
    assert medium["profile"] == "medium" and medium["peak_rss_gib"] > 0 and medium["final_loss"] > 0
    assert medium["estimated_gib"] is None  # the estimate describes the published sizes only
    assert any("8-bit optimizers need a CUDA GPU" in n for n in medium["notes"])
    assert auto["skipped"] and "CUDA-only" in auto["notes"][0]
    assert baseline["micro_batch"] == 3 and baseline["precision"] == "no"
    assert any("AdamW(lr 0.00095, betas (0.9, 0.99), weight decay 0.01)" in n for n in baseline["notes"])
    assert baseline["trainable_params"] < baseline["model_params"]  # T5 and DAC frozen, as Parler freezes them
