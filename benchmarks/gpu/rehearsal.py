"""Card rehearsal: the app's own Auto, and its one-click Low VRAM button, on the graphics cards people have,
pretended on one big card.

For each card size (4, 6, 8, 12 and 16 GiB by default, and once an 8 GiB card with another program holding
1.5 GiB, as a desktop's browser and compositor do) and each engine, one training run as the app starts it:

1. the process's CUDA allocator is capped at what such a card leaves it (``torch.cuda.set_per_process_memory_
   fraction``): the card's size, less what the other program holds, less this process's own CUDA context (which
   a card pays too, outside the allocator);
2. the device list the app reads (``alltalk_gui.core.machine.gpu.list_devices``: this card's name, bf16 and
   driver, from NVML) is shown a card of that size with that much free (and the other program, by NVML's
   figure for it);
3. ``build_train_config(profile="auto")`` - what the Train page and ``alltalk-gui train --profile auto`` call -
   picks the profile, and ``train`` runs it at real size (random weights: XTTS v2 on 11 s clips, F5-TTS on 30 s
   clips) for a few steps: Auto's memory cap, its micro-batch probe, the out-of-memory retry, checkpoints, all the
   app's own. The Low VRAM button's path (``profile="low"``, no probing) runs on the smallest card.

A case passes when the run trains its steps without an error, or stops before training with a message a person
can act on (the card is too small, and what to do); it fails on a crash, on an out-of-memory error once training
has started, or on a stop without words. The table has, per case: the card, the profile chosen, the micro-batch
x accumulation the run trained with, the peak (``max_memory_reserved`` of its steps; Auto's probe's own peak
beside it: a size that does not fit fills the allocator up to Auto's cap before it fails) and samples/s. The
cases of one engine run one after another in one process (each run starts accelerate afresh); the engines run
beside each other, and beside the GPU tests, so samples/s here are indicative (the memory benchmarks time the
profiles alone).

    python benchmarks/gpu/rehearsal.py [--sizes 4,6,8,12,16] [--desktop 8:1.5] [--engines xtts,f5] [--steps 2]
                                       [--out DIR]

It needs a CUDA card with at least 40 GiB (both engines' cases side by side) and exits 2 without one. The table
goes to ``DIR/card_rehearsal_<date>.md`` and the rows to ``.json``; the exit status is 1 when a case failed.
The planning, the pretended card, the verdict and the table are plain functions, tested on the CPU
(tests/benchmarks/test_card_rehearsal.py); the GPU suite runs it (tests/gpu/test_card_rehearsal_cuda.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
GIB = 1024**3
SIZES = (4.0, 6.0, 8.0, 12.0, 16.0)
DESKTOP = (8.0, 1.5)  # a card of 8 GiB with another program holding 1.5 GiB
ENGINES = ("xtts", "f5")
STEPS = 2
CONTEXT_FALLBACK_GIB = 0.5  # a CUDA context when the driver does not say (torch 2.x with lazy module loading)
AUTO, LOW_BUTTON = "auto", "low"
PATH_TITLES = {AUTO: "Auto", LOW_BUTTON: "Low VRAM button"}


@dataclass(frozen=True)
class Case:
    engine: str
    card_gib: float
    desktop_gib: float = 0.0  # what another program holds on the card
    path: str = AUTO          # AUTO: the Train page's default; LOW_BUTTON: the one-click Low VRAM button

    @property
    def name(self) -> str:
        other = f"_plus{self.desktop_gib:g}" if self.desktop_gib else ""
        return f"{self.engine}_{self.card_gib:g}gib{other}_{self.path}".replace(".", "p")


@dataclass(frozen=True)
class Verdict:
    ok: bool
    outcome: str  # "trained", "stopped before training: <message>", or what went wrong


# ------------------------------------------------------------------------------------------------ the plan

def plan(sizes: tuple[float, ...], desktop: tuple[float, float] | None, engines: tuple[str, ...]) -> list[Case]:
    """Every case: each engine's Auto at each card size and on the desktop card, then its Low VRAM button on the
    smallest card."""
    cases = []
    for engine in engines:
        cases += [Case(engine, size) for size in sizes]
        if desktop:
            cases.append(Case(engine, desktop[0], desktop[1]))
        cases.append(Case(engine, min(sizes), path=LOW_BUTTON))
    return cases


def allocator_fraction(card_gib: float, others_gib: float, context_gib: float, total_gib: float) -> float:
    """The share of this (big) card's memory the process may allocate to stand for ``card_gib``: what such a card
    leaves a training process after the other programs and its own CUDA context."""
    room = card_gib - others_gib - context_gib
    if room <= 0:
        raise ValueError(f"a {card_gib:g} GiB card with {others_gib:.2f} GiB held elsewhere and a "
                         f"{context_gib:.2f} GiB context leaves nothing to train with")
    return min(1.0, room / total_gib)


def pretend_card(card, card_gib: float, others_gib: float, processes: tuple = ()):
    """``card`` (a :class:`~alltalk_gui.core.machine.gpu.DeviceInfo` of the real GPU) as a card of ``card_gib``
    with ``others_gib`` held by other programs (``processes``: NVML's entries for them)."""
    return dataclasses.replace(card, name=f"{card.name} (pretending {card_gib:g} GiB)", total_gib=card_gib,
                               free_gib=round(card_gib - others_gib, 2),
                               other_processes_gib=round(others_gib, 2) if others_gib else None,
                               processes=tuple(processes))


# ------------------------------------------------------------------------------------------------ the verdict

def verdict(events: list[dict[str, Any]], steps: int) -> Verdict:
    """Whether a run did what Auto promises: trained ``steps`` steps without an error, or stopped before training
    with a plain-language message."""
    started = any(e["type"] == "started" for e in events)
    errors = [e for e in events if e["type"] == "error"]
    done = next((e for e in reversed(events) if e["type"] == "done"), None)
    if done is None:
        return Verdict(False, "the run ended without its Done event")
    if errors:
        error = errors[0]
        message = " ".join(error["message"].split())
        if error["kind"] == "crash" or "Traceback" in error["message"]:
            return Verdict(False, f"crashed: {message[:300]}")
        if started:
            return Verdict(False, f"{error['kind']} after training started: {message[:300]}")
        if len(message) < 40:
            return Verdict(False, f"stopped before training without saying why: {message!r}")
        return Verdict(True, f"stopped before training: {message[:300]}")
    trained = [e["step"] for e in events if e["type"] == "step"]
    if not trained or trained[-1] != steps or done["reason"] not in ("max_steps", "finished"):
        return Verdict(False, f"trained steps {trained} and ended with {done['reason']}, not {steps} steps")
    return Verdict(True, "trained")


def row(case: Case, events: list[dict[str, Any]], steps: int, *, card_name: str, others_gib: float,
        allowed_gib: float, seconds: float, probe_peak_gib: float | None = None) -> dict[str, Any]:
    """One line of the table, from a run's events (and the probe's own peak, from the run's memory.json: the
    run's peak, its Done event's, starts after the probe)."""
    started = next((e for e in events if e["type"] == "started"), None)
    config = started["config"] if started else {}
    probes = [e for e in events if e["type"] == "micro_batch" and e["cause"] == "probe"]
    retries = [e for e in events if e["type"] == "micro_batch" and e["cause"] == "out_of_memory"]
    last = (retries or probes or [None])[-1]
    micro = (last["micro_batch"], last["grad_accum"]) if last else (config.get("batch_size"),
                                                                    config.get("grad_accum_steps"))
    speeds = [e["samples_per_s"] for e in events if e["type"] == "step"][1:]  # the first step warms up
    done = next((e for e in reversed(events) if e["type"] == "done"), {})
    judged = verdict(events, steps)
    return {
        "case": case.name, "engine": case.engine, "card_gib": case.card_gib, "others_gib": round(others_gib, 2),
        "path": case.path, "gpu": card_name, "allowed_gib": round(allowed_gib, 2),
        "profile": config.get("profile"), "micro_batch": micro[0], "grad_accum": micro[1],
        "probed": bool(probes), "out_of_memory_retries": len(retries),
        "peak_reserved_gib": done.get("peak_memory_gib"), "probe_peak_reserved_gib": probe_peak_gib,
        "estimated_gib": done.get("estimated_memory_gib"),
        "samples_per_s": round(sum(speeds) / len(speeds), 2) if speeds else None,
        "ok": judged.ok, "outcome": judged.outcome, "seconds": round(seconds, 1),
    }


# ------------------------------------------------------------------------------------------------ the table

def table(rows: list[dict[str, Any]]) -> str:
    """The rehearsal as a Markdown table, one line per case, and a last line saying how many passed."""
    head = ("| card | other programs | engine | path | profile chosen | micro-batch x accum | peak reserved | "
            "estimate | samples/s | result |")
    lines = [head, "|" + " --- |" * (head.count("|") - 1)]
    for r in rows:
        micro = f"{r['micro_batch']} x {r['grad_accum']}" if r["micro_batch"] else "-"
        if r["out_of_memory_retries"]:
            micro += f" (after {r['out_of_memory_retries']} out-of-memory retry)"
        peak = f"{r['peak_reserved_gib']:.2f} GiB" if r["peak_reserved_gib"] is not None else "-"
        if r.get("probe_peak_reserved_gib") is not None:
            peak += f" (probe {r['probe_peak_reserved_gib']:.2f})"
        estimate = f"{r['estimated_gib']:.2f} GiB" if r["estimated_gib"] is not None else "-"
        speed = f"{r['samples_per_s']:.2f}" if r["samples_per_s"] is not None else "-"
        result = ("pass: " if r["ok"] else "FAIL: ") + r["outcome"]
        lines.append(f"| {r['card_gib']:g} GiB | {r['others_gib']:g} GiB | {r['engine']} | {PATH_TITLES[r['path']]} "
                     f"| {r['profile'] or '-'} | {micro} | {peak} | {estimate} | {speed} | {result} |")
    failed = sum(not r["ok"] for r in rows)
    lines.append("")
    lines.append(f"{len(rows) - failed} of {len(rows)} cases passed." if rows else "No cases ran.")
    return "\n".join(lines) + "\n"


def write_results(rows: list[dict[str, Any]], out: Path, day: str) -> tuple[Path, Path]:
    """``card_rehearsal_<day>.md`` (the table) and ``.json`` (the rows) in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    md, data = out / f"card_rehearsal_{day}.md", out / f"card_rehearsal_{day}.json"
    md.write_text(table(rows), encoding="utf-8")
    data.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return md, data


# ------------------------------------------------------------------------------------------------ arguments

def _sizes(text: str) -> tuple[float, ...]:
    try:
        sizes = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sizes takes GiB separated by commas, e.g. 4,6,8 (got {text!r})")
    if not sizes or any(size <= 1 for size in sizes):
        raise argparse.ArgumentTypeError(f"--sizes: each card must be more than 1 GiB (got {text!r})")
    return sizes


def _desktop(text: str) -> tuple[float, float] | None:
    if text.lower() in ("", "none", "no"):
        return None
    try:
        card, held = (float(part) for part in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--desktop takes CARD:HELD in GiB, e.g. 8:1.5, or none (got {text!r})")
    if not 0 < held < card - 1:
        raise argparse.ArgumentTypeError(f"--desktop: the other program must hold less than the card (got {text!r})")
    return card, held


def _engines(text: str) -> tuple[str, ...]:
    engines = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [e for e in engines if e not in ENGINES]
    if not engines or unknown:
        raise argparse.ArgumentTypeError(f"--engines: choose from {', '.join(ENGINES)} (got {text!r})")
    return engines


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=_sizes, default=SIZES, help="card sizes in GiB (default 4,6,8,12,16)")
    parser.add_argument("--desktop", type=_desktop, default=DESKTOP,
                        help="CARD:HELD, a card with another program holding HELD GiB (default 8:1.5; none)")
    parser.add_argument("--engines", type=_engines, default=ENGINES, help="xtts,f5 (default both)")
    parser.add_argument("--steps", type=int, default=STEPS, help=f"optimizer steps per run (default {STEPS})")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results", help="results folder")
    parser.add_argument("--work", type=Path, help="folder for the models and projects (default: a temporary one)")
    parser.add_argument("--parts", type=int, default=2, help="processes per engine, side by side (default 2)")
    parser.add_argument("--one-engine", help=argparse.SUPPRESS)  # internal: ENGINE:PART, one part of its cases
    opts = parser.parse_args(argv)
    if opts.steps < 1:
        parser.error("--steps must be at least 1")
    if opts.parts < 1:
        parser.error("--parts must be at least 1")
    return opts


# ------------------------------------------------------------------------------------------------ on the card

def own_context_gib() -> float:
    """This process's CUDA context: what the driver says the process holds, less what torch's allocator holds."""
    import os

    import torch

    torch.empty(1, device="cuda")
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        used = next((p.usedGpuMemory for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
                     if p.pid == os.getpid() and p.usedGpuMemory), None)
        pynvml.nvmlShutdown()
    except Exception:  # no NVML, or a driver that lists no processes here
        used = None
    if used is None:
        return CONTEXT_FALLBACK_GIB
    return max(0.1, (used - torch.cuda.memory_reserved()) / GIB)


def start_desktop_program(held_gib: float) -> subprocess.Popen:
    """A second process that holds ``held_gib`` on the card until it is killed."""
    code = (f"import torch, time; x = torch.empty(int({held_gib} * 1024**3), dtype=torch.uint8, device='cuda'); "
            "torch.cuda.synchronize(); print('ready', flush=True); time.sleep(3600)")
    program = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    if program.stdout.readline().strip() != "ready":
        program.kill()
        raise RuntimeError("the desktop stand-in could not take its memory on the card")
    return program


def desktop_as_seen(program: subprocess.Popen, held_gib: float) -> tuple[float, tuple]:
    """What the app sees the other program hold (NVML's figure for its process id, context included), and its
    entry; ``held_gib`` and a context where the driver gives no figure."""
    from alltalk_gui.core.machine.gpu import list_devices

    time.sleep(0.5)
    card = next(d for d in list_devices() if d.kind == "cuda")
    entry = next((p for p in card.processes if p.pid == program.pid), None)
    if entry is not None and entry.used_gib:
        return entry.used_gib, (entry,)
    return held_gib + CONTEXT_FALLBACK_GIB, ((entry,) if entry else ())


def inputs(engine: str, work: Path, part: int) -> tuple[Path, Path]:
    """(base-model folder, project folder) for ``engine``: the first part writes the base model into ``work``
    (the others wait for it and share it); each part writes its own project."""
    import rehearsal_inputs as made
    from alltalk_gui.core.engine_api.engine import get_engine

    base = work / ("xtts_base" if engine == "xtts" else "f5tts_v1_base")
    ready = work / f"{base.name}.ready"
    if part == 1:
        (made.write_xtts_base if engine == "xtts" else made.write_f5_base)(base)
        ready.touch()
    deadline = time.time() + 900
    while not ready.exists():
        if time.time() > deadline:
            raise RuntimeError(f"the {engine} base model never appeared in {work}")
        time.sleep(1)
    seconds = made.XTTS_CLIP_S if engine == "xtts" else made.F5_CLIP_S
    project = made.write_project(work / f"{engine}_voice_{part}", seconds, clips=8,
                                 rate=get_engine(engine).sample_rate)
    return base, project


def run_case(case: Case, base: Path, project: Path, steps: int, context_gib: float) -> dict[str, Any]:
    """One case in this process (the allocator capped for its card, released afterwards)."""
    import gc
    import shutil

    import torch

    from alltalk_gui.core.machine.gpu import list_devices
    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.core.training.loop import train
    from alltalk_gui.core.training.run_config import build_train_config

    program = start_desktop_program(case.desktop_gib) if case.desktop_gib else None
    try:
        others, processes = desktop_as_seen(program, case.desktop_gib) if program else (0.0, ())
        devices = list_devices()
        real = next(d for d in devices if d.kind == "cuda")
        shown = [pretend_card(real, case.card_gib, others, processes)] + [d for d in devices if d.kind == "cpu"]
        total = torch.cuda.get_device_properties(real.index).total_memory / GIB
        fraction = allocator_fraction(case.card_gib, others, context_gib, total)
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.set_per_process_memory_fraction(fraction, real.index)
        quick = {"run_name": case.name, "device": "cuda", "max_steps": steps, "eval_each_epoch": False,
                 "memory_interval_s": 0.0, "save_every_steps": 0}
        built = build_train_config(VoiceProject.open(project), base, profile=case.path, devices=shown,
                                   overrides=quick, engine=case.engine)
        started, events = time.time(), []
        try:
            for event in train(built.config):
                events.append(event.to_dict())
        except Exception:  # a crash: the run has yielded its Error (kind crash) and Done first; judged from them
            pass
        result = row(case, events, steps, card_name=real.name, others_gib=others, allowed_gib=fraction * total,
                     seconds=time.time() - started, probe_peak_gib=probe_peak(events))
        result["auto_reason"] = built.auto_reason
    except Exception as exc:  # the case could not even start (the desktop stand-in, the inputs)
        result = missing_row(case, f"crashed before training: {type(exc).__name__}: {exc}")
    finally:
        if program is not None:
            program.kill()
            program.wait()
        torch.cuda.set_per_process_memory_fraction(1.0)
        shutil.rmtree(Path(project) / "runs" / case.name, ignore_errors=True)  # checkpoints: gigabytes each
        gc.collect()
        torch.cuda.empty_cache()
    return result


def probe_peak(events: list[dict[str, Any]]) -> float | None:
    """Auto's probe's own peak (GiB), from the run's memory.json (its last session); None without a probe."""
    from alltalk_gui.core.training.loop import MEMORY_FILE

    started = next((e for e in events if e["type"] == "started"), None)
    path = Path(started["run_dir"]) / MEMORY_FILE if started else None
    if path is None or not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))[-1].get("probe_peak_gib")


