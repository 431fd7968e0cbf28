"""Peak memory and speed of each memory profile and of AllTalk's settings on the real-size XTTS v2 GPT.

All in one run, each case builds the real-size model (random weights) and trains it for a few steps on random
clips of one length:

* ``low`` / ``medium`` / ``high``: the profile's settings, adapted to the device by ``profile_settings`` (on the
  CPU: fp32 and torch AdamW instead of bf16 and 8-bit AdamW), trained exactly as ``alltalk_gui.core.training.loop`` does
  it: ``apply_memory_levers`` (LoRA / frozen conditioning / activation checkpointing), ``make_optimizer``,
  accelerate with the profile's mixed precision and gradient accumulation, our frozen front end
  (``XttsFeatures``: mel spectrograms and DVAE codes), ``gpt_loss``, ``acc.backward``, gradient clipping,
  optimizer step, gradients freed.
* ``auto`` (CUDA): the profile ``choose_auto`` picks for this GPU, with auto sizing as the training loop does it:
  the allocator capped at 90 % of the free memory, then ``probe_micro_batch`` probes the micro-batch on clips
  of the benchmark's length, and accumulation keeps the effective batch of 8. On the CPU ``choose_auto`` always
  picks High and none of auto sizing applies, so the case is recorded as skipped (a note says why) instead of
  running High a second time.
* ``alltalk-baseline``: coqui's own ``GPTTrainer`` (the class AllTalk's finetune.py trains) at real size with
  AllTalk's defaults - FP32, torch AdamW (coqui's ``get_optimizer``, weight decay on weights only, betas 0.9/0.96,
  lr 5e-6), batch 4, no accumulation, no gradient clipping - stepped the way coqui's ``Trainer.optimize`` does
  without mixed precision: ``format_batch_on_device``, ``train_step``, ``loss.backward()``, ``optimizer.step()``,
  ``zero_grad(set_to_none=True)``. The whole GPTTrainer (GPT, DVAE, HiFi-GAN) sits on the device, as in AllTalk.

Weights, the DVAE and the mel statistics are random (nothing can be downloaded); their shapes are the real ones,
so memory and time are the real model's. Inputs: random waveforms of ``--clip-seconds``, 10 text tokens per
second, a 6 s voice prompt (half the clip when shorter), every clip of the same length (the worst case, as
batches are padded to their longest clip).

Each case runs in its own process so its peak is its own; the JSON list is rewritten after every case, so a run
that is stopped keeps what it measured. Records: peak ``torch.cuda.max_memory_reserved`` / ``_allocated`` (CUDA)
or peak RSS (CPU), mean step time (an optimizer step: ``micro_batch x grad_accum`` clips), samples/s, the final
loss and the estimator's prediction (``alltalk_gui.core.engines.xtts.memory_estimate``) for the same settings.

    python benchmarks/memory_profiles.py --device cuda   # the GPU run: 11 s clips, effective batch 8, 10 steps
    python benchmarks/memory_profiles.py --quick         # CPU smoke run: 2 clips of 3 s, 1 + 2 steps (~3 min, 2 cores)

The real model needs about 10 GiB of RAM per CPU case (AdamW state for 441 M parameters); cases never overlap.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_size import DVAE_V2, TEXT_TOKENS, XTTS_V2, raw_batch, write_front_end_files  # noqa: E402

CASES = ("low", "medium", "high", "auto", "alltalk-baseline")
BASELINE = "alltalk-baseline"
EFFECTIVE_BATCH = 8  # what every profile keeps (micro-batch x accumulation)
# AllTalk's finetune defaults (coqui's XTTS recipe): what the baseline trains with.
ALLTALK_BATCH = 4
ALLTALK_OPTIMIZER = {"betas": [0.9, 0.96], "eps": 1e-8, "weight_decay": 1e-2}
ALLTALK_LR = 5e-6
FULL = {"clip_seconds": 11.0, "steps": 10, "warmup": 2}
# --quick: small enough that all cases finish in minutes on a 2-core CPU; the values used are recorded.
QUICK = {"clip_seconds": 3.0, "steps": 2, "warmup": 1, "micro_batch": 2, "grad_accum": 1}
GIB = 1024**3
# Every record has these keys (None where a case was skipped or failed before measuring them).
FIELDS = ("date", "device", "profile", "peak_reserved_gib", "peak_allocated_gib", "peak_rss_gib", "estimated_gib",
          "samples_per_s", "step_s", "micro_batch", "grad_accum", "clip_s", "steps", "final_loss", "precision",
          "optimizer", "lora_rank", "gradient_checkpointing", "notes", "torch")


def _arch(name: str) -> dict[str, Any]:
    """GPT arguments, text tokens and DVAE widths of the real model, or (for tests only) the tiny one."""
    if name == "tiny":
        from alltalk_gui.core.engines.xtts.tiny_model import TINY, TINY_DVAE

        return {"gpt": dict(TINY), "text_tokens": 120, "dvae": dict(TINY_DVAE)}
    return {"gpt": {**XTTS_V2, "gpt_use_masking_gt_prompt_approach": True}, "text_tokens": TEXT_TOKENS,
            "dvae": dict(DVAE_V2)}


# ------------------------------------------------------------------------------------------------ one case (child)

def run_case(case: str, opts: argparse.Namespace) -> dict[str, Any]:
    """Build the model for ``case``, train ``opts.warmup + opts.steps`` optimizer steps, return its record."""
    alloc_conf = None
    if case != BASELINE:
        # As training does (before anything touches the GPU). AllTalk's trainer leaves the allocator at torch's
        # default, and so does the baseline case.
        from alltalk_gui.core.machine.memory import use_expandable_segments

        alloc_conf = use_expandable_segments()
    import torch

    from alltalk_gui.core.engines.xtts.model import import_coqui_trainer
    from alltalk_gui.core.machine.gpu import cpu_cores

    threads = cpu_cores()
    torch.set_num_threads(threads)
    import_coqui_trainer()  # coqui's trainer package sets torch to one thread on import; this undoes it
    device = _device_info(_resolve_device(opts.device))
    record = {"date": date.today().isoformat(), "device": _device_label(device), "device_kind": device.kind,
              "profile": case, "arch": opts.arch, "quick": opts.quick, "torch": torch.__version__, "threads": threads,
              "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32), "clip_s": opts.clip_seconds,
              "steps": opts.steps, "warmup_steps": opts.warmup,
              "cuda_alloc_conf": alloc_conf, "notes": []}
    from accelerate.utils.memory import should_reduce_batch_size

    from alltalk_gui.core.training.config import ConfigError

    try:
        if case == BASELINE:
            record.update(_baseline(opts, device))
        else:
            record.update(_profile(case, opts, device, record["notes"]))
    except ConfigError as exc:  # e.g. the 8-bit optimizer without bitsandbytes installed
        record["error"] = str(exc)
    except Exception as exc:  # out of memory is a result; anything else is a bug and is raised
        if not should_reduce_batch_size(exc):
            raise
        record["error"] = f"out of memory: {str(exc).splitlines()[0][:300]}"
    record.update(_peaks(device))
    return _complete(record)


def _profile(case: str, opts: argparse.Namespace, device, notes: list[str]) -> dict[str, Any]:
    """A profile trained the way ``alltalk_gui.core.training.loop`` trains it."""
    import dataclasses
    import gc

    import torch
    from accelerate import Accelerator
    from TTS.tts.configs.xtts_config import XttsArgs, XttsConfig

    from alltalk_gui.core.training.config import TrainConfig
    from alltalk_gui.core.engines.xtts.model import LossWeights, XttsFeatures, build_gpt_from_args, gpt_loss
    from alltalk_gui.core.machine.gpu import list_devices
    from alltalk_gui.core.training.profiles import AUTO_HEADROOM, choose_auto, profile_settings
    from alltalk_gui.core.training.levers import apply_memory_levers, cap_gpu_memory, make_optimizer, probe_micro_batch

    on_cuda = device.kind == "cuda"
    base = TrainConfig(max_audio_seconds=opts.clip_seconds, device=device.kind)
    name = case
    if case == "auto":
        choice = choose_auto(list_devices(), base)
        name = choice.profile
        notes.append(f"auto chose {name}: {choice.reason}")
    settings, adapted = profile_settings(name, device)
    notes.extend(adapted)
    config = dataclasses.replace(base, **settings, profile=case, auto_micro_batch=case == "auto")
    if case != "auto" and opts.micro_batch:
        config = dataclasses.replace(config, batch_size=opts.micro_batch,
                                     grad_accum_steps=opts.grad_accum or math.ceil(EFFECTIVE_BATCH / opts.micro_batch))
        notes.append(f"micro-batch {config.batch_size} x {config.grad_accum_steps} set on the command line "
                     f"(the profile has {settings['batch_size']} x {settings['grad_accum_steps']}).")
    effective = config.batch_size * config.grad_accum_steps

    acc = Accelerator(mixed_precision=config.mixed_precision, gradient_accumulation_steps=config.grad_accum_steps,
                      cpu=not on_cuda)
    if case == "auto" and on_cuda:
        # As the training loop's _cap_gpu_memory: the caching allocator enforces the cap, so the probe meets it as OOM.
        cap, free = cap_gpu_memory(acc.device, AUTO_HEADROOM)
        notes.append(f"auto sizing: allocator capped at {cap / GIB:.1f} GiB "
                     f"({AUTO_HEADROOM:.0%} of {free / GIB:.1f} GiB free).")
    arch = _arch(opts.arch)
    torch.manual_seed(0)
    gpt = build_gpt_from_args(XttsArgs(**arch["gpt"]), number_text_tokens=arch["text_tokens"],
                              start_text_token=arch["text_tokens"] - 1, stop_text_token=0)
    trainable = apply_memory_levers(gpt, config)
    params = sum(p.numel() for p in gpt.parameters())
    gpt.train()
    features = XttsFeatures(opts.files, XttsConfig(model_args=XttsArgs(**arch["gpt"]))).to(acc.device)
    weights = LossWeights(config.text_ce_weight, config.mel_ce_weight)
    result: dict[str, Any] = {}

    if case == "auto" and on_cuda:
        # As the training loop's _probe_micro_batch, on clips of the benchmark's length.
        gpt.to(acc.device)
        micro = probe_micro_batch(
            gpt, lambda size: _to_device(raw_batch(size, opts.clip_seconds, arch["text_tokens"]), acc.device),
            lambda model, batch: gpt_loss(model, features(batch), weights), config, acc, effective)
        result["probe_peak_reserved_gib"] = round(torch.cuda.max_memory_reserved(acc.device) / GIB, 3)
        if not micro:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory: auto sizing found no micro-batch that fits")
        accum = math.ceil(effective / micro)
        config = dataclasses.replace(config, batch_size=micro, grad_accum_steps=accum)
        acc.gradient_accumulation_steps = accum
        notes.append(f"auto sizing probed a micro-batch of {micro} (from {effective}); {accum} accumulated per step. "
                     "The peaks below are measured after the probe (its own peak: probe_peak_reserved_gib).")
        # The training peak is reported apart from the probe's: return the probe's cached blocks, start a new window.
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(acc.device)
    elif case == "auto":
        notes.append("auto sizing (memory cap, micro-batch probe) is CUDA-only: trained with the profile's batches.")

    optimizer = make_optimizer(gpt, config)
    gpt, optimizer = acc.prepare(gpt, optimizer)
    batch = _to_device(raw_batch(config.batch_size, opts.clip_seconds, arch["text_tokens"]), acc.device)
    max_norm = config.max_grad_norm if config.max_grad_norm > 0 else float("inf")

    def micro_step(last: bool):
        with acc.accumulate(gpt):  # accelerate decides when the gradients are complete (every grad_accum calls)
            losses = gpt_loss(gpt, features(batch), weights)
            acc.backward(losses["loss"])
            if acc.sync_gradients:
                acc.clip_grad_norm_(gpt.parameters(), max_norm)
            optimizer.step()  # a no-op until the last micro-batch of the step
            # Free the gradients right away: no need for this memory until the next backward.
            optimizer.zero_grad(set_to_none=True)
        return losses["loss"].detach()

    result.update(_timed(case, micro_step, config.batch_size, config.grad_accum_steps, opts, on_cuda))
    result.update({
        "resolved_profile": name, "precision": config.mixed_precision, "optimizer": config.optimizer,
        "lora_rank": config.lora_rank, "gradient_checkpointing": config.gradient_checkpointing,
        "freeze_conditioning": config.freeze_conditioning, "trainable_params": trainable, "model_params": params,
        "estimated_gib": _estimate(config, opts, on_cuda),
    })
    return result


def _baseline(opts: argparse.Namespace, device) -> dict[str, Any]:
    """coqui's GPTTrainer with AllTalk's defaults, stepped as coqui's Trainer.optimize does in FP32."""
    import dataclasses

    import torch

    from alltalk_gui.core.training.config import TrainConfig
    from alltalk_gui.core.engines.xtts.model import import_coqui_trainer

    gpt_trainer = import_coqui_trainer()
    arch = _arch(opts.arch)
    files = Path(opts.files)
    args = gpt_trainer.GPTArgs(
        **arch["gpt"], tokenizer_file=str(files / "vocab.json"), mel_norm_file=str(files / "mel_stats.pth"),
        dvae_checkpoint=str(files / "dvae.pth"), xtts_checkpoint="",  # no checkpoint: the weights stay random
        max_conditioning_length=132300, min_conditioning_length=66150, max_wav_length=255995, max_text_length=200,
    )
    micro = opts.micro_batch or ALLTALK_BATCH
    accum = opts.grad_accum or 1
    config = gpt_trainer.GPTTrainerConfig(
        model_args=args, batch_size=micro, optimizer="AdamW", optimizer_wd_only_on_weights=True,
        optimizer_params=dict(ALLTALK_OPTIMIZER), lr=ALLTALK_LR, mixed_precision=False,
    )
    torch.manual_seed(0)
    real_dvae = gpt_trainer.DiscreteVAE
    if opts.arch == "tiny":  # coqui hard-codes the real DVAE's widths; the tiny test model has narrower ones
        gpt_trainer.DiscreteVAE = lambda **kw: real_dvae(**{**kw, **arch["dvae"]})
    try:
        model = gpt_trainer.GPTTrainer(config)
    finally:
        gpt_trainer.DiscreteVAE = real_dvae
    dev = torch.device("cuda" if device.kind == "cuda" else "cpu")
    model.to(dev)  # coqui's Trainer moves the whole model (GPT, DVAE, HiFi-GAN) to the GPU
    model.eval()  # GPTTrainer.on_train_epoch_start: everything in eval mode but the GPT
    model.xtts.gpt.train()
    optimizer = model.get_optimizer()
    raw = raw_batch(micro, opts.clip_seconds, arch["text_tokens"])
    grad_clip = float(config.grad_clip or 0.0)  # 0: coqui's default, which AllTalk keeps

    def micro_step(last: bool):
        batch = model.format_batch_on_device(_to_device(raw, dev))
        _, loss_dict = model.train_step(batch, None)
        loss = loss_dict["loss"] / float(accum)
        loss.backward()
        if last:
            if grad_clip > 0:
                torch.nn.utils.clip_grad_norm_(model.xtts.gpt.parameters(), grad_clip)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        return loss_dict["loss"].detach()

    result = _timed(BASELINE, micro_step, micro, accum, opts, dev.type == "cuda")
    estimate_config = dataclasses.replace(TrainConfig(), batch_size=micro, grad_accum_steps=accum,
                                          max_audio_seconds=opts.clip_seconds, mixed_precision="no", optimizer="adamw")
    result.update({
        "resolved_profile": None, "precision": "no", "optimizer": "adamw", "lora_rank": 0,
        "gradient_checkpointing": False, "freeze_conditioning": False,
        "trainable_params": sum(p.numel() for p in model.xtts.gpt.parameters()),
        "model_params": sum(p.numel() for p in model.parameters()),
        "estimated_gib": _estimate(estimate_config, opts, dev.type == "cuda"),
        "notes": ["coqui GPTTrainer.train_step, AllTalk's defaults: FP32, torch AdamW (weight decay on weights only, "
                  f"betas 0.9/0.96, lr {ALLTALK_LR}), batch {ALLTALK_BATCH}, no accumulation, no gradient clipping."
                  + (f" Run here with batch {micro} x {accum}." if (micro, accum) != (ALLTALK_BATCH, 1) else ""),
                  "The whole GPTTrainer is on the device (GPT, DVAE and HiFi-GAN decoder); the estimate counts the "
                  "GPT and DVAE only."],
    })
    return result


