"""benchmarks/f5_memory_profiles.py without the real-size model: its arguments, F5's frame batches, one profile case
and the F5 baseline on the tiny DiT (records complete, JSON-clean, the CPU adaptations and F5's own settings
noted), and the run's bookkeeping with the case processes faked (auto skipped on the CPU with the reason). Nothing
here times anything."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from tests.benchmarks.scripts import fake_case_processes, load_script


pytest.importorskip("f5_tts", reason="f5-tts is not installed: pip install --no-deps f5-tts==1.1.22")


@pytest.fixture(scope="module")
def f5mp():
    return load_script("f5_memory_profiles.py")


def test_quick_and_full_settings(f5mp):
    quick = f5mp.parse_args(["--quick"])
    assert (quick.clip_seconds, quick.micro_batch, quick.grad_accum, quick.warmup, quick.steps) == (5.0, None, 1, 1, 1)
    assert quick.profiles == list(f5mp.CASES) and quick.profiles[-1] == "f5-baseline"
    full = f5mp.parse_args(["--device", "cuda", "--profiles", "high, f5-baseline"])
    assert (full.clip_seconds, full.micro_batch, full.grad_accum, full.warmup, full.steps) == (30.0, None, None, 1, 5)
    assert full.profiles == ["high", "f5-baseline"]
    assert f5mp.parse_args(["--grad-accum", "2"]).grad_accum == 2  # alone: the profiles' micro-batches kept


@pytest.mark.parametrize("argv", [["--profiles", "huge"], ["--steps", "0"], ["--micro-batch", "0"],
                                  ["--clip-seconds", "31"]])
def test_bad_arguments_are_refused(f5mp, argv):
    with pytest.raises(SystemExit):
        f5mp.parse_args(argv)


def test_f5_batches_by_frames_as_its_finetune_does(f5mp):
    # 3,200 frames per GPU: one 30 s clip (2,813 frames), six of 5 s (469 each), never more than 64 clips.
    assert (f5mp.frame_batch(30.0), f5mp.frame_batch(5.0), f5mp.frame_batch(1.0)) == (1, 6, 34)
    batch = f5mp.random_batch(2, 5.0, 2545)
    assert batch["mel"].shape == (2, 469, 100) and batch["mel_lengths"].tolist() == [469, 469]
    assert batch["text"].shape == (2, 70) and int(batch["text"].min()) >= 1 and int(batch["text"].max()) < 2545


def test_the_real_size_model_is_the_one_the_estimate_describes(f5mp):
    import torch

    from alltalk_gui.core.engines.f5.memory_estimate import V1_BASE_PARAMETERS
    from alltalk_gui.core.engines.f5.upstream import f5_model_package

    f5_model_package()
    arch, vocab = f5mp._arch("v1_base")
    with torch.device("meta"):  # the shapes only: nothing is allocated
        from alltalk_gui.core.engines.f5.files import build_cfm

        cfm = build_cfm(arch, {f"t{i}": i for i in range(vocab)})
    # The estimate's count is the state's (parameters and the rotary embedding's 32-value inv_freq buffer).
    assert sum(t.numel() for t in cfm.state_dict().values()) == V1_BASE_PARAMETERS
    assert V1_BASE_PARAMETERS - sum(p.numel() for p in cfm.parameters()) == 32


@pytest.mark.slow
def test_profile_and_baseline_cases_on_the_tiny_model(f5mp, monkeypatch):
    # A profile case sets the allocator setting training uses; the test puts the environment back afterwards.
    for name in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    opts = f5mp.parse_args(["--quick", "--arch", "tiny", "--device", "cpu", "--clip-seconds", "2"])
    low = f5mp.run_case("low", opts)
    baseline = f5mp.run_case("f5-baseline", opts)

    for record, case in ((low, "low"), (baseline, "f5-baseline")):
        json.dumps(record, allow_nan=False)
        assert set(f5mp.FIELDS) <= set(record)
        assert record["profile"] == case and "error" not in record
        assert record["peak_reserved_gib"] is None and record["peak_allocated_gib"] is None  # CPU: RSS instead
        # >=: in this pytest process the peak RSS may already be higher, from an earlier test, than the tiny case's
        # (the benchmark runs each case in its own process; the test calls run_case in its own).
        assert record["peak_rss_gib"] >= record["rss_before_model_gib"] > 0
        assert record["step_s"] > 0 and record["samples_per_s"] > 0 and math.isfinite(record["final_loss"])
        assert record["estimated_gib"] is None  # the estimator describes the real model only
        assert record["clip_s"] == 2.0 and record["grad_accum"] == 1
        parts = record["breakdown_s"]  # one more step, phase by phase
        assert parts["forward"] > 0 and parts["backward"] > 0 and parts["optimizer"] > 0 and parts["front_end"] == 0
        assert sum(parts.values()) == pytest.approx(record["breakdown_step_s"], abs=2e-3)
    assert low["cuda_alloc_conf"] == "expandable_segments:True"  # as training sets it
    assert (low["lora_rank"], low["gradient_checkpointing"], low["precision"], low["micro_batch"]) == (16, True,
                                                                                                       "no", 1)
    assert low["trainable_params"] < low["model_params"] / 5
    assert any("fp32" in note for note in low["notes"])  # bf16 -> fp32 on the CPU, said so
    assert baseline["cuda_alloc_conf"] is None  # F5's trainer keeps torch's allocator defaults
    assert (baseline["precision"], baseline["lora_rank"], baseline["gradient_checkpointing"]) == ("no", 0, False)
    assert baseline["ema"] is True and baseline["trainable_params"] == baseline["model_params"]
    assert baseline["micro_batch"] == f5mp.frame_batch(2.0) == 17  # 3,200 frames of 2 s clips
    assert any("fp16" in note for note in baseline["notes"])  # F5 launches fp16; fp32 on the CPU, said so


def test_the_estimate_of_each_case_is_the_engines(f5mp):
    import dataclasses

    from alltalk_gui.core.engine_api.engine import get_engine
    from alltalk_gui.core.engines.f5.memory_estimate import V1_BASE_PARAMETERS
    from alltalk_gui.core.training.config import TrainConfig

    config = dataclasses.replace(TrainConfig(engine="f5"), batch_size=1, max_audio_seconds=30.0,
                                 mixed_precision="fp16", options={"ema_decay": 0.9999})
    found = f5mp._estimate(config, V1_BASE_PARAMETERS)
    engine = get_engine("f5").estimate_memory(config)
    assert found["estimated_gib"] == round(engine.total_gib, 3)
    parts = found["estimate_parts_gib"]
    # Without accumulation the gradients replace the activations as backward runs: the larger of the two is held.
    held = max(parts["gradients_gib"], parts["activations_gib"])
    assert parts["weights_gib"] + parts["optimizer_gib"] + held + parts["overhead_gib"] == pytest.approx(
        found["estimated_gib"], abs=0.01)
    on_the_cpu = f5mp._estimate(config, V1_BASE_PARAMETERS, on_cuda=False)
    assert on_the_cpu["estimate_parts_gib"]["overhead_gib"] == 0.8  # the process itself, not the GPU allocator's
    assert f5mp._estimate(config, 189_956) == {"estimated_gib": None}  # the tiny model


def test_run_records_each_case_and_skips_auto_on_cpu_with_the_reason(f5mp, tmp_path, monkeypatch):
    out = tmp_path / "result.json"
    ran = []

    def fake_prepare(cmd, stdout=None, text=None, check=False):
        info = {"device_kind": "cpu", "device": "CPU: test, 2 cores", "slug": "cpu", "torch": "x",
                "auto_profile": None, "auto_reason": "FileNotFoundError: resources/profiles/f5/cpu_speed.json "
                                                     "is missing."}
        return subprocess.CompletedProcess(cmd, 0, json.dumps(info) + "\n")

    def fake_case(cmd):
        case = cmd[cmd.index("--one") + 1]
        ran.append(case)
        assert cmd[cmd.index("--clip-seconds") + 1] == "5.0" and cmd[cmd.index("--grad-accum") + 1] == "1"
        return 0, json.dumps({"profile": case, "step_s": 1.0}) + "\n"

    monkeypatch.setattr(subprocess, "run", fake_prepare)  # the device's description
    fake_case_processes(monkeypatch, subprocess, fake_case)  # the case processes
    monkeypatch.setattr(sys, "argv", ["f5_memory_profiles.py"])
    assert f5mp.main(["--quick", "--out", str(out)]) == 0
    records = json.loads(out.read_text())
    assert [r["profile"] for r in records] == list(f5mp.CASES)
    assert ran == ["low", "medium", "high", "f5-baseline"]
    auto = records[3]
    assert auto["skipped"] and auto["resolved_profile"] is None
    assert "cpu_speed.json" in auto["notes"][0] and "--device cuda" in auto["notes"][0]
    assert all(set(f5mp.FIELDS) <= set(r) for r in records)
