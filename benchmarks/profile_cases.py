"""What the per-profile memory benchmarks share, whatever the engine: each case in its own process, its record,
its timing and its peaks.

``memory_profiles.py`` (XTTS v2) and ``f5_memory_profiles.py`` (F5-TTS) each say how to build and step one case;
this module runs them. The parent (:func:`run_cases`) never touches the model: it starts one child to describe the
device (``--prepare``), then one child per case (``--one CASE``), each of which prints its record as the last line of
JSON on stdout, and rewrites the JSON list after every case, so a run that is stopped keeps what it measured. Each
case in its own process so its peak is its own (a child's ``ru_maxrss`` can include its parent's, so the parent
stays small).

The next case's process starts while a case runs, so its Python start and imports (seconds a case, a tenth of the
GPU kit's benchmark time) overlap the running case; it then waits for the parent's word on stdin
(:func:`wait_for_the_card`) before it touches the GPU, so every timed case still runs alone on the card.

A record always has the keys of :data:`FIELDS` (None where a case was skipped or failed before measuring them).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any, Callable

GIB = 1024**3
RESULTS = Path(__file__).resolve().parent / "results"
# Every record has these keys (None where a case was skipped or failed before measuring them).
FIELDS = ("date", "device", "profile", "peak_reserved_gib", "peak_allocated_gib", "peak_rss_gib", "estimated_gib",
          "samples_per_s", "step_s", "micro_batch", "grad_accum", "clip_s", "steps", "final_loss", "precision",
          "optimizer", "lora_rank", "gradient_checkpointing", "notes", "torch")
# Set by the parent for a case's child that starts while another case runs: wait for a line on stdin first.
QUEUED_ENV = "ALLTALK_BENCH_QUEUED"
# What every case imports, whatever the engine, imported while waiting. None of it may touch the GPU or import
# bitsandbytes (which asks the card about itself): a case sets its allocator before the GPU starts. peft imports
# bitsandbytes, so it waits for the go.
COMMON_PRELOAD = ("torch", "accelerate", "transformers", "alltalk_gui.core.training.levers")


# ------------------------------------------------------------------------------------------------ inside a case

def timed(case: str, micro_step: Callable[[bool], Any], micro: int, accum: int, opts: argparse.Namespace,
          on_cuda: bool, after_step: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Run ``opts.warmup`` untimed and ``opts.steps`` timed optimizer steps of ``accum`` micro-batches each.

    ``micro_step(last)`` runs one micro-batch (``last``: the step's final one) and returns its loss;
    ``after_step(step)``, when given, runs after each optimizer step inside the timing (an EMA update, say).
    """
    import torch

    def sync() -> None:
        if on_cuda:
            torch.cuda.synchronize()  # kernels run asynchronously: the clock must wait for them

    times: list[float] = []
    for i in range(opts.warmup + opts.steps):
        sync()
        start = time.perf_counter()
        losses = [micro_step(j == accum - 1) for j in range(accum)]
        if after_step is not None:
            after_step(i + 1)
        sync()
        times.append(time.perf_counter() - start)
        kind = "warm-up" if i < opts.warmup else "step"
        print(f"{case}: {kind} {i + 1} took {times[-1]:.2f} s", file=sys.stderr, flush=True)
    timed_ = times[opts.warmup:] or times
    step_s = sum(timed_) / len(timed_)
    loss = float(torch.stack(losses).float().mean())
    return {"micro_batch": micro, "grad_accum": accum, "effective_batch": micro * accum,
            "step_s": round(step_s, 3), "samples_per_s": round(micro * accum / step_s, 4),
            "step_times_s": [round(t, 3) for t in timed_], "warmup_step_s": [round(t, 3) for t in times[:opts.warmup]],
            "final_loss": round(loss, 4) if math.isfinite(loss) else None}  # JSON has no NaN


def op_counter():
    """A ``TorchDispatchMode`` that counts the aten operations dispatched below autograd while it is entered
    (``.ops``; ``.names``: a Counter by operation): each one the host dispatches, and on a card most launch a
    kernel, so a step that waits on the host waits about in proportion (the benchmarks that count them:
    ``xtts_streamline.py``, ``orpheus_host_overhead.py``)."""
    import collections

    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.ops = 0
            self.names: collections.Counter = collections.Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops += 1
            self.names[func.overloadpacket.__name__] += 1
            return func(*args, **(kwargs or {}))

    return Count()