def _timed(case: str, micro_step: Callable[[bool], Any], micro: int, accum: int, opts: argparse.Namespace,
           on_cuda: bool) -> dict[str, Any]:
    """Run ``opts.warmup`` untimed and ``opts.steps`` timed optimizer steps of ``accum`` micro-batches each."""
    import torch

    def sync() -> None:
        if on_cuda:
            torch.cuda.synchronize()  # kernels run asynchronously: the clock must wait for them

    times: list[float] = []
    for i in range(opts.warmup + opts.steps):
        sync()
        start = time.perf_counter()
        losses = [micro_step(j == accum - 1) for j in range(accum)]
        sync()
        times.append(time.perf_counter() - start)
        kind = "warm-up" if i < opts.warmup else "step"
        print(f"{case}: {kind} {i + 1} took {times[-1]:.2f} s", file=sys.stderr, flush=True)
    timed = times[opts.warmup:] or times
    step_s = sum(timed) / len(timed)
    loss = float(torch.stack(losses).float().mean())
    return {"micro_batch": micro, "grad_accum": accum, "effective_batch": micro * accum,
            "step_s": round(step_s, 3), "samples_per_s": round(micro * accum / step_s, 4),
            "step_times_s": [round(t, 3) for t in timed], "warmup_step_s": [round(t, 3) for t in times[:opts.warmup]],
            "final_loss": round(loss, 4) if math.isfinite(loss) else None}  # JSON has no NaN


