"""The card rehearsal's CPU side (benchmarks/gpu/rehearsal.py): which cases it plans, how it pretends a smaller
card (the allocator's share, the device the app is shown), how it judges a run from its events, the table it
writes, its arguments, and that it refuses a machine without CUDA. Its runs need a GPU
(tests/gpu/test_card_rehearsal_cuda.py)."""

from __future__ import annotations

import json

import pytest

from alltalk_gui.core.machine.gpu import DeviceInfo
from tests.benchmarks.scripts import load_script


@pytest.fixture(scope="module")
def rehearsal():
    return load_script("gpu/rehearsal.py")


def test_the_plan_has_every_card_the_desktop_card_and_the_low_button_per_engine(rehearsal):
    cases = rehearsal.plan((4.0, 6.0, 8.0, 12.0, 16.0), (8.0, 1.5), ("xtts", "f5"))
    for engine in ("xtts", "f5"):
        mine = [c for c in cases if c.engine == engine]
        assert [(c.card_gib, c.desktop_gib, c.path) for c in mine] == [
            (4.0, 0.0, "auto"), (6.0, 0.0, "auto"), (8.0, 0.0, "auto"), (12.0, 0.0, "auto"), (16.0, 0.0, "auto"),
            (8.0, 1.5, "auto"), (4.0, 0.0, "low")]
    names = [c.name for c in cases]
    assert len(set(names)) == len(names) and "xtts_8gib_plus1p5_auto" in names  # run folder names, no dots
    assert rehearsal.plan((6.0,), None, ("f5",)) == [rehearsal.Case("f5", 6.0), rehearsal.Case("f5", 6.0, path="low")]


def test_the_cases_of_an_engine_are_shared_between_its_processes_big_and_small_alike(rehearsal):
    cases = rehearsal.plan((4.0, 6.0, 8.0, 12.0, 16.0), (8.0, 1.5), ("xtts",))
    first, second = rehearsal.share(cases, 1, 2), rehearsal.share(cases, 2, 2)
    assert [c.card_gib for c in first] == [4.0, 8.0, 16.0, 4.0] and [c.card_gib for c in second] == [6.0, 12.0, 8.0]
    assert sorted(first + second, key=cases.index) == cases
    assert rehearsal.share(cases, 1, 1) == cases


def test_a_pretended_card_leaves_the_allocator_what_such_a_card_would(rehearsal):
    # An 8 GiB card, 1.5 GiB held by the desktop, a 0.5 GiB CUDA context: 6 GiB of the H100's 79.1.
    assert rehearsal.allocator_fraction(8.0, 1.5, 0.5, 79.1) == pytest.approx(6.0 / 79.1)
    assert rehearsal.allocator_fraction(200.0, 0.0, 0.5, 79.1) == 1.0
    with pytest.raises(ValueError, match="leaves nothing"):
        rehearsal.allocator_fraction(2.0, 1.5, 0.5, 79.1)
    real = DeviceInfo(kind="cuda", index=0, name="NVIDIA H100 80GB HBM3", total_gib=79.1, free_gib=78.5, bf16=True,
                      capability="9.0", driver="580.159.04", source="nvml", other_processes_gib=0.0)
    shown = rehearsal.pretend_card(real, 8.0, 2.02)
    assert (shown.name, shown.bf16, shown.capability) == ("NVIDIA H100 80GB HBM3 (pretending 8 GiB)", True, "9.0")
    assert (shown.total_gib, shown.free_gib, shown.other_processes_gib) == (8.0, 5.98, 2.02)


def test_auto_on_each_pretended_card_picks_what_the_estimate_fits(rehearsal):
    """The decision the rehearsal puts to the test on the card: the profile Auto picks for each pretended card."""
    from alltalk_gui.core.training.config import TrainConfig
    from alltalk_gui.core.training.profiles import choose_auto

    real = DeviceInfo(kind="cuda", index=0, name="GPU", total_gib=80, free_gib=80, bf16=True, capability="9.0")
    picks = {}
    for engine in ("xtts", "f5"):
        for card, held in ((4, 0), (6, 0), (8, 0), (12, 0), (16, 0), (8, 1.5)):
            shown = rehearsal.pretend_card(real, card, held)
            picks[engine, card, held] = choose_auto([shown], TrainConfig(engine=engine)).profile
    assert [picks["xtts", c, 0] for c in (4, 6, 8, 12, 16)] == ["low", "medium", "medium", "high", "high"]
    assert [picks["f5", c, 0] for c in (4, 6, 8, 12, 16)] == ["low", "medium", "medium", "medium", "high"]
    assert picks["xtts", 8, 1.5] == picks["f5", 8, 1.5] == "medium"


def _events(*kinds, steps=2, error=None, started=True, reason="max_steps"):
    events = []
    if started:
        events.append({"type": "started", "config": {"profile": "medium", "batch_size": 2, "grad_accum_steps": 4}})
    if error:
        events.append({"type": "error", "kind": error[0], "message": error[1]})
    events += [{"type": "step", "step": i + 1, "samples_per_s": 10.0 + i} for i in range(steps)]
    events += list(kinds)
    events.append({"type": "done", "reason": reason, "peak_memory_gib": 4.2, "estimated_memory_gib": 4.4})
    return events


