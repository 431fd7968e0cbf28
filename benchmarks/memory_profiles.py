"""Peak memory and speed of each memory profile and of AllTalk's settings on the real-size XTTS v2 GPT.

All in one run, each case builds the real-size model (random weights) and trains it for a few steps on random
clips of one length:

* ``low`` / ``medium`` / ``high``: the profile's settings, adapted to the device by ``profile_settings`` (on the
  CPU: fp32 and torch AdamW instead of bf16 and 8-bit AdamW), trained exactly as ``alltalk_gui.core.training.loop`` does
  it: ``apply_memory_levers`` (LoRA / frozen conditioning / activation checkpointing), ``make_optimizer``,
  accelerate with the profile's mixed precision and gradient accumulation, ``gpt_loss``, ``acc.backward``,
  gradient clipping, optimizer step, gradients freed. The frozen front end (DVAE codes and the conditioning mel,
  ``engines/xtts/front_end.py``) runs once per clip before training, as the engine runs it, and is freed; the
  batch is made from its results by the engine's own ``ClipDataset`` and ``collate``. Its one-off cost is recorded
  (``front_end_once``); a step holds no front end (``breakdown_s["front_end"]`` is 0).
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

Every case also times one more optimizer step phase by phase (``breakdown_s``: front end, forward, backward,
optimizer, rest; the device synchronised at each edge): the baseline's front end is coqui's
``format_batch_on_device`` on every step, ours is nothing.

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
import math
import subprocess  # noqa: F401  (the tests fake the case processes through this module's name)
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from profile_cases import (  # noqa: E402, F401  (FIELDS: the tests read it here)
    FIELDS,
    GIB,
    breakdown,
    case_started,
    check_steps,
    chosen_profile,
    choose_cases,
    complete,
    device_info,
    device_label,
    device_slug,
    loop_micro_step,
    no_phase,
    peaks,
    resolve_device,
    run_cases,
    run_command,
    timed,
    to_device,
)
from real_size import (  # noqa: E402
    CONDITIONING_S,
    DVAE_V2,
    SAMPLE_RATE,
    TEXT_TOKENS,
    XTTS_V2,
    raw_batch,
    write_front_end_files,
)

CASES = ("low", "medium", "high", "auto", "alltalk-baseline")
# Imported while the case before runs (see profile_cases.wait_for_the_card): nothing that touches the GPU.
PRELOAD = ("TTS.tts.configs.xtts_config", "TTS.tts.layers.xtts.gpt", "alltalk_gui.core.engines.xtts.model")
BASELINE = "alltalk-baseline"
EFFECTIVE_BATCH = 8  # what every profile keeps (micro-batch x accumulation)
# AllTalk's finetune defaults (coqui's XTTS recipe): what the baseline trains with.
ALLTALK_BATCH = 4
ALLTALK_OPTIMIZER = {"betas": [0.9, 0.96], "eps": 1e-8, "weight_decay": 1e-2}
ALLTALK_LR = 5e-6
FULL = {"clip_seconds": 11.0, "steps": 10, "warmup": 2}
# --quick: small enough that all cases finish in minutes on a 2-core CPU; the values used are recorded.
QUICK = {"clip_seconds": 3.0, "steps": 2, "warmup": 1, "micro_batch": 2, "grad_accum": 1}


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
    device = device_info(resolve_device(opts.device))
    record = case_started(case, opts, device, threads, alloc_conf)
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
    record.update(peaks(device))
    return complete(record)


def _profile(case: str, opts: argparse.Namespace, device, notes: list[str]) -> dict[str, Any]:
    """A profile trained the way ``alltalk_gui.core.training.loop`` trains it."""
    import dataclasses
    import gc

    import torch
    from accelerate import Accelerator
    from TTS.tts.configs.xtts_config import XttsArgs, XttsConfig

    from alltalk_gui.core.engines.xtts.data import gpt_inputs
    from alltalk_gui.core.engines.xtts.model import LossWeights, build_gpt_from_args, gpt_loss
    from alltalk_gui.core.engines.xtts.streamline import is_streamlined
    from alltalk_gui.core.training.profiles import AUTO_HEADROOM
    from alltalk_gui.core.training.levers import (apply_memory_levers, cap_gpu_memory,
                                                  make_optimizer, probe_micro_batch)

    on_cuda = device.kind == "cuda"
    base, settings, name = chosen_profile("xtts", case, opts, device, notes)
    config = base.with_values({**settings, "profile": case, "auto_micro_batch": case == "auto"})
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
    xtts_config = XttsConfig(model_args=XttsArgs(**arch["gpt"]))
    # As the engine does before training: the front end once per clip, on the device, then freed.
    make_batch, once = cached_batches(opts, arch, xtts_config, acc.device)
    notes.append(f"front end once per clip: {once['s_per_clip']:.3f} s a clip, "
                 f"{once['weights_gib']:.3f} GiB of weights freed before training.")
    torch.manual_seed(0)
    gpt = build_gpt_from_args(XttsArgs(**arch["gpt"]), number_text_tokens=arch["text_tokens"],
                              start_text_token=arch["text_tokens"] - 1, stop_text_token=0)
    trainable = apply_memory_levers(gpt, config)
    params = sum(p.numel() for p in gpt.parameters())
    streamlined = is_streamlined(gpt)
    gpt.train()
    weights = LossWeights(config.engine_options().text_ce_weight, config.engine_options().mel_ce_weight)
    result: dict[str, Any] = {}

    optimizer = make_optimizer(gpt, config)
    gpt, optimizer = acc.prepare(gpt, optimizer)

    def loss(model, batch) -> dict[str, Any]:  # the engine's training loss on a batch of cached features
        return gpt_loss(model, gpt_inputs(batch), weights)

    if case == "auto" and on_cuda:
        # As the training loop's _probe_micro_batch: the prepared model, batches on the device, clips of the
        # benchmark's length.
        micro = probe_micro_batch(
            gpt, lambda size: to_device(make_batch(size), acc.device),
            loss, config, acc, effective)
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

    batch = to_device(make_batch(config.batch_size), acc.device)
    max_norm = config.max_grad_norm if config.max_grad_norm > 0 else float("inf")

    micro_step = loop_micro_step(acc, gpt, batch, loss, optimizer, max_norm)

    result.update(timed(case, micro_step, config.batch_size, config.grad_accum_steps, opts, on_cuda))
    result.update(breakdown(micro_step, config.grad_accum_steps, on_cuda))
    result["front_end_once"] = once
    result.update({
        "resolved_profile": name, "streamlined": streamlined, "precision": config.mixed_precision, "optimizer": config.optimizer,
        "lora_rank": config.lora_rank, "gradient_checkpointing": config.gradient_checkpointing,
        "freeze_conditioning": config.engine_options().freeze_conditioning, "trainable_params": trainable, "model_params": params,
        "estimated_gib": _estimate(config, opts, on_cuda, streamlined),
    })
    return result


def cached_batches(opts: argparse.Namespace, arch: dict[str, Any], xtts_config, device):
    """The engine's path from clips to a batch, on :func:`raw_batch`'s random clips: the frozen front end once per
    clip (``FrontEnd.clip_features``, what the cache holds), freed; then ``make_batch(size)`` gives a batch of
    ``size`` clips through ``ClipDataset`` and ``collate`` (a 6 s voice prompt, half the clip when shorter, as
    :func:`raw_batch`). Returns it and the front end's one-off cost: seconds per clip and its weights' size."""
    import time

    import torch

    from alltalk_gui.core.engines.xtts.data import Clip, ClipDataset, collate
    from alltalk_gui.core.engines.xtts.front_end import FrontEnd, silence_frame, style_mel_settings

    width = EFFECTIVE_BATCH  # every micro-batch a case takes is at most the effective batch
    raw = raw_batch(width, opts.clip_seconds, arch["text_tokens"])
    with torch.random.fork_rng():  # as the engine: building the front end draws no numbers the GPT would see
        front = FrontEnd(opts.files, xtts_config).to(device)
    weights_gib = sum(p.numel() * p.element_size() for p in front.parameters()) / GIB
    start = time.perf_counter()
    features = [front.clip_features(raw["wav"][i]) for i in range(width)]
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = (time.perf_counter() - start) / width
    del front  # the DVAE leaves the card
    if device.type == "cuda":
        torch.cuda.empty_cache()
    samples = int(raw["wav_lengths"][0])
    clips = [Clip(Path(name), "", tuple(int(t) for t in raw["padded_text"][i]), samples, name)
             for i, name in enumerate(raw["filenames"])]
    cond = int(CONDITIONING_S * SAMPLE_RATE)
    hop = style_mel_settings(xtts_config)["hop_length"]
    dataset = ClipDataset(clips, features, seed=0, is_eval=False, min_cond_samples=cond, max_cond_samples=cond,
                          hop=hop, silence=silence_frame(opts.files, xtts_config),
                          masking=bool(xtts_config.model_args.gpt_use_masking_gt_prompt_approach))

    def make_batch(size: int) -> dict[str, Any]:
        return collate([dataset[i % width] for i in range(size)], masking=dataset.masking)

    return make_batch, {"s_per_clip": round(seconds, 4), "weights_gib": round(weights_gib, 4), "clips": width}


def _baseline(opts: argparse.Namespace, device) -> dict[str, Any]:
    """coqui's GPTTrainer with AllTalk's defaults, stepped as coqui's Trainer.optimize does in FP32."""
    import dataclasses

    import torch

    from alltalk_gui.core.training.config import TrainConfig
    from alltalk_gui.core.engines.xtts.model import import_coqui_trainer
    from alltalk_gui.core.engines.xtts.streamline import is_streamlined

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

    def micro_step(last: bool, phase=no_phase):
        with phase("front_end"):  # the DVAE and both mels, on every step
            batch = model.format_batch_on_device(to_device(raw, dev))
        with phase("forward"):
            _, loss_dict = model.train_step(batch, None)
            loss = loss_dict["loss"] / float(accum)
        with phase("backward"):
            loss.backward()
        with phase("optimizer"):
            if last:
                if grad_clip > 0:
                    torch.nn.utils.clip_grad_norm_(model.xtts.gpt.parameters(), grad_clip)
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
        return loss_dict["loss"].detach()

    result = timed(BASELINE, micro_step, micro, accum, opts, dev.type == "cuda")
    result.update(breakdown(micro_step, accum, dev.type == "cuda"))
    estimate_config = dataclasses.replace(TrainConfig(), batch_size=micro, grad_accum_steps=accum,
                                          max_audio_seconds=opts.clip_seconds, mixed_precision="no", optimizer="adamw")
    result.update({
        "resolved_profile": None, "streamlined": is_streamlined(model.xtts.gpt), "precision": "no",
        "optimizer": "adamw", "lora_rank": 0,
        "gradient_checkpointing": False, "freeze_conditioning": False,
        "trainable_params": sum(p.numel() for p in model.xtts.gpt.parameters()),
        "model_params": sum(p.numel() for p in model.parameters()),
        "estimated_gib": _estimate(estimate_config, opts, dev.type == "cuda", is_streamlined(model.xtts.gpt)),
        "notes": ["coqui GPTTrainer.train_step, AllTalk's defaults: FP32, torch AdamW (weight decay on weights only, "
                  f"betas 0.9/0.96, lr {ALLTALK_LR}), batch {ALLTALK_BATCH}, no accumulation, no gradient clipping."
                  + (f" Run here with batch {micro} x {accum}." if (micro, accum) != (ALLTALK_BATCH, 1) else ""),
                  "The whole GPTTrainer is on the device (GPT, DVAE and HiFi-GAN decoder); the estimate counts the "
                  "GPT and DVAE only."],
    })
    return result