def run_engine(engine: str, part: int, parts: int, opts: argparse.Namespace, work: Path) -> list[dict[str, Any]]:
    """Part ``part`` of ``parts`` of ``engine``'s cases, one after another in this process; prints each row as a
    JSON line."""
    from alltalk_gui.core.machine.memory import use_expandable_segments

    use_expandable_segments()  # as training does, before this process touches the card
    import torch

    torch.cuda.init()
    context = own_context_gib()
    base, project = inputs(engine, work, part)
    rows = []
    for case in share(plan(opts.sizes, opts.desktop, (engine,)), part, parts):
        rows.append(run_case(case, base, project, opts.steps, context))
        print(json.dumps(rows[-1]), flush=True)
    return rows


def share(cases: list[Case], part: int, parts: int) -> list[Case]:
    """The cases of part ``part`` (from 1) of ``parts``: every ``parts``-th, so each part gets big and small."""
    return cases[part - 1::parts]


def main(argv: list[str] | None = None) -> int:
    import tempfile

    opts = parse_args(argv)
    sys.path.insert(0, str(HERE.parent))  # real_size.py
    sys.path.insert(0, str(HERE))         # rehearsal_inputs.py
    import torch

    if not torch.cuda.is_available():
        print("No CUDA GPU here (torch.cuda.is_available() is False): the card rehearsal needs an NVIDIA GPU.",
              file=sys.stderr)
        return 2
    work_dir = tempfile.TemporaryDirectory(prefix="card_rehearsal_") if opts.work is None else None
    work = opts.work or Path(work_dir.name)
    try:
        if opts.one_engine:
            engine, _, part = opts.one_engine.partition(":")
            run_engine(engine, int(part or 1), opts.parts, opts, work / engine)
            return 0
        rows = run_engines(opts, work, sys.argv[1:] if argv is None else argv)
    finally:
        if work_dir is not None:
            work_dir.cleanup()
    md, _ = write_results(rows, opts.out, time.strftime("%Y-%m-%d"))
    print(md.read_text(encoding="utf-8"))
    return 0 if rows and all(r["ok"] for r in rows) else 1


