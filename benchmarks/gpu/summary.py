"""The GPU kit's one summary table, from what its run wrote into the results folder: the GPU tests (JUnit XML),
the card rehearsal (``card_rehearsal_<day>.json``) and both memory benchmarks (``*memory_profiles_<day>_gpu.json``),
one line per test outcome, rehearsal case and benchmark case, and the time each phase took; then the goals: each
profile's peak against the memory target its profile file promises, and the speed goals of issues #28 and #25,
each met or missed with the measured figures.

    python benchmarks/gpu/summary.py RESULTS_DIR DAY [--phase NAME=SECONDS ...]
    python benchmarks/gpu/summary.py RESULTS_DIR DAY --more     # the optional third call's (run_more.sh)

Exit status 0 when every test passed (or skipped), every rehearsal case passed and no benchmark case failed
(``--more``: no benchmark case failed). Standard library only, like the rest of the kit's glue.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

PROFILES = Path(__file__).resolve().parents[2] / "resources" / "profiles"
BASELINES = {"xtts": "alltalk-baseline", "f5": "f5-baseline", "orpheus": "orpheus-full", "parler": "parler-baseline"}
# The speed goals, in the same run and on clips of the same length: (engine, profile, times the baseline's
# samples/s, or samples/s itself). Issue #28: XTTS and F5 High twice their baselines, XTTS Low twice the 3.9
# samples/s it had on the H100 on 2026-11-26; issue #25: Orpheus Medium 1.5 times Orpheus's own full fine-tune.
SPEED_GOALS = (("xtts", "high", 2.0, None), ("f5", "high", 2.0, None), ("xtts", "low", None, 2 * 3.9),
               ("orpheus", "medium", 1.5, None))
TABLE_HEAD = ("| part | case | result | peak reserved GiB | estimate GiB | samples/s |",
              "| --- | --- | --- | --- | --- | --- |")
# A model size other than the one a profile file's target is written for has its own target in that file's
# [size_targets] (Parler-TTS Large v1's Low: 8 GiB, resources/profiles/parler/low.toml; issue #26), and none where
# the file names none. Its cases are named "<engine>-<size>" in the tables.
DEFAULT_SIZES = {"parler": "mini"}
# What the optional third call (run_more.sh) writes: (engine, its files in the results folder).
MORE = (("orpheus", "orpheus_*_gpu.json"), ("parler", "parler_memory_profiles_*_gpu.json"),
        ("xtts", "memory_profiles_medium_auto_gpu.json"), ("f5", "f5_memory_profiles_medium_auto_gpu.json"))


def test_results(xml: Path) -> dict[str, list[str]]:
    """JUnit XML -> {"passed": [...], "failed": [...], "skipped": [...]} (test names)."""
    found: dict[str, list[str]] = {"passed": [], "failed": [], "skipped": []}
    if not xml.is_file():
        return found
    for case in ET.parse(xml).getroot().iter("testcase"):
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        if case.find("failure") is not None or case.find("error") is not None:
            found["failed"].append(name)
        elif case.find("skipped") is not None:
            found["skipped"].append(name)
        else:
            found["passed"].append(name)
    return found


def _read(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else []


def _gib(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, (int, float)) else "-"


def lines(results: Path, day: str, phases: dict[str, float], more: bool = False) -> tuple[list[str], bool]:
    """The table's lines and whether everything passed (``more``: the third call's benchmarks alone)."""
    if more:
        return more_lines(results)
    tests: dict[str, list[str]] = {"passed": [], "failed": [], "skipped": []}
    for xml in sorted(results.glob(f"gpu_tests_{day}*.xml")):  # the suite's and the card rehearsal's, run side by side
        for outcome, names in test_results(xml).items():
            tests[outcome] += names
    rehearsal = _read(results / f"card_rehearsal_{day}.json")
    benchmarks = [("xtts", r) for r in _read(results / f"memory_profiles_{day}_gpu.json")]
    benchmarks += [("f5", r) for r in _read(results / f"f5_memory_profiles_{day}_gpu.json")]
    out = list(TABLE_HEAD)
    out.append(f"| GPU tests | {sum(map(len, tests.values()))} tests | {len(tests['passed'])} passed, "
               f"{len(tests['failed'])} failed, {len(tests['skipped'])} skipped | - | - | - |")
    out += [f"| GPU tests | {name} | FAILED | - | - | - |" for name in tests["failed"]]
    for r in rehearsal:
        case = (f"{r['engine']} on {r['card_gib']:g} GiB" + (f" (+{r['others_gib']:g} GiB held)" if r["others_gib"]
                else "") + (" Low VRAM button" if r["path"] == "low" else " Auto")
                + (f": {r['profile']} {r['micro_batch']} x {r['grad_accum']}" if r.get("profile") else ""))
        result = ("pass: " if r["ok"] else "FAIL: ") + r["outcome"][:120]
        out.append(f"| card rehearsal | {case} | {result} | {_gib(r['peak_reserved_gib'])} | "
                   f"{_gib(r['estimated_gib'])} | {_gib(r['samples_per_s'])} |")
    out += benchmark_lines(benchmarks)
    out += goals(benchmarks)
    if phases:
        out.append("")
        out.append("Time: " + ", ".join(f"{name} {seconds:.0f} s" for name, seconds in phases.items())
                   + f"; {sum(phases.values()):.0f} s in all.")
    ok = (not tests["failed"] and bool(tests["passed"]) and all(r["ok"] for r in rehearsal) and bool(rehearsal)
          and not any(r.get("error") for _, r in benchmarks) and bool(benchmarks))
    return out, ok


def more_lines(results: Path) -> tuple[list[str], bool]:
    """The third call's benchmark cases and goals, and whether none failed (and any ran)."""
    benchmarks = [(_sized(engine, r), r) for engine, pattern in MORE for path in sorted(results.glob(pattern))
                  for r in _read(path)]
    out = list(TABLE_HEAD)
    out += benchmark_lines(benchmarks)
    out += goals(benchmarks, engines=("orpheus",))
    return out, bool(benchmarks) and not any(r.get("error") for _, r in benchmarks)