def no_phase(name: str) -> contextlib.AbstractContextManager:
    """What a case's ``micro_step`` times its phases with outside :func:`breakdown`: nothing."""
    return contextlib.nullcontext()


def breakdown(micro_step: Callable[..., Any], accum: int, on_cuda: bool) -> dict[str, Any]:
    """One more optimizer step, after the timed ones, with each phase timed apart: ``micro_step(last, phase)``
    wraps its parts in ``with phase("front_end" | "forward" | "backward" | "optimizer")``. The device is
    synchronised at each phase's edges (so the timed steps are not), and what no phase holds is ``rest`` (Python
    between the phases, accelerate's bookkeeping). Returns ``breakdown_s`` (seconds per phase, per optimizer step)
    and ``breakdown_step_s`` (that step's whole time, slower than ``step_s`` by the syncs)."""
    import torch

    def sync() -> None:
        if on_cuda:
            torch.cuda.synchronize()

    totals: dict[str, float] = {}

    @contextlib.contextmanager
    def phase(name: str):
        sync()
        start = time.perf_counter()
        try:
            yield
        finally:
            sync()
            totals[name] = totals.get(name, 0.0) + time.perf_counter() - start

    sync()
    start = time.perf_counter()
    for j in range(accum):
        micro_step(j == accum - 1, phase)
    sync()
    whole = time.perf_counter() - start
    parts = {name: round(totals.get(name, 0.0), 4) for name in PHASES}
    parts["rest"] = round(max(0.0, whole - sum(totals.values())), 4)
    return {"breakdown_s": parts, "breakdown_step_s": round(whole, 4)}


PHASES = ("front_end", "forward", "backward", "optimizer")


def loop_micro_step(acc, model, batch, loss: Callable[..., dict], optimizer, max_norm: float) -> Callable[..., Any]:
    """A profile case's ``micro_step(last, phase=no_phase)``: one micro-batch as the training loop runs it, under
    ``acc.accumulate`` (accelerate decides when the gradients are complete): the engine's ``loss`` and
    ``acc.backward`` (``levers.forward_backward``, its two halves timed apart), then, once they are complete,
    clipping at ``max_norm``, the optimizer step (a no-op before) and the gradients freed right away."""

    def micro_step(last: bool, phase=no_phase):
        with acc.accumulate(model):
            with phase("forward"):
                losses = loss(model, batch)
            with phase("backward"):
                acc.backward(losses["loss"])
            with phase("optimizer"):
                if acc.sync_gradients:
                    acc.clip_grad_norm_(model.parameters(), max_norm)
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)  # no need for this memory until the next backward
        return losses["loss"].detach()

    return micro_step


def peaks(device) -> dict[str, Any]:
    """The case's peaks so far: CUDA's reserved and allocated maxima on a GPU, the process's peak RSS always."""
    from alltalk_gui.core.machine.memory import peak_rss_gib

    found: dict[str, Any] = {"peak_rss_gib": round(peak_rss_gib(), 3), "peak_reserved_gib": None,
                             "peak_allocated_gib": None}
    if device.kind == "cuda":
        import torch

        found["peak_reserved_gib"] = round(torch.cuda.max_memory_reserved() / GIB, 3)
        found["peak_allocated_gib"] = round(torch.cuda.max_memory_allocated() / GIB, 3)
        found["measure"] = "torch.cuda.max_memory_reserved / max_memory_allocated of the case's process"
    else:
        found["measure"] = "peak RSS of the case's process (ru_maxrss)"
    return found


def complete(record: dict[str, Any]) -> dict[str, Any]:
    for key in FIELDS:
        record.setdefault(key, [] if key == "notes" else None)
    return record


def to_device(batch: dict[str, Any], device) -> dict[str, Any]:
    return {k: v.to(device) if hasattr(v, "to") else v for k, v in batch.items()}


def resolve_device(kind: str) -> str:
    import torch

    if kind == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if kind == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA GPU here; use --device cpu.")
    return kind


def device_info(kind: str):
    """``DeviceInfo`` of the CUDA device torch uses (index 0), or of the CPU."""
    from alltalk_gui.core.machine.gpu import list_devices

    devices = list_devices()
    return next(d for d in devices if d.kind == kind and d.index == 0)


def device_label(device) -> str:
    if device.kind == "cuda":
        return f"{device.name} ({device.total_gib:.0f} GiB, CUDA {device.capability})"
    return f"CPU: {device.name}, {device.cores} cores, {device.total_gib:.0f} GiB RAM"