def run_engines(opts: argparse.Namespace, work: Path, argv: list[str]) -> list[dict[str, Any]]:
    """Each engine's cases in ``opts.parts`` processes, all side by side; the rows in plan order."""
    children = {}
    for engine in opts.engines:
        (work / engine).mkdir(parents=True, exist_ok=True)
        for part in range(1, opts.parts + 1):
            children[engine, part] = subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve()), *argv, "--one-engine", f"{engine}:{part}",
                 "--work", str(work)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    found: dict[str, dict[str, Any]] = {}
    for (engine, part), child in children.items():
        out, _ = child.communicate()
        for line in out.splitlines():
            if line.startswith("{"):
                record = json.loads(line)
                found[record["case"]] = record
        for case in share(plan(opts.sizes, opts.desktop, (engine,)), part, opts.parts):
            found.setdefault(case.name, missing_row(case, f"not run: its process exited with {child.returncode}"))
    return [found[case.name] for case in plan(opts.sizes, opts.desktop, opts.engines)]


def missing_row(case: Case, outcome: str) -> dict[str, Any]:
    """The table line of a case whose process died before it."""
    return {"case": case.name, "engine": case.engine, "card_gib": case.card_gib, "others_gib": case.desktop_gib,
            "path": case.path, "profile": None, "micro_batch": None, "grad_accum": None, "probed": False,
            "out_of_memory_retries": 0, "peak_reserved_gib": None, "probe_peak_reserved_gib": None,
            "estimated_gib": None, "samples_per_s": None,
            "ok": False, "outcome": outcome}


if __name__ == "__main__":
    sys.exit(main())