def _estimate(config, opts: argparse.Namespace, on_cuda: bool, streamlined: bool = True) -> float | None:
    """The estimator's peak for these settings: GPU memory on CUDA, resident memory (attention scores kept, as
    CPU attention does) on the CPU; ``streamlined`` as the case ran the GPT. None for the tiny test
    model, which the estimator does not describe."""
    import dataclasses

    from alltalk_gui.core.engines.xtts.memory_estimate import estimate

    if opts.arch != "xtts_v2":
        return None
    config = dataclasses.replace(config, max_audio_seconds=opts.clip_seconds)
    return estimate(config, attention_scores=not on_cuda, streamlined=streamlined).total_gib


# ------------------------------------------------------------------------------------------------ the run (parent)

def prepare(opts: argparse.Namespace) -> dict[str, Any]:
    """In a child process, so that the parent never holds a CUDA context or a large heap (a child's ru_maxrss
    can include its parent's): resolve the device, describe it, write the random front-end files."""
    import torch

    from alltalk_gui.core.training.config import TrainConfig
    from alltalk_gui.core.machine.gpu import list_devices
    from alltalk_gui.core.training.profiles import choose_auto

    kind = resolve_device(opts.device)
    device = device_info(kind)
    arch = _arch(opts.arch)
    write_front_end_files(opts.prepare, text_tokens=arch["text_tokens"],
                          num_audio_tokens=arch["gpt"]["gpt_num_audio_tokens"], dvae=arch["dvae"])
    choice = choose_auto(list_devices(), TrainConfig(max_audio_seconds=opts.clip_seconds, device=kind))
    return {"device_kind": kind, "device": device_label(device), "slug": device_slug(device),
            "torch": torch.__version__, "auto_profile": choice.profile, "auto_reason": choice.reason}


def _child(opts: argparse.Namespace, *extra: str) -> list[str]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--device", opts.device, "--arch", opts.arch,
           "--clip-seconds", str(opts.clip_seconds), "--steps", str(opts.steps), "--warmup", str(opts.warmup)]
    for flag, value in (("--micro-batch", opts.micro_batch), ("--grad-accum", opts.grad_accum)):
        if value:
            cmd += [flag, str(value)]
    return cmd + (["--quick"] if opts.quick else []) + list(extra)


def run(opts: argparse.Namespace) -> Path:
    """Every case in its own process, one after the other; the JSON list is rewritten after each."""
    return run_cases(opts, _child, "memory_profiles")


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
    choose_cases(parser, opts, CASES)
    check_steps(parser, opts)
    if opts.grad_accum and not opts.micro_batch:
        parser.error("--grad-accum goes with --micro-batch")
    return opts


def main(argv: list[str] | None = None) -> int:
    return run_command(parse_args(argv), prepare, run_case, run, preload=PRELOAD)


if __name__ == "__main__":
    sys.exit(main())
