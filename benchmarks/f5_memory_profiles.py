"""Peak memory and speed of each F5-TTS memory profile and of F5-TTS's own fine-tuning settings, on the real-size
DiT (F5TTS_v1_Base: dim 1024, depth 22, 16 heads, 337 M parameters, random weights).

All in one run, each case builds the real-size CFM + DiT (``build_cfm`` with the v1 Base architecture and its
2,545-token vocabulary, random weights: nothing can be downloaded) and trains it for a few steps on random mels and
token ids of one clip length:

* ``low`` / ``medium`` / ``high``: ``resources/profiles/f5/<name>.toml``, adapted to the device by
  ``profile_settings`` (on the CPU: fp32 and torch AdamW instead of bf16 and 8-bit AdamW), trained as the training
  loop trains it: ``engine.apply_memory_levers`` (LoRA on the DiT blocks, activation checkpointing),
  ``levers.make_optimizer``, accelerate with the profile's mixed precision and accumulation, the engine's loss
  (CFM's flow-matching loss, ``alltalk_gui.core.engines.f5.model.loss``, which the engine's ``training_setup``
  hands the loop), ``acc.backward``, gradient clipping, optimizer step, gradients freed; an EMA when the profile
  keeps one (none does).
* ``auto`` (CUDA): the profile ``choose_auto`` picks for this GPU, sized as the loop sizes it: the allocator capped
  at 90 % of the free memory, ``probe_micro_batch`` on clips of the benchmark's length, accumulation keeping the
  effective batch of 8. On the CPU auto sizing does not apply and the case is recorded as skipped.
* ``f5-baseline``: F5-TTS 1.1.22's own fine-tuning, as ``f5_tts/train/finetune_gradio.py`` launches
  ``finetune_cli.py`` with its default settings and ``f5_tts/model/trainer.py`` steps it: a full fine-tune (every
  parameter trains; ``F5TTS_v1_Base.yaml``: ``checkpoint_activations: False``), torch ``AdamW(model.parameters(),
  lr=1e-5, fused=True)`` (trainer.py; torch's default betas and weight decay), ``accelerate launch
  --mixed_precision=fp16`` (finetune_gradio's default ``mixed_precision: "fp16"``), gradient clipping at 1.0
  (``--max_grad_norm``), no accumulation, an EMA of the model (``ema_pytorch.EMA(model, include_online_model=
  False)`` moved to the device: one fp32 copy of the weights there, updated every 10th step by ema_pytorch's
  default, as here), and batches by frames (``--batch_size_type frame --batch_size_per_gpu 3200 --max_samples
  64``: as many clips of the benchmark's length as fit in 3,200 mel frames, one of 30 s, six of 5 s).
  ema_pytorch is not installed (f5-tts is installed without its dependencies), so the EMA is the engine's
  ``Ema``, which holds the same fp32 copy (its decay schedule differs, which costs no memory). Its log-samples
  option (a Vocos vocoder on the device, 13.5 M parameters) is left out. The allocator keeps torch's defaults,
  as F5's trainer does.

Inputs: random mels (``b x n x 100``; n = the frames of ``--clip-seconds``) and random token ids, 14 a second
(F5 pads the text to the mel's length, so its length barely matters); every clip of the same length, the worst
case. Each record holds the peak (``max_memory_reserved`` / ``max_memory_allocated`` on CUDA, peak RSS on the
CPU, with the RSS before the model was built), the mean step time (one optimizer step of micro-batch x
accumulation clips), samples/s, the final loss, one more step timed phase by phase (``breakdown_s``: forward,
backward, optimizer, rest; the mels are given, so the front end is 0 in every case) and the engine's estimate for
the same settings (``F5Engine.estimate_memory``, with its parts).

    python benchmarks/f5_memory_profiles.py --device cuda   # the GPU run: 30 s clips, profiles' batches, 1 + 5 steps
    python benchmarks/f5_memory_profiles.py --quick         # CPU run: 5 s clips, profiles' micro-batches, no
                                                            # accumulation, 1 + 1 steps (about an hour, 2 cores)

On the CPU the full cases need 5-12 GiB of RAM each (AdamW state for 337 M parameters; the baseline also holds
the EMA and six clips' activations); cases never overlap.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from profile_cases import (  # noqa: E402, F401  (FIELDS: every record's keys, for readers and tests)
    FIELDS,
    GIB,
    breakdown,
    case_started,
    check_steps,
    choose_cases,
    complete,
    device_info,
    device_label,
    device_slug,
    loop_micro_step,
    no_phase,
    peaks,
    profile_config,
    resolve_device,
    run_cases,
    run_command,
    timed,
    to_device,
)

CASES = ("low", "medium", "high", "auto", "f5-baseline")
# Imported while the case before runs (see profile_cases.wait_for_the_card): nothing that touches the GPU.
PRELOAD = ("alltalk_gui.core.engines.f5.model",)
BASELINE = "f5-baseline"
ENGINE = "f5"
EFFECTIVE_BATCH = 8  # what every F5 profile keeps (micro-batch x accumulation)
V1_BASE_VOCAB = 2545  # F5TTS_v1_Base's vocab.txt (line 0 a space)
TEXT_PER_S = 14  # characters of read speech a second
# F5-TTS 1.1.22's fine-tuning defaults (finetune_gradio.py load_settings; finetune_cli.py; model/trainer.py).
F5_LR = 1e-5
F5_FRAMES_PER_GPU = 3200  # batch_size_per_gpu with batch_size_type "frame"
F5_MAX_SAMPLES = 64
F5_MAX_GRAD_NORM = 1.0
F5_PRECISION = "fp16"
F5_EMA_DECAY = 0.9999  # ema_pytorch.EMA's defaults: beta 0.9999, update_every 10
F5_EMA_EVERY = 10
FULL = {"clip_seconds": 30.0, "steps": 5, "warmup": 1}
# --quick: the profiles' micro-batches on 5 s clips, one step each way, so that all cases finish on a 2-core CPU.
QUICK = {"clip_seconds": 5.0, "steps": 1, "warmup": 1, "grad_accum": 1}


def _arch(name: str) -> tuple[dict[str, Any], int]:
    """The DiT architecture and vocabulary size of the real model, or (for tests only) the tiny one."""
    if name == "tiny":
        from alltalk_gui.core.engines.f5.tiny_model import TINY_ARCH, TINY_VOCAB

        return dict(TINY_ARCH), len(TINY_VOCAB)
    from alltalk_gui.core.engines.f5.files import V1_BASE_ARCH

    return dict(V1_BASE_ARCH), V1_BASE_VOCAB


def build_model(opts: argparse.Namespace):
    """The CFM + DiT with random weights (seeded), on the CPU, as ``load_f5`` builds it before loading weights."""
    import torch

    from alltalk_gui.core.engines.f5.files import build_cfm

    arch, vocab = _arch(opts.arch)
    torch.manual_seed(0)
    return build_cfm(arch, {f"t{i}": i for i in range(vocab)})


def random_batch(size: int, seconds: float, vocab: int, seed: int = 0) -> dict[str, Any]:
    """``size`` clips of ``seconds`` in the layout of ``alltalk_gui.core.engines.f5.data.collate``: random mels
    (as many frames as F5 makes of that much audio) and random token ids."""
    import torch

    from alltalk_gui.core.engines.f5.data import frames

    n, chars = frames(seconds), max(1, round(seconds * TEXT_PER_S))
    generator = torch.Generator().manual_seed(seed)
    return {"mel": torch.randn(size, n, 100, generator=generator),
            "mel_lengths": torch.full((size,), n, dtype=torch.long),
            "text": torch.randint(1, vocab, (size, chars), generator=generator),
            "text_lengths": torch.full((size,), chars, dtype=torch.long)}


def frame_batch(seconds: float) -> int:
    """Clips of ``seconds`` in one of F5's frame batches (3,200 frames, at most 64 clips)."""
    from alltalk_gui.core.engines.f5.data import frames

    return max(1, min(F5_MAX_SAMPLES, F5_FRAMES_PER_GPU // frames(seconds)))


# ------------------------------------------------------------------------------------------------ one case (child)

def run_case(case: str, opts: argparse.Namespace) -> dict[str, Any]:
    """Build the model for ``case``, train ``opts.warmup + opts.steps`` optimizer steps, return its record."""
    alloc_conf = None
    if case != BASELINE:
        # As training does (before anything touches the GPU); F5's trainer leaves the allocator at torch's default.
        from alltalk_gui.core.machine.memory import use_expandable_segments

        alloc_conf = use_expandable_segments()
    import psutil
    import torch
    from accelerate.utils.memory import should_reduce_batch_size

    from alltalk_gui.core.engines.f5.upstream import f5_model_package
    from alltalk_gui.core.machine.gpu import cpu_cores
    from alltalk_gui.core.training.config import ConfigError

    threads = cpu_cores()
    torch.set_num_threads(threads)
    f5_model_package()
    device = device_info(resolve_device(opts.device))
    record = case_started(case, opts, device, threads, alloc_conf)
    # What Python, torch, accelerate and f5-tts hold before any model is built (the CPU peak includes it).
    record["rss_before_model_gib"] = round(psutil.Process().memory_info().rss / GIB, 3)
    try:
        if case == BASELINE:
            record.update(_baseline(opts, device, record["notes"]))
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


def _profile_config(case: str, opts: argparse.Namespace, device, notes: list[str]):
    return profile_config(ENGINE, case, opts, device, notes, EFFECTIVE_BATCH)


def _profile(case: str, opts: argparse.Namespace, device, notes: list[str]) -> dict[str, Any]:
    """An F5 profile trained the way ``alltalk_gui.core.training.loop`` trains it."""
    import dataclasses
    import gc

    import torch
    from accelerate import Accelerator

    from alltalk_gui.core.engine_api.engine import get_engine
    from alltalk_gui.core.engines.f5 import model as f5_model
    from alltalk_gui.core.training.levers import cap_gpu_memory, make_optimizer, probe_micro_batch
    from alltalk_gui.core.training.profiles import AUTO_HEADROOM

    on_cuda = device.kind == "cuda"
    config, name = _profile_config(case, opts, device, notes)
    effective = config.batch_size * config.grad_accum_steps
    acc = Accelerator(mixed_precision=config.mixed_precision, gradient_accumulation_steps=config.grad_accum_steps,
                      cpu=not on_cuda)
    if case == "auto" and on_cuda:
        # As the training loop's _cap_gpu_memory: the caching allocator enforces the cap, so the probe meets it as OOM.
        cap, free = cap_gpu_memory(acc.device, AUTO_HEADROOM)
        notes.append(f"auto sizing: allocator capped at {cap / GIB:.1f} GiB "
                     f"({AUTO_HEADROOM:.0%} of {free / GIB:.1f} GiB free).")
    engine = get_engine(ENGINE)
    cfm = build_model(opts)
    trainable = engine.apply_memory_levers(cfm, config)  # LoRA and checkpointing, as training_setup applies them
    params = sum(p.numel() for n, p in cfm.named_parameters() if "lora_" not in n)  # the model, adapters apart
    cfm.train()
    vocab = _arch(opts.arch)[1]

    def loss(model, batch) -> dict[str, Any]:  # the engine's training loss (training_setup's, eval_mode False)
        return {"loss": f5_model.loss(model, batch)}

    ema = None
    decay = config.engine_options().ema_decay
    if decay:  # as training_setup: the EMA lives where the model trains
        ema = f5_model.make_ema(cfm, f5_model.EmaOptions(enabled=True, decay=decay))
        ema.model.to(acc.device)
    optimizer = make_optimizer(cfm, config)
    cfm, optimizer = acc.prepare(cfm, optimizer)
    result: dict[str, Any] = {}
    if case == "auto" and on_cuda:
        # As the training loop's _probe_micro_batch: the prepared model, batches on the device, clips of the
        # benchmark's length.
        micro = probe_micro_batch(cfm, lambda size: to_device(random_batch(size, opts.clip_seconds, vocab),
                                                              acc.device), loss, config, acc, effective)
        result["probe_peak_reserved_gib"] = round(torch.cuda.max_memory_reserved(acc.device) / GIB, 3)
        if not micro:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory: auto sizing found no micro-batch that fits")
        accum = math.ceil(effective / micro)
        config = dataclasses.replace(config, batch_size=micro, grad_accum_steps=accum)
        acc.gradient_accumulation_steps = accum
        notes.append(f"auto sizing probed a micro-batch of {micro} (from {effective}); {accum} accumulated per step. "
                     "The peaks below are measured after the probe (its own peak: probe_peak_reserved_gib).")
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(acc.device)
    elif case == "auto":
        notes.append("auto sizing (memory cap, micro-batch probe) is CUDA-only: trained with the profile's batches.")

    batch = to_device(random_batch(config.batch_size, opts.clip_seconds, vocab), acc.device)
    max_norm = config.max_grad_norm if config.max_grad_norm > 0 else float("inf")

    micro_step = loop_micro_step(acc, cfm, batch, loss, optimizer, max_norm)

    after = (lambda step: ema.update(acc.unwrap_model(cfm))) if ema is not None else None
    result.update(timed(case, micro_step, config.batch_size, config.grad_accum_steps, opts, on_cuda, after))
    result.update(breakdown(micro_step, config.grad_accum_steps, on_cuda))
    result.update({
        "resolved_profile": name, "precision": config.mixed_precision, "optimizer": config.optimizer,
        "lora_rank": config.lora_rank, "gradient_checkpointing": config.gradient_checkpointing,
        "ema": bool(config.engine_options().ema_decay), "trainable_params": trainable, "model_params": params,
        **_estimate(config, params, on_cuda),
    })
    return result


def _baseline(opts: argparse.Namespace, device, notes: list[str]) -> dict[str, Any]:
    """F5-TTS's own fine-tuning step (model/trainer.py) with finetune_gradio's defaults."""
    import dataclasses

    import torch
    from accelerate import Accelerator
    from accelerate.utils import DistributedDataParallelKwargs

    from alltalk_gui.core.engines.f5 import model as f5_model
    from alltalk_gui.core.training.config import TrainConfig

    on_cuda = device.kind == "cuda"
    precision = F5_PRECISION if on_cuda else "no"
    if not on_cuda:
        notes.append("F5 launches fp16 autocast; on the CPU the baseline trains in fp32, as the profiles do there.")
    micro = opts.micro_batch or frame_batch(opts.clip_seconds)
    accum = opts.grad_accum or 1
    if (micro, accum) != (frame_batch(opts.clip_seconds), 1):
        notes.append(f"micro-batch {micro} x {accum} in this run (F5's frame batches hold "
                     f"{frame_batch(opts.clip_seconds)} clip(s) of {opts.clip_seconds:g} s, no accumulation).")
    acc = Accelerator(mixed_precision=precision, gradient_accumulation_steps=accum, cpu=not on_cuda,
                      kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)])
    cfm = build_model(opts)
    cfm.train()
    # Trainer.__init__: the EMA (ema_pytorch, include_online_model=False) is a copy of the model, moved to the device
    # before accelerate prepares the model; the optimizer covers every parameter.
    ema = f5_model.make_ema(cfm, f5_model.EmaOptions(enabled=True, decay=F5_EMA_DECAY))
    ema.model.to(acc.device)
    optimizer = torch.optim.AdamW(cfm.parameters(), lr=F5_LR, fused=True)
    cfm, optimizer = acc.prepare(cfm, optimizer)
    batch = to_device(random_batch(micro, opts.clip_seconds, _arch(opts.arch)[1]), acc.device)

    def micro_step(last: bool, phase=no_phase):
        with acc.accumulate(cfm):
            with phase("forward"):
                loss = f5_model.loss(cfm, batch)  # Trainer.train: self.model(mel_spec, text=..., lens=mel_lengths)
            with phase("backward"):
                acc.backward(loss)
            with phase("optimizer"):
                if acc.sync_gradients:
                    acc.clip_grad_norm_(cfm.parameters(), F5_MAX_GRAD_NORM)
                optimizer.step()
                optimizer.zero_grad()
        return loss.detach()

    def after_step(step: int) -> None:  # ema_pytorch updates every 10th call
        if step % F5_EMA_EVERY == 0:
            ema.update(acc.unwrap_model(cfm))

    result = timed(BASELINE, micro_step, micro, accum, opts, on_cuda, after_step)
    result.update(breakdown(micro_step, accum, on_cuda))
    params = sum(p.numel() for p in cfm.parameters())
    config = dataclasses.replace(TrainConfig(engine=ENGINE), batch_size=micro, grad_accum_steps=accum,
                                 max_audio_seconds=opts.clip_seconds, mixed_precision=precision, optimizer="adamw",
                                 lora_rank=0, gradient_checkpointing=False, options={"ema_decay": F5_EMA_DECAY},
                                 lr=F5_LR)
    result.update({
        "resolved_profile": None, "precision": precision, "optimizer": "adamw (torch, fused)", "lora_rank": 0,
        "gradient_checkpointing": False, "ema": True, "trainable_params": params, "model_params": params,
        **_estimate(config, params, on_cuda),
    })
    notes.append(f"F5-TTS 1.1.22 fine-tuning defaults: full fine-tune, torch AdamW(fused, lr {F5_LR:g}, default "
                 f"betas and weight decay), {F5_PRECISION} autocast (accelerate launch), gradient clipping at "
                 f"{F5_MAX_GRAD_NORM:g}, no checkpointing, EMA (fp32 copy on the device, updated every "
                 f"{F5_EMA_EVERY}th step), batches of {F5_FRAMES_PER_GPU} frames.")
    return result