def _estimate(config, opts: argparse.Namespace, on_cuda: bool) -> float | None:
    """The estimator's peak for these settings: GPU memory on CUDA, resident memory (attention scores kept, as
    CPU attention does) on the CPU. None for the tiny test model, which the estimator does not describe."""
    import dataclasses

    from alltalk_gui.core.engines.xtts.memory_estimate import estimate

    if opts.arch != "xtts_v2":
        return None
    config = dataclasses.replace(config, max_audio_seconds=opts.clip_seconds)
    return estimate(config, attention_scores=not on_cuda).total_gib


def _peaks(device) -> dict[str, Any]:
    from alltalk_gui.core.machine.memory import peak_rss_gib

    peaks: dict[str, Any] = {"peak_rss_gib": round(peak_rss_gib(), 3), "peak_reserved_gib": None,
                             "peak_allocated_gib": None}
    if device.kind == "cuda":
        import torch

        peaks["peak_reserved_gib"] = round(torch.cuda.max_memory_reserved() / GIB, 3)
        peaks["peak_allocated_gib"] = round(torch.cuda.max_memory_allocated() / GIB, 3)
        peaks["measure"] = "torch.cuda.max_memory_reserved / max_memory_allocated of the case's process"
    else:
        peaks["measure"] = "peak RSS of the case's process (ru_maxrss)"
    return peaks