def device_slug(device) -> str:
    """The device's part of a result file's name: ``cpu``, or the GPU's name (``nvidia-h100-80gb-hbm3``)."""
    import re

    return "cpu" if device.kind == "cpu" else re.sub(r"[^a-z0-9]+", "-", device.name.lower()).strip("-")


def case_started(case: str, opts: argparse.Namespace, device, threads: int, alloc_conf: str | None
                 ) -> dict[str, Any]:
    """The fields every case record starts with: what ran where, with which settings of the run."""
    import torch

    return {"date": date.today().isoformat(), "device": device_label(device), "device_kind": device.kind,
            "profile": case, "arch": opts.arch, "quick": opts.quick, "torch": torch.__version__, "threads": threads,
            "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32), "clip_s": opts.clip_seconds,
            "steps": opts.steps, "warmup_steps": opts.warmup, "cuda_alloc_conf": alloc_conf,
            "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
            # glibc's setting, when given: a fixed threshold returns freed large buffers to the system at once
            "malloc_mmap_threshold": os.environ.get("MALLOC_MMAP_THRESHOLD_"), "notes": []}


# ------------------------------------------------------------------------------------------------ the run (parent)

def last_json(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return None


def skipped_auto(opts: argparse.Namespace, info: dict[str, Any]) -> dict[str, Any]:
    """The record of ``auto`` on the CPU, where it is not run: its sizing is CUDA-only."""
    chosen = info.get("auto_profile")
    if chosen:
        why = (f"auto chooses {chosen} here ({info['auto_reason']}) and its sizing (90 % memory cap, micro-batch "
               f"probe) is CUDA-only, so it would train exactly as the {chosen} row does")
    else:
        why = (f"auto sizing (90 % memory cap, micro-batch probe) is CUDA-only; choosing the profile failed here: "
               f"{str(info.get('auto_reason')).rstrip('.')}")
    return complete({
        "date": date.today().isoformat(), "device": info["device"], "device_kind": "cpu", "profile": "auto",
        "resolved_profile": chosen, "skipped": True, "arch": opts.arch, "quick": opts.quick,
        "torch": info["torch"], "clip_s": opts.clip_seconds, "steps": 0,
        "notes": [f"Not run on the CPU: {why}. Run with --device cuda to measure auto."],
    })


def run_cases(opts: argparse.Namespace, child: Callable[..., list[str]], stem: str) -> Path:
    """Every case of ``opts.profiles`` in its own process, one after the other; the JSON list is rewritten after
    each. ``child(opts, *extra)`` is the command line of a child of the benchmark script; the result goes to
    ``opts.out`` or ``benchmarks/results/<stem>_<date>_<device>.json``."""
    with tempfile.TemporaryDirectory(prefix=f"{stem}_") as tmp:
        files = Path(tmp) / "files"  # what --prepare writes for the cases (the XTTS front end's random files)
        # stderr passes through: per-step times show up while a slow case is still running.
        done = subprocess.run(child(opts, "--prepare", str(files)), stdout=subprocess.PIPE, text=True, check=True)
        info = last_json(done.stdout)
        opts.device = info["device_kind"]
        out = Path(opts.out or RESULTS / f"{stem}_{date.today().isoformat()}_{info['slug']}.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        print(f"{info['device']}; writing {out}", file=sys.stderr, flush=True)
        records: list[dict[str, Any]] = []
        measured = [case for case in opts.profiles if not (case == "auto" and opts.device == "cpu")]
        queue = _CaseQueue(lambda case: child(opts, "--one", case, "--files", str(files)), measured)
        for case in opts.profiles:
            if case not in measured:
                record = skipped_auto(opts, info)
            else:
                returncode, stdout, times = queue.run(case)
                record = last_json(stdout) if returncode == 0 else None
                if record is not None:
                    record = complete(record)
                else:
                    hint = " (killed: out of memory?)" if returncode in (-9, 137) else ""
                    record = complete({"date": date.today().isoformat(), "device": info["device"],
                                       "device_kind": opts.device, "profile": case, "arch": opts.arch,
                                       "quick": opts.quick, "torch": info["torch"], "clip_s": opts.clip_seconds,
                                       "error": f"the case's process exited with status {returncode}{hint}"})
                record.update(times)
            records.append(record)
            out.write_text(json.dumps(records, indent=2) + "\n", encoding="utf-8")
            print(summary(record), file=sys.stderr, flush=True)
    return out


class _CaseQueue:
    """Runs the cases' processes one after the other on the card, each started one case early.

    ``run(case)`` starts that case's process if it is not running yet and starts the next one's, which imports
    while this one runs and then waits; it tells this one to go, waits for it to end, and returns its exit status,
    its stdout and its times: ``wall_s`` from the go to its end (what the case cost the card) and ``waited_s``, how
    long it had been started before (its start and imports, hidden behind the case before it)."""

    def __init__(self, command: Callable[[str], list[str]], cases: list[str]) -> None:
        self.command, self.cases = command, list(cases)
        self.started: dict[str, tuple[subprocess.Popen, float]] = {}

    def _start(self, case: str) -> None:
        if case not in self.started:
            process = subprocess.Popen(self.command(case), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                       env={**os.environ, QUEUED_ENV: "1"})
            self.started[case] = (process, time.time())

    def run(self, case: str) -> tuple[int, str, dict[str, float]]:
        self._start(case)
        following = self.cases[self.cases.index(case) + 1:]
        if following:
            self._start(following[0])
        process, started = self.started.pop(case)
        go = time.time()
        with contextlib.suppress(BrokenPipeError):  # a child that died on import has closed its stdin
            process.stdin.write("go\n")
            process.stdin.close()
        stdout = process.stdout.read()
        returncode = process.wait()
        return returncode, stdout, {"wall_s": round(time.time() - go, 1), "waited_s": round(go - started, 1)}


def wait_for_the_card(preload: tuple[str, ...] = ()) -> float:
    """In a case's child started while another case runs (``ALLTALK_BENCH_QUEUED``): import what the case needs
    (:data:`COMMON_PRELOAD` and the engine's ``preload``; none of it touches the GPU), then wait for the parent's
    go on stdin. Returns the seconds the imports took (0 when the child was not queued)."""
    if not os.environ.pop(QUEUED_ENV, None):
        return 0.0
    import importlib

    started = time.time()
    for module in (*COMMON_PRELOAD, *preload):
        with contextlib.suppress(ImportError):  # the case itself says what is missing, as it always did
            importlib.import_module(module)
    took = time.time() - started
    if "bitsandbytes" in sys.modules or (sys.modules.get("torch") and sys.modules["torch"].cuda.is_initialized()):
        raise RuntimeError(f"preloading {preload} touched the GPU or imported bitsandbytes: take it off the list")
    if sys.stdin.readline().strip() != "go":  # the parent ended without starting this case
        sys.exit(3)
    return took


def summary(r: dict[str, Any]) -> str:
    if r.get("skipped") or r.get("error"):
        return f"{r['profile']}: {r.get('error') or 'skipped'}"
    what = "reserved" if r["peak_reserved_gib"] is not None else "RSS"
    peak = r["peak_reserved_gib"] if r["peak_reserved_gib"] is not None else r["peak_rss_gib"]
    return (f"{r['profile']}: peak {what} {peak} GiB (estimate {r['estimated_gib']}), {r['step_s']} s/step, "
            f"{r['samples_per_s']} samples/s, {r['micro_batch']} x {r['grad_accum']} clips of {r['clip_s']} s")


SUMMARY_KEYS = ("profile", "peak_reserved_gib", "estimated_gib", "step_s", "samples_per_s", "micro_batch",
                "grad_accum", "clip_s")


def read_summaries(log: Path, section: str) -> list[dict[str, Any]]:
    """The cases' :func:`summary` lines (with a peak reserved) under the GPU kit log's heading that starts with
    ``## <section>`` (``run_more.sh`` writes one before each benchmark, and the summary lines after it), as records
    of :data:`SUMMARY_KEYS`: what a log keeps of the cases whose JSON did not come back."""
    import re

    line = re.compile(r"^([\w-]+): peak reserved ([\d.]+) GiB \(estimate ([\d.]+|None)\), ([\d.]+) s/step, "
                      r"([\d.]+) samples/s, (\d+) x (\d+) clips of ([\d.]+) s$")
    found: list[dict[str, Any]] = []
    inside = False
    for text in log.read_text(encoding="utf-8").splitlines():
        if text.startswith("## "):
            inside = text.startswith(f"## {section}")
        elif inside and (match := line.match(text.strip())):
            profile, peak, estimate, step, rate, micro, accum, clip = match.groups()
            found.append(dict(zip(SUMMARY_KEYS, (profile, float(peak), None if estimate == "None" else float(estimate),
                                                 float(step), float(rate), int(micro), int(accum), float(clip)))))
    return found


# ------------------------------------------------------------------------------------------ the command line

def choose_cases(parser: argparse.ArgumentParser, opts: argparse.Namespace, cases) -> None:
    """``opts.profiles`` ("low,auto") as a list of the script's cases; an unknown one stops with the choices."""
    opts.profiles = [p.strip() for p in opts.profiles.split(",") if p.strip()]
    unknown = [p for p in opts.profiles if p not in cases]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; choose from {', '.join(cases)}")


def check_steps(parser: argparse.ArgumentParser, opts: argparse.Namespace, most_clip_seconds: float | None = None,
                engine_title: str = "") -> None:
    """Timed steps at least 1, warm-up at least 0, a clip above 0 s (and at most the engine's longest), and a
    micro-batch or accumulation, when given, at least 1."""
    if opts.steps < 1 or opts.warmup < 0 or opts.clip_seconds <= 0:
        parser.error("--steps must be at least 1, --warmup at least 0 and --clip-seconds above 0")
    if most_clip_seconds is not None and opts.clip_seconds > most_clip_seconds:
        parser.error(f"--clip-seconds: {engine_title} trains on clips of at most {most_clip_seconds:g} s")
    micro, accum = getattr(opts, "micro_batch", None), getattr(opts, "grad_accum", None)
    if micro is not None and micro < 1 or accum is not None and accum < 1:
        parser.error("--micro-batch and --grad-accum must be at least 1")


def run_command(opts: argparse.Namespace, prepare: Callable, run_case: Callable, run: Callable,
                preload: tuple[str, ...] = ()) -> int:
    """What every memory benchmark's ``main`` does with its options: describe the device (``--prepare``, for the
    parent), run one case in this process (``--one``, as the parent's child, after :func:`wait_for_the_card` with
    the engine's ``preload``), or run them all (the parent)."""
    if opts.prepare:
        print(json.dumps(prepare(opts)))
    elif opts.one:
        imports_s = wait_for_the_card(preload)
        print(json.dumps({**run_case(opts.one, opts), "preload_s": round(imports_s, 1)}))
    else:
        print(f"wrote {run(opts)}")
    return 0


def chosen_profile(engine: str, case: str, opts: argparse.Namespace, device, notes: list[str]):
    """The base TrainConfig at the run's clip length on ``device``, the settings of the ``engine``'s profile for
    ``case`` (auto: the profile ``choose_auto`` picks, said in ``notes`` with how it was adapted; both sized for
    clips of the run's length, as the app sizes for a dataset whose longest clip it is) and that profile's name:
    (base, settings, name)."""
    from alltalk_gui.core.machine.gpu import list_devices
    from alltalk_gui.core.training.config import TrainConfig
    from alltalk_gui.core.training.profiles import choose_auto, profile_settings

    base = TrainConfig(engine=engine, max_audio_seconds=opts.clip_seconds, device=device.kind)
    name = case
    # Every clip is opts.clip_seconds long: the dataset's longest clip, which the app sizes memory for.
    if case == "auto":
        choice = choose_auto(list_devices(), base, opts.clip_seconds)
        name = choice.profile
        notes.append(f"auto chose {name}: {choice.reason}")
    # A profile chosen by hand fills its micro-batch up to its target; Auto's run probes it on the card instead.
    settings, adapted = profile_settings(name, device, engine, None if case == "auto" else base, opts.clip_seconds)
    notes.extend(adapted)
    return base, settings, name


def profile_config(engine: str, case: str, opts: argparse.Namespace, device, notes: list[str],
                   effective_batch: int):
    """The ``engine``'s profile as a TrainConfig for ``device`` (auto: the profile ``choose_auto`` picks), at the
    run's clip length, with the command line's micro-batch / accumulation if given (keeping ``effective_batch``
    when only the micro-batch is). Returns (config, resolved profile)."""
    import dataclasses

    base, settings, name = chosen_profile(engine, case, opts, device, notes)
    config = base.with_values({**settings, "profile": case, "auto_micro_batch": case == "auto"})
    config = dataclasses.replace(config, max_audio_seconds=opts.clip_seconds)
    if case != "auto" and (opts.micro_batch or opts.grad_accum):
        micro = opts.micro_batch or config.batch_size
        accum = opts.grad_accum or (math.ceil(effective_batch / micro) if opts.micro_batch else config.grad_accum_steps)
        config = dataclasses.replace(config, batch_size=micro, grad_accum_steps=accum)
        notes.append(f"micro-batch {micro} x {accum} in this run ({'--quick' if opts.quick else 'command line'}; "
                     f"the profile has {settings['batch_size']} x {settings['grad_accum_steps']}).")
    return config, name