def _estimate(config, params: int, on_cuda: bool = True) -> dict[str, Any]:
    """The engine's estimate for these settings: the GPU's peak on CUDA, the process's resident memory on the CPU
    (None for the tiny test model, which it does not describe)."""
    from alltalk_gui.core.engine_api.engine import get_engine

    found = get_engine(ENGINE).estimate_memory(config, attention_scores=not on_cuda, parameters=params)
    if found is None:
        return {"estimated_gib": None}
    parts = {k: round(v, 3) for k, v in found.as_dict().items() if k.endswith("_gib") and k != "total_gib"}
    return {"estimated_gib": round(found.total_gib, 3), "estimate_parts_gib": parts,
            "estimate_calibrated": found.calibrated}


# ------------------------------------------------------------------------------------------------ the run (parent)

def prepare(opts: argparse.Namespace) -> dict[str, Any]:
    """In a child process, so that the parent never holds a CUDA context or a large heap: resolve the device,
    describe it, and ask which profile auto would choose."""
    import torch

    from alltalk_gui.core.machine.gpu import list_devices
    from alltalk_gui.core.training.config import TrainConfig
    from alltalk_gui.core.training.profiles import choose_auto

    kind = resolve_device(opts.device)
    device = device_info(kind)
    info = {"device_kind": kind, "device": device_label(device), "slug": device_slug(device),
            "torch": torch.__version__}
    try:
        choice = choose_auto(list_devices(), TrainConfig(engine=ENGINE, max_audio_seconds=opts.clip_seconds,
                                                         device=kind))
        info.update(auto_profile=choice.profile, auto_reason=choice.reason)
    except Exception as exc:  # recorded in auto's record (on the CPU choose_auto needs a CPU speed calibration)
        info.update(auto_profile=None, auto_reason=f"{type(exc).__name__}: {exc}")
    return info