def benchmark_lines(benchmarks: list[tuple[str, dict[str, Any]]]) -> list[str]:
    out = []
    for engine, r in benchmarks:
        result = f"error: {r['error'][:120]}" if r.get("error") else f"{r.get('micro_batch')} x {r.get('grad_accum')}"
        clip = f" ({r['clip_s']:g} s clips)" if isinstance(r.get("clip_s"), (int, float)) else ""
        out.append(f"| {engine} memory benchmark | {r['profile']}{clip} | {result} | "
                   f"{_gib(r.get('peak_reserved_gib'))} | {_gib(r.get('estimated_gib'))} | "
                   f"{_gib(r.get('samples_per_s'))} |")
    return out


def _sized(engine: str, record: dict[str, Any]) -> str:
    """The engine's name, with the model's size where it is not the one the profile files' targets are for."""
    size = record.get("size")
    return f"{engine}-{size}" if size and size != DEFAULT_SIZES.get(engine, size) else engine


def _target(engine: str, profile: str) -> float | None:
    """The memory target (GiB) the profile's own file promises, for the size an "<engine>-<size>" names; None (no
    such profile, or no target for that size)."""
    engine, _, size = engine.partition("-")
    path = PROFILES / engine / f"{profile}.toml"
    if not path.is_file():
        return None
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return data.get("size_targets", {}).get(size) if size else float(data["target_gib"])


def goals(benchmarks: list[tuple[str, dict[str, Any]]], engines: tuple[str, ...] = ("xtts", "f5")) -> list[str]:
    """One line per goal the benchmarks can judge: each profile's peak against its target, and the speed goals.
    A goal is said met or missed with its figures; none decides the kit's exit status (the tests do). The speed
    goals of ``engines`` (the ones this call measures) are listed even when a case is missing."""
    runs = {(engine, r["profile"], r.get("clip_s")): r for engine, r in benchmarks if not r.get("error")}
    # An engine measured on clips of several lengths says which each goal is for.
    lengths = {engine: {clip for e, _, clip in runs if e == engine} for engine, _, _ in runs}

    def on(engine: str, clip: Any) -> str:
        return f" ({clip:g} s clips)" if len(lengths.get(engine, ())) > 1 else ""

    out = ["", "| goal | measured | result |", "| --- | --- | --- |"]
    for (engine, profile, clip), r in runs.items():
        target = _target(engine, profile)
        peak = r.get("peak_reserved_gib")
        if target is None or not isinstance(peak, (int, float)):
            continue
        out.append(f"| {engine} {profile}{on(engine, clip)}: peak <= {target:g} GiB | {peak:.2f} GiB at "
                   f"{r.get('micro_batch')} x {r.get('grad_accum')} | {'met' if peak <= target else 'MISSED'} |")
    for engine, profile, times, rate in SPEED_GOALS:
        if engine not in engines:
            continue  # another call measures it
        pairs = [(clip, r, runs.get((engine, BASELINES[engine], clip)))
                 for (e, p, clip), r in runs.items() if (e, p) == (engine, profile)]
        if times is not None:
            goal = f"{engine} {profile}: >= {times:g}x {BASELINES[engine]}'s samples/s"
            measured = [(clip, r, base) for clip, r, base in pairs if base is not None and base.get("samples_per_s")]
            if not measured:
                out.append(f"| {goal} | not measured in this run | - |")
            for clip, r, base in measured:
                ratio = r["samples_per_s"] / base["samples_per_s"]
                out.append(f"| {goal}{on(engine, clip)} | "
                           f"{r['samples_per_s']:.2f} / {base['samples_per_s']:.2f} = {ratio:.2f}x | "
                           f"{'met' if ratio >= times else 'MISSED'} |")
        else:
            goal = f"{engine} {profile}: >= {rate:g} samples/s"
            if not pairs:
                out.append(f"| {goal} | not measured in this run | - |")
            for clip, r, _ in pairs:
                out.append(f"| {goal}{on(engine, clip)} | {r['samples_per_s']:.2f} | "
                           f"{'met' if r['samples_per_s'] >= rate else 'MISSED'} |")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("day")
    parser.add_argument("--phase", action="append", default=[], metavar="NAME=SECONDS")
    parser.add_argument("--more", action="store_true", help="the optional third call's benchmarks (run_more.sh)")
    opts = parser.parse_args(argv)
    phases = {}
    for item in opts.phase:
        name, _, seconds = item.partition("=")
        try:
            phases[name] = float(seconds)
        except ValueError:
            parser.error(f"--phase takes NAME=SECONDS (got {item!r})")
    table, ok = lines(opts.results, opts.day, phases, more=opts.more)
    text = "\n".join(table) + "\n"
    (opts.results / f"gpu_{'more' if opts.more else 'kit'}_{opts.day}_summary.md").write_text(text, encoding="utf-8")
    print(text)
    print("Everything passed." if ok else "Something failed or did not run: see the lines above and the log.")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
