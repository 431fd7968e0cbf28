"""The GPU kit's summary (benchmarks/gpu/summary.py): one table from the tests' JUnit XML, the card rehearsal's rows
and both memory benchmarks' records, with each phase's time; its exit status says whether everything passed."""

from __future__ import annotations

import json

import pytest

from tests.benchmarks.scripts import load_script

DAY = "2026-11-27"
JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.gpu.test_training_cuda" name="test_each_profile_trains_on_cuda[low]" time="9"/>
<testcase classname="tests.gpu.test_whisper_cuda" name="test_faster_whisper_hears_speech_on_cuda[float16]">
<skipped message="faster_whisper is not installed"/></testcase>
{extra}
</testsuite></testsuites>"""


@pytest.fixture(scope="module")
def summary():
    return load_script("gpu/summary.py")


def _results(tmp_path, *, failing_test=False, rehearsal_ok=True, benchmark_error=None):
    extra = ('<testcase classname="tests.gpu.test_f5_cuda" name="test_f5_auto"><failure message="boom"/></testcase>'
             if failing_test else "")
    (tmp_path / f"gpu_tests_{DAY}.xml").write_text(JUNIT.format(extra=extra), encoding="utf-8")
    rows = [{"engine": "xtts", "card_gib": 6.0, "others_gib": 0.0, "path": "auto", "profile": "medium",
             "micro_batch": 1, "grad_accum": 8, "peak_reserved_gib": 4.61, "estimated_gib": 5.04,
             "samples_per_s": 7.5, "ok": rehearsal_ok, "outcome": "trained" if rehearsal_ok else "crashed: boom"},
            {"engine": "f5", "card_gib": 8.0, "others_gib": 2.02, "path": "auto", "profile": "medium",
             "micro_batch": 2, "grad_accum": 4, "peak_reserved_gib": 4.7, "estimated_gib": 4.87, "samples_per_s": 7.9,
             "ok": True, "outcome": "trained"}]
    (tmp_path / f"card_rehearsal_{DAY}.json").write_text(json.dumps(rows), encoding="utf-8")
    bench = [{"profile": "low", "micro_batch": 1, "grad_accum": 8, "peak_reserved_gib": 2.19, "estimated_gib": 2.1,
              "samples_per_s": 3.85}]
    if benchmark_error:
        bench.append({"profile": "medium", "error": benchmark_error})
    (tmp_path / f"memory_profiles_{DAY}_gpu.json").write_text(json.dumps(bench), encoding="utf-8")
    (tmp_path / f"f5_memory_profiles_{DAY}_gpu.json").write_text(json.dumps(bench[:1]), encoding="utf-8")
    return tmp_path


def test_one_table_of_tests_rehearsal_and_benchmarks_with_the_time_of_each_phase(summary, tmp_path, capsys):
    results = _results(tmp_path)
    assert summary.main([str(results), DAY, "--phase", "tests=212", "--phase", "xtts-benchmark=150"]) == 0
    text = (results / f"gpu_kit_{DAY}_summary.md").read_text()
    assert "| GPU tests | 2 tests | 1 passed, 0 failed, 1 skipped |" in text
    assert "| card rehearsal | xtts on 6 GiB Auto: medium 1 x 8 | pass: trained | 4.61 | 5.04 | 7.50 |" in text
    assert "| card rehearsal | f5 on 8 GiB (+2.02 GiB held) Auto: medium 2 x 4 | pass: trained |" in text
    assert "| xtts memory benchmark | low | 1 x 8 | 2.19 | 2.10 | 3.85 |" in text
    assert "| f5 memory benchmark | low |" in text
    assert "Time: tests 212 s, xtts-benchmark 150 s; 362 s in all." in text
    assert "Everything passed." in capsys.readouterr().out


@pytest.mark.parametrize("problem", [dict(failing_test=True), dict(rehearsal_ok=False),
                                     dict(benchmark_error="out of memory: CUDA out of memory")])
def test_a_failed_test_rehearsal_case_or_benchmark_case_fails_the_kit(summary, tmp_path, capsys, problem):
    results = _results(tmp_path, **problem)
    assert summary.main([str(results), DAY]) == 1
    text = (results / f"gpu_kit_{DAY}_summary.md").read_text()
    assert "FAILED" in text or "FAIL:" in text or "error: out of memory" in text
    assert "Something failed" in capsys.readouterr().out


def test_nothing_written_is_a_failure_not_a_pass(summary, tmp_path):
    assert summary.main([str(tmp_path), DAY]) == 1


def test_the_rehearsal_s_own_junit_file_counts_with_the_suite_s(summary, tmp_path):
    results = _results(tmp_path)
    rehearsal = ('<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">'
                 '<testcase classname="tests.gpu.test_card_rehearsal_cuda" name="test_auto_fits_every_card">'
                 '<failure message="boom"/></testcase></testsuite></testsuites>')
    (results / f"gpu_tests_{DAY}_rehearsal.xml").write_text(rehearsal, encoding="utf-8")
    table, ok = summary.lines(results, DAY, {})
    text = "\n".join(table)
    assert "| GPU tests | 3 tests | 1 passed, 1 failed, 1 skipped |" in text
    assert "| GPU tests | test_card_rehearsal_cuda::test_auto_fits_every_card | FAILED |" in text and not ok


def test_the_goals_say_met_or_missed_with_their_figures(summary, tmp_path):
    """Each profile's peak against its file's target, and #28's speed goals against the baseline of the same run."""
    results = _results(tmp_path)
    xtts = [{"profile": "low", "micro_batch": 8, "grad_accum": 1, "peak_reserved_gib": 2.4, "samples_per_s": 9.1},
            {"profile": "high", "micro_batch": 8, "grad_accum": 1, "peak_reserved_gib": 12.4, "samples_per_s": 50.0},
            {"profile": "alltalk-baseline", "micro_batch": 4, "grad_accum": 1, "peak_reserved_gib": 13.7,
             "samples_per_s": 24.0}]
    (results / f"memory_profiles_{DAY}_gpu.json").write_text(json.dumps(xtts), encoding="utf-8")
    f5 = [{"profile": "high", "micro_batch": 2, "grad_accum": 4, "peak_reserved_gib": 12.3, "samples_per_s": 11.0}]
    (results / f"f5_memory_profiles_{DAY}_gpu.json").write_text(json.dumps(f5), encoding="utf-8")
    table, ok = summary.lines(results, DAY, {})
    text = "\n".join(table)
    assert ok  # goals inform; the tests decide the kit's status
    assert "| xtts low: peak <= 3.5 GiB | 2.40 GiB at 8 x 1 | met |" in text
    assert "| xtts high: peak <= 12 GiB | 12.40 GiB at 8 x 1 | MISSED |" in text
    assert "| f5 high: peak <= 16 GiB | 12.30 GiB at 2 x 4 | met |" in text
    assert "| xtts high: >= 2x alltalk-baseline's samples/s | 50.00 / 24.00 = 2.08x | met |" in text
    assert "| f5 high: >= 2x f5-baseline's samples/s | not measured in this run | - |" in text
    assert "| xtts low: >= 7.8 samples/s | 9.10 | met |" in text
    assert "alltalk-baseline: peak" not in text  # a baseline has no target