def _complete(record: dict[str, Any]) -> dict[str, Any]:
    for key in FIELDS:
        record.setdefault(key, [] if key == "notes" else None)
    return record


def _to_device(batch: dict[str, Any], device) -> dict[str, Any]:
    return {k: v.to(device) if hasattr(v, "to") else v for k, v in batch.items()}


def _resolve_device(kind: str) -> str:
    import torch

    if kind == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if kind == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA GPU here; use --device cpu.")
    return kind


def _device_info(kind: str):
    """``DeviceInfo`` of the CUDA device torch uses (index 0), or of the CPU."""
    from alltalk_gui.core.machine.gpu import list_devices

    devices = list_devices()
    return next(d for d in devices if d.kind == kind and d.index == 0)


def _device_label(device) -> str:
    if device.kind == "cuda":
        return f"{device.name} ({device.total_gib:.0f} GiB, CUDA {device.capability})"
    return f"CPU: {device.name}, {device.cores} cores, {device.total_gib:.0f} GiB RAM"


# ------------------------------------------------------------------------------------------------ the run (parent)

def prepare(opts: argparse.Namespace) -> dict[str, Any]:
    """In a child process, so that the parent never holds a CUDA context or a large heap (a child's ru_maxrss
    can include its parent's): resolve the device, describe it, write the random front-end files."""
    import torch

    from alltalk_gui.core.training.config import TrainConfig
    from alltalk_gui.core.machine.gpu import list_devices
    from alltalk_gui.core.training.profiles import choose_auto

    kind = _resolve_device(opts.device)
    device = _device_info(kind)
    arch = _arch(opts.arch)
    write_front_end_files(opts.prepare, text_tokens=arch["text_tokens"],
                          num_audio_tokens=arch["gpt"]["gpt_num_audio_tokens"], dvae=arch["dvae"])
    choice = choose_auto(list_devices(), TrainConfig(max_audio_seconds=opts.clip_seconds, device=kind))
    slug = "cpu" if kind == "cpu" else re.sub(r"[^a-z0-9]+", "-", device.name.lower()).strip("-")
    return {"device_kind": kind, "device": _device_label(device), "slug": slug, "torch": torch.__version__,
            "auto_profile": choice.profile, "auto_reason": choice.reason}