def test_a_run_that_trains_passes_and_a_crash_or_a_late_out_of_memory_fails(rehearsal):
    assert rehearsal.verdict(_events(), 2) == rehearsal.Verdict(True, "trained")
    crashed = rehearsal.verdict(_events(error=("crash", "RuntimeError: boom\nTraceback (most recent call last)"),
                                        steps=0, reason="error"), 2)
    assert not crashed.ok and crashed.outcome.startswith("crashed: RuntimeError: boom")
    late = rehearsal.verdict(_events(error=("out_of_memory", "The GPU ran out of memory with one clip ..."),
                                     steps=1, reason="error"), 2)
    assert not late.ok and late.outcome.startswith("out_of_memory after training started")
    short = rehearsal.verdict(_events(steps=1, reason="stopped"), 2)
    assert not short.ok and "not 2 steps" in short.outcome
    assert not rehearsal.verdict([{"type": "started", "config": {}}], 2).ok  # no Done: the process died


def test_a_stop_before_training_passes_only_with_words_a_person_can_act_on(rehearsal):
    advice = ("The GPU ran out of memory with even one clip of the longest length. Choose the Low VRAM profile "
              "(LoRA, 8-bit optimizer, checkpointing), and start a new run.")
    stopped = rehearsal.verdict(_events(error=("out_of_memory", advice), steps=0, started=False, reason="error"), 2)
    assert stopped.ok and stopped.outcome.startswith("stopped before training: The GPU ran out of memory")
    terse = rehearsal.verdict(_events(error=("out_of_memory", "OOM"), steps=0, started=False, reason="error"), 2)
    assert not terse.ok


def test_the_table_has_a_line_per_case_with_the_micro_batch_the_run_trained_with(rehearsal, tmp_path):
    probe = {"type": "micro_batch", "cause": "probe", "micro_batch": 1, "grad_accum": 8}
    retry = {"type": "micro_batch", "cause": "out_of_memory", "micro_batch": 1, "grad_accum": 8}
    rows = [
        rehearsal.row(rehearsal.Case("xtts", 6.0), _events(probe), 2, card_name="H100", others_gib=0.0,
                      allowed_gib=5.5, seconds=20.0, probe_peak_gib=4.95),
        rehearsal.row(rehearsal.Case("f5", 8.0, 1.5), _events(retry), 2, card_name="H100", others_gib=2.02,
                      allowed_gib=5.48, seconds=30.0),
        rehearsal.row(rehearsal.Case("f5", 4.0, path="low"), _events(), 2, card_name="H100", others_gib=0.0,
                      allowed_gib=3.5, seconds=25.0),
    ]
    assert [(r["micro_batch"], r["grad_accum"], r["probed"]) for r in rows] == [(1, 8, True), (1, 8, False),
                                                                                (2, 4, False)]
    assert rows[0]["samples_per_s"] == 11.0  # the first step warms up and is left out
    md, data = rehearsal.write_results(rows, tmp_path, "2026-11-26")
    text = md.read_text()
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(lines) == 5 and lines[0].startswith("| card | other programs | engine | path | profile chosen")
    assert ("| 6 GiB | 0 GiB | xtts | Auto | medium | 1 x 8 | 4.20 GiB (probe 4.95) | 4.40 GiB | 11.00 | pass: trained |"
            in text)
    assert "| 8 GiB | 2.02 GiB | f5 | Auto | medium | 1 x 8 (after 1 out-of-memory retry) |" in text
    assert "| 4 GiB | 0 GiB | f5 | Low VRAM button | medium | 2 x 4 |" in text
    assert text.rstrip().endswith("3 of 3 cases passed.")
    assert json.loads(data.read_text()) == rows


def test_the_probes_peak_is_read_from_the_runs_memory_record(rehearsal, tmp_path):
    """The run's peak (its Done event's) starts after Auto's probe; the probe's own is in memory.json."""
    from alltalk_gui.core.training.loop import MEMORY_FILE

    started = {"type": "started", "run_dir": str(tmp_path), "config": {}}
    assert rehearsal.probe_peak([started]) is None  # no record (the run stopped before it)
    (tmp_path / MEMORY_FILE).write_text(json.dumps([{"probe_peak_gib": 9.0}, {"probe_peak_gib": 13.93}]))
    assert rehearsal.probe_peak([started]) == 13.93  # the last session's
    assert rehearsal.probe_peak([]) is None


@pytest.mark.parametrize("argv, message", [
    (["--sizes", "4,x"], "GiB separated by commas"), (["--sizes", "1"], "more than 1 GiB"),
    (["--desktop", "8"], "CARD:HELD"), (["--desktop", "4:3.5"], "less than the card"),
    (["--engines", "xtts,orpheus"], "choose from xtts, f5"), (["--steps", "0"], "at least 1"),
    (["--parts", "0"], "--parts must be at least 1"),
])
def test_bad_arguments_are_refused_by_name(rehearsal, capsys, argv, message):
    with pytest.raises(SystemExit) as stop:
        rehearsal.parse_args(argv)
    assert stop.value.code == 2 and message in capsys.readouterr().err


def test_the_defaults_are_the_issues_cards(rehearsal):
    opts = rehearsal.parse_args([])
    assert opts.sizes == (4.0, 6.0, 8.0, 12.0, 16.0) and opts.desktop == (8.0, 1.5)
    assert opts.engines == ("xtts", "f5") and opts.steps == 2 and opts.parts == 2
    assert rehearsal.parse_args(["--desktop", "none", "--engines", "f5"]).desktop is None


def test_without_cuda_it_says_so_and_exits_2(rehearsal, capsys, tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert rehearsal.main(["--out", str(tmp_path)]) == 2
    assert "needs an NVIDIA GPU" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing written
