"""benchmarks/memory_profiles.py without the real-size model: its arguments, one profile case and the AllTalk
baseline on the tiny architecture (records complete, JSON-clean, the CPU adaptations noted), and the run's
bookkeeping with the case processes faked (file rewritten after each case, a killed case recorded, auto
skipped on the CPU). Nothing here times anything."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from tests.benchmarks.scripts import fake_case_processes, load_script


@pytest.fixture(scope="module")
def mp():
    return load_script("memory_profiles.py")


def test_quick_and_full_settings(mp):
    quick = mp.parse_args(["--quick"])
    assert (quick.clip_seconds, quick.micro_batch, quick.grad_accum, quick.warmup, quick.steps) == (3.0, 2, 1, 1, 2)
    assert quick.profiles == list(mp.CASES)
    full = mp.parse_args(["--device", "cuda", "--profiles", "high, alltalk-baseline"])
    assert (full.clip_seconds, full.micro_batch, full.grad_accum, full.steps) == (11.0, None, None, 10)
    assert full.profiles == ["high", "alltalk-baseline"]
    assert mp.parse_args(["--quick", "--steps", "3", "--clip-seconds", "5"]).steps == 3


@pytest.mark.parametrize("argv", [["--profiles", "huge"], ["--grad-accum", "2"], ["--steps", "0"],
                                  ["--micro-batch", "0"]])
def test_bad_arguments_are_refused(mp, argv):
    with pytest.raises(SystemExit):
        mp.parse_args(argv)


@pytest.mark.slow
def test_profile_and_baseline_cases_on_the_tiny_model(mp, tmp_path, monkeypatch):
    from TTS.tts.layers.xtts.trainer import gpt_trainer

    # A profile case sets the allocator setting training uses; the test puts the environment back afterwards.
    for name in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)

    arch = mp._arch("tiny")
    mp.write_front_end_files(tmp_path, text_tokens=arch["text_tokens"],
                             num_audio_tokens=arch["gpt"]["gpt_num_audio_tokens"], dvae=arch["dvae"])
    opts = mp.parse_args(["--quick", "--arch", "tiny", "--device", "cpu", "--clip-seconds", "1", "--steps", "1",
                          "--files", str(tmp_path)])
    dvae = gpt_trainer.DiscreteVAE
    low = mp.run_case("low", opts)
    baseline = mp.run_case("alltalk-baseline", opts)
    assert gpt_trainer.DiscreteVAE is dvae  # the tiny widths were patched in for the baseline only

    for record, case in ((low, "low"), (baseline, "alltalk-baseline")):
        json.dumps(record, allow_nan=False)
        assert set(mp.FIELDS) <= set(record)
        assert record["profile"] == case and "error" not in record
        assert (record["micro_batch"], record["grad_accum"], record["clip_s"]) == (2, 1, 1.0)
        assert record["peak_reserved_gib"] is None and record["peak_allocated_gib"] is None  # CPU: RSS instead
        assert record["peak_rss_gib"] > 0 and record["step_s"] > 0 and record["samples_per_s"] > 0
        assert math.isfinite(record["final_loss"])
        assert record["estimated_gib"] is None  # the estimator describes the real model only
    assert low["cuda_alloc_conf"] == "expandable_segments:True"  # as training sets it
    assert (low["lora_rank"], low["gradient_checkpointing"], low["precision"]) == (16, True, "no")
    assert low["trainable_params"] < low["model_params"] / 10
    assert any("fp32" in note for note in low["notes"])  # bf16 -> fp32 on the CPU, said so
    assert (baseline["precision"], baseline["optimizer"], baseline["lora_rank"]) == ("no", "adamw", 0)
    assert baseline["model_params"] > baseline["trainable_params"]  # the DVAE and HiFi-GAN ride along, frozen
    # The per-step breakdown: coqui's front end runs on every step, ours once per clip before training.
    for record in (low, baseline):
        parts = record["breakdown_s"]
        assert set(parts) == {"front_end", "forward", "backward", "optimizer", "rest"}
        assert parts["forward"] > 0 and parts["backward"] > 0 and parts["optimizer"] > 0
        assert sum(parts.values()) == pytest.approx(record["breakdown_step_s"], abs=2e-3)
    assert baseline["breakdown_s"]["front_end"] > 0 and low["breakdown_s"]["front_end"] == 0
    once = low["front_end_once"]
    assert once["s_per_clip"] > 0 and once["weights_gib"] > 0 and once["clips"] == mp.EFFECTIVE_BATCH


def test_run_writes_each_case_records_a_killed_one_and_skips_auto_on_cpu(mp, tmp_path, monkeypatch):
    out = tmp_path / "result.json"
    seen_before: dict[str, int] = {}

    def fake_prepare(cmd, stdout=None, text=None, check=False):
        info = {"device_kind": "cpu", "device": "CPU: test, 2 cores", "slug": "cpu", "torch": "x",
                "auto_profile": "high", "auto_reason": "No CUDA GPU was found."}
        return subprocess.CompletedProcess(cmd, 0, json.dumps(info) + "\n")

    def fake_case(cmd):
        case = cmd[cmd.index("--one") + 1]
        seen_before[case] = len(json.loads(out.read_text())) if out.exists() else 0
        if case == "medium":
            return -9, ""
        record = {"profile": case, "device": "CPU: test", "step_s": 1.0}
        return 0, "progress\n" + json.dumps(record) + "\n"

    monkeypatch.setattr(mp.subprocess, "run", fake_prepare)
    fake_case_processes(monkeypatch, mp.subprocess, fake_case)
    monkeypatch.setattr(sys, "argv", ["memory_profiles.py"])
    assert mp.main(["--quick", "--out", str(out)]) == 0

    records = json.loads(out.read_text())
    assert [r["profile"] for r in records] == list(mp.CASES)
    assert seen_before == {"low": 0, "medium": 1, "high": 2, "alltalk-baseline": 4}  # rewritten after every case
    by_case = {r["profile"]: r for r in records}
    assert "killed: out of memory?" in by_case["medium"]["error"]
    assert set(mp.FIELDS) <= set(by_case["medium"]) and by_case["medium"]["peak_rss_gib"] is None
    auto = by_case["auto"]
    assert auto["skipped"] and auto["resolved_profile"] == "high" and "--device cuda" in auto["notes"][0]
    assert set(mp.FIELDS) <= set(auto)
