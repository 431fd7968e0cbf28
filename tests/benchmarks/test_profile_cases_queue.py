"""The memory benchmarks' case queue (benchmarks/profile_cases.py): each case's process starts one case early and
imports, but nothing runs on the card until the case before has ended, with real processes."""

from __future__ import annotations

import json
import sys
import time

from tests.benchmarks.scripts import BENCHMARKS, load_script

# A case's child: waits as a benchmark's child does, then says when it ran and how long its imports took.
CHILD = f"""
import json, sys, time
sys.path.insert(0, {str(BENCHMARKS)!r})
import profile_cases
preload_s = profile_cases.wait_for_the_card(("json",))
ran = time.time()
time.sleep(float(sys.argv[1]))
print("progress")
print(json.dumps({{"ran": ran, "ended": time.time(), "preload_s": preload_s}}))
sys.exit(int(sys.argv[2]))
"""


def test_the_next_case_starts_early_but_runs_only_after_the_case_before_ends():
    pc = load_script("profile_cases.py")
    plan = {"a": ("1.0", "0"), "b": ("0.2", "0"), "c": ("0.2", "7")}
    queue = pc._CaseQueue(lambda case: [sys.executable, "-c", CHILD, *plan[case]], list(plan))
    results = {case: queue.run(case) for case in plan}

    said = {case: json.loads(out.strip().splitlines()[-1]) for case, (_, out, _) in results.items()}
    assert [results[c][0] for c in plan] == [0, 0, 7]  # each child's own exit status
    assert said["a"]["ended"] <= said["b"]["ran"] and said["b"]["ended"] <= said["c"]["ran"]  # one at a time
    assert results["b"][2]["waited_s"] >= 0.8  # started while "a" ran (its 1 s), its imports hidden behind it
    assert results["a"][2]["wall_s"] >= 1.0 and all(r[2]["wall_s"] < 30 for r in results.values())
    assert all(s["preload_s"] > 0 for s in said.values())  # each was queued and preloaded
    assert not queue.started  # nothing left running


def test_a_queued_case_whose_parent_ends_without_a_go_does_not_run(tmp_path):
    import subprocess

    done = subprocess.run([sys.executable, "-c", CHILD, "0", "0"], input="", capture_output=True, text=True,
                          env={"ALLTALK_BENCH_QUEUED": "1", "PATH": ""}, timeout=120)
    assert done.returncode == 3 and "ran" not in done.stdout


def test_a_case_not_queued_runs_at_once():
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "ALLTALK_BENCH_QUEUED"}
    started = time.time()
    done = subprocess.run([sys.executable, "-c", CHILD, "0", "0"], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, env=env, timeout=120)
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert done.returncode == 0 and said["preload_s"] == 0.0 and said["ran"] >= started


def test_a_logs_summary_lines_read_back_as_records_of_their_section(tmp_path):
    """What a GPU kit log keeps of cases whose JSON did not come back: each summary line under its heading."""
    pc = load_script("profile_cases.py")
    case = {"profile": "low", "peak_reserved_gib": 2.352, "estimated_gib": 2.576, "step_s": 0.441,
            "samples_per_s": 18.1423, "micro_batch": 8, "grad_accum": 1, "clip_s": 10.0}
    log = tmp_path / "gpu_more.log"
    log.write_text("\n".join([
        "## Parler-TTS Large, Low, 10 s clips (388 s left)", "low: warm-up 1 took 1.36 s", pc.summary(case),
        "## Parler-TTS Mini, each profile (181 s left)", pc.summary(dict(case, profile="auto", estimated_gib=None)),
        "auto: out of memory", "## done"]), encoding="utf-8")
    assert pc.read_summaries(log, "Parler-TTS Large") == [case]
    assert pc.read_summaries(log, "Parler-TTS Mini") == [dict(case, profile="auto", estimated_gib=None)]
    assert pc.read_summaries(log, "XTTS") == []