def _skipped_auto(opts: argparse.Namespace, info: dict[str, Any]) -> dict[str, Any]:
    return _complete({
        "date": date.today().isoformat(), "device": info["device"], "device_kind": "cpu", "profile": "auto",
        "resolved_profile": info["auto_profile"], "skipped": True, "arch": opts.arch, "quick": opts.quick,
        "torch": info["torch"], "clip_s": opts.clip_seconds, "steps": 0,
        "notes": [f"Not run on the CPU: auto chooses {info['auto_profile']} here ({info['auto_reason']}) and its "
                  "sizing (90 % memory cap, micro-batch probe) is CUDA-only, so it would train exactly as the "
                  f"{info['auto_profile']} row does. Run with --device cuda to measure auto."],
    })


def _child(opts: argparse.Namespace, *extra: str) -> list[str]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--device", opts.device, "--arch", opts.arch,
           "--clip-seconds", str(opts.clip_seconds), "--steps", str(opts.steps), "--warmup", str(opts.warmup)]
    for flag, value in (("--micro-batch", opts.micro_batch), ("--grad-accum", opts.grad_accum)):
        if value:
            cmd += [flag, str(value)]
    return cmd + (["--quick"] if opts.quick else []) + list(extra)


def _last_json(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return None


def run(opts: argparse.Namespace) -> Path:
    """Every case in its own process, one after the other; the JSON list is rewritten after each."""
    with tempfile.TemporaryDirectory(prefix="memory_profiles_") as tmp:
        files = Path(tmp) / "front_end"
        # stderr passes through: per-step times show up while a slow case is still running.
        done = subprocess.run(_child(opts, "--prepare", str(files)), stdout=subprocess.PIPE, text=True, check=True)
        info = _last_json(done.stdout)
        opts.device = info["device_kind"]
        out = Path(opts.out or Path(__file__).resolve().parent / "results"
                   / f"memory_profiles_{date.today().isoformat()}_{info['slug']}.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        print(f"{info['device']}; writing {out}", file=sys.stderr, flush=True)
        records: list[dict[str, Any]] = []
        for case in opts.profiles:
            if case == "auto" and opts.device == "cpu":
                record = _skipped_auto(opts, info)
            else:
                started = time.time()
                done = subprocess.run(_child(opts, "--one", case, "--files", str(files)), stdout=subprocess.PIPE,
                                      text=True)
                record = _last_json(done.stdout) if done.returncode == 0 else None
                if record is not None:
                    record = _complete(record)
                else:
                    hint = " (killed: out of memory?)" if done.returncode in (-9, 137) else ""
                    record = _complete({"date": date.today().isoformat(), "device": info["device"],
                                        "device_kind": opts.device, "profile": case, "arch": opts.arch,
                                        "quick": opts.quick, "torch": info["torch"], "clip_s": opts.clip_seconds,
                                        "error": f"the case's process exited with status {done.returncode}{hint}"})
                record["wall_s"] = round(time.time() - started, 1)
            records.append(record)
            out.write_text(json.dumps(records, indent=2) + "\n", encoding="utf-8")
            print(_summary(record), file=sys.stderr, flush=True)
    return out


def _summary(r: dict[str, Any]) -> str:
    if r.get("skipped") or r.get("error"):
        return f"{r['profile']}: {r.get('error') or 'skipped'}"
    what = "reserved" if r["peak_reserved_gib"] is not None else "RSS"
    peak = r["peak_reserved_gib"] if r["peak_reserved_gib"] is not None else r["peak_rss_gib"]
    return (f"{r['profile']}: peak {what} {peak} GiB (estimate {r['estimated_gib']}), {r['step_s']} s/step, "
            f"{r['samples_per_s']} samples/s, {r['micro_batch']} x {r['grad_accum']} clips of {r['clip_s']} s")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"CPU smoke run: {QUICK['clip_seconds']} s clips, micro-batch {QUICK['micro_batch']} x "
                             f"{QUICK['grad_accum']}, {QUICK['warmup']} warm-up + {QUICK['steps']} timed steps")
    parser.add_argument("--steps", type=int, help=f"timed optimizer steps per case (default {FULL['steps']})")
    parser.add_argument("--warmup", type=int, help=f"untimed steps first (default {FULL['warmup']})")
    parser.add_argument("--clip-seconds", type=float, help=f"length of every clip (default {FULL['clip_seconds']})")
    parser.add_argument("--micro-batch", type=int,
                        help="clips per micro-batch for every case but auto (default: the profile's; AllTalk's 4)")
    parser.add_argument("--grad-accum", type=int, help="micro-batches per optimizer step with --micro-batch "
                                                       f"(default: keep an effective batch of {EFFECTIVE_BATCH})")
    parser.add_argument("--profiles", default=",".join(CASES),
                        help=f"comma-separated cases (default {','.join(CASES)})")
    parser.add_argument("--out", help="JSON file (default benchmarks/results/memory_profiles_<date>_<device>.json)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--arch", choices=("xtts_v2", "tiny"), default="xtts_v2", help=argparse.SUPPRESS)  # tests
    parser.add_argument("--one", choices=CASES, help=argparse.SUPPRESS)  # internal: run one case, print its JSON
    parser.add_argument("--files", help=argparse.SUPPRESS)  # internal: the random front-end files
    parser.add_argument("--prepare", help=argparse.SUPPRESS)  # internal: write them there, describe the device
    opts = parser.parse_args(argv)
    defaults = {**FULL, **(QUICK if opts.quick else {})}
    for key, value in defaults.items():
        if getattr(opts, key) is None:
            setattr(opts, key, value)
    opts.profiles = [p.strip() for p in opts.profiles.split(",") if p.strip()]
    unknown = [p for p in opts.profiles if p not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; choose from {', '.join(CASES)}")
    if opts.steps < 1 or opts.warmup < 0 or opts.clip_seconds <= 0:
        parser.error("--steps must be at least 1, --warmup at least 0 and --clip-seconds above 0")
    if opts.grad_accum and not opts.micro_batch:
        parser.error("--grad-accum goes with --micro-batch")
    if opts.micro_batch is not None and opts.micro_batch < 1 or opts.grad_accum is not None and opts.grad_accum < 1:
        parser.error("--micro-batch and --grad-accum must be at least 1")
    return opts


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    if opts.prepare:
        print(json.dumps(prepare(opts)))
    elif opts.one:
        print(json.dumps(run_case(opts.one, opts)))
    else:
        print(f"wrote {run(opts)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