def _child(opts: argparse.Namespace, *extra: str) -> list[str]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--device", opts.device, "--arch", opts.arch,
           "--clip-seconds", str(opts.clip_seconds), "--steps", str(opts.steps), "--warmup", str(opts.warmup)]
    for flag, value in (("--micro-batch", opts.micro_batch), ("--grad-accum", opts.grad_accum)):
        if value:
            cmd += [flag, str(value)]
    return cmd + (["--quick"] if opts.quick else []) + list(extra)


def run(opts: argparse.Namespace) -> Path:
    """Every case in its own process, one after the other; the JSON list is rewritten after each."""
    return run_cases(opts, _child, "f5_memory_profiles")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"CPU run: {QUICK['clip_seconds']} s clips, the profiles' micro-batches with "
                             f"accumulation {QUICK['grad_accum']}, {QUICK['warmup']} warm-up + {QUICK['steps']} "
                             "timed steps")
    parser.add_argument("--steps", type=int, help=f"timed optimizer steps per case (default {FULL['steps']})")
    parser.add_argument("--warmup", type=int, help=f"untimed steps first (default {FULL['warmup']})")
    parser.add_argument("--clip-seconds", type=float, help=f"length of every clip (default {FULL['clip_seconds']})")
    parser.add_argument("--micro-batch", type=int,
                        help="clips per micro-batch for every case but auto (default: the profile's; the baseline: "
                             "as many as fit in F5's 3,200-frame batches)")
    parser.add_argument("--grad-accum", type=int,
                        help="micro-batches per optimizer step for every case but auto (default: the profile's, or "
                             f"an effective batch of {EFFECTIVE_BATCH} with --micro-batch; the baseline: 1)")
    parser.add_argument("--profiles", default=",".join(CASES),
                        help=f"comma-separated cases (default {','.join(CASES)})")
    parser.add_argument("--out", help="JSON file (default benchmarks/results/f5_memory_profiles_<date>_<device>.json)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--arch", choices=("v1_base", "tiny"), default="v1_base", help=argparse.SUPPRESS)  # tests
    parser.add_argument("--one", choices=CASES, help=argparse.SUPPRESS)  # internal: run one case, print its JSON
    parser.add_argument("--files", help=argparse.SUPPRESS)  # internal: unused by F5 (the XTTS front end's files)
    parser.add_argument("--prepare", help=argparse.SUPPRESS)  # internal: describe the device
    opts = parser.parse_args(argv)
    defaults = {**FULL, **(QUICK if opts.quick else {})}
    for key in ("clip_seconds", "steps", "warmup", "grad_accum"):
        if getattr(opts, key) is None:
            setattr(opts, key, defaults.get(key))
    choose_cases(parser, opts, CASES)
    check_steps(parser, opts, 30, "F5-TTS")
    return opts


def main(argv: list[str] | None = None) -> int:
    return run_command(parse_args(argv), prepare, run_case, run, preload=PRELOAD)


if __name__ == "__main__":
    sys.exit(main())