def test_the_third_calls_summary_judges_orpheus_and_parler_by_clip_length(summary, tmp_path, capsys):
    """run_more.sh's files: Orpheus at 10 s and 30 s (each goal says which), Medium's speed against Orpheus's own
    full fine-tune on the same clips, Parler's profiles against their targets; a case that failed fails it."""
    def write(name, records):
        (tmp_path / name).write_text(json.dumps(records), encoding="utf-8")

    write("orpheus_high_10s_gpu.json", [{"profile": "high", "clip_s": 10.0, "micro_batch": 2, "grad_accum": 4,
                                         "peak_reserved_gib": 20.4, "estimated_gib": 20.3, "samples_per_s": 5.0}])
    write("orpheus_high_30s_gpu.json", [{"profile": "high", "clip_s": 30.0, "micro_batch": 1, "grad_accum": 8,
                                         "peak_reserved_gib": 22.3, "estimated_gib": 20.6, "samples_per_s": 2.0}])
    write("orpheus_medium_orpheus-full_10s_gpu.json", [
        {"profile": "medium", "clip_s": 10.0, "micro_batch": 4, "grad_accum": 2, "peak_reserved_gib": 8.4,
         "samples_per_s": 9.0},
        {"profile": "orpheus-full", "clip_s": 10.0, "micro_batch": 1, "grad_accum": 1, "peak_reserved_gib": 60.0,
         "samples_per_s": 5.0}])
    write("parler_memory_profiles_mini_gpu.json", [{"profile": "low", "clip_s": 10.0, "micro_batch": 8, "size": "mini",
                                                    "grad_accum": 1, "peak_reserved_gib": 2.1, "samples_per_s": 30.0}])
    # Large v1's Low: its own 8 GiB target, not Mini's 4.
    write("parler_memory_profiles_large_low_gpu.json", [{"profile": "low", "clip_s": 10.0, "micro_batch": 2,
                                                         "size": "large", "grad_accum": 4, "peak_reserved_gib": 5.5,
                                                         "samples_per_s": 6.0}])
    assert summary.main([str(tmp_path), DAY, "--more"]) == 0
    text = (tmp_path / f"gpu_more_{DAY}_summary.md").read_text()
    assert "| orpheus memory benchmark | high (30 s clips) | 1 x 8 | 22.30 | 20.60 | 2.00 |" in text
    assert "| orpheus high (10 s clips): peak <= 22 GiB | 20.40 GiB at 2 x 4 | met |" in text
    assert "| orpheus high (30 s clips): peak <= 22 GiB | 22.30 GiB at 1 x 8 | MISSED |" in text
    assert "| orpheus medium: >= 1.5x orpheus-full's samples/s (10 s clips) | 9.00 / 5.00 = 1.80x | met |" in text
    assert "| parler low: peak <= 4 GiB | 2.10 GiB at 8 x 1 | met |" in text
    assert "| parler-large memory benchmark | low (10 s clips) | 2 x 4 | 5.50 | - | 6.00 |" in text
    assert "| parler-large low: peak <= 8 GiB | 5.50 GiB at 2 x 4 | met |" in text
    assert "xtts" not in text  # nothing of XTTS was measured in this call: no goal of it is listed
    assert "Everything passed." in capsys.readouterr().out
    write("f5_memory_profiles_medium_auto_gpu.json", [{"profile": "auto", "error": "out of memory: boom"}])
    assert summary.main([str(tmp_path), DAY, "--more"]) == 1
