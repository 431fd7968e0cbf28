"""Peak memory and speed of each Parler-TTS memory profile and of Parler-TTS's own training settings, on the real
size (Mini v1 by default, or Large v1) with random weights, on 10 s clips.

Runs in the Parler engine's environment (``alltalk-gui engine-env parler``); started with another interpreter it
starts itself again with that one. Each case in its own process (``profile_cases.run_cases``):

* ``low`` / ``medium`` / ``high``: ``resources/profiles/parler/<name>.toml``, adapted to the device by
  ``profile_settings`` (on the CPU: fp32 and torch AdamW instead of bf16 and 8-bit AdamW), trained as the training
  loop trains it: the model built as ``training_setup`` leaves it (Parler's ``ParlerTTSForConditionalGeneration``
  with the size's decoder, Flan-T5 and DAC dropped once they have done their work: here they never do any, since
  the description's states and the codes are random), ``engine.apply_memory_levers`` (LoRA, frozen weights in
  bf16, checkpointing), ``levers.make_optimizer``, accelerate with the profile's mixed precision and accumulation,
  the engine's loss (``model.loss``: Parler's own), ``forward_backward``, clipping, step, gradients freed.
* ``auto`` (CUDA): the profile ``choose_auto`` picks for this GPU, sized as the loop sizes it (90 % cap, probe).
* ``parler-baseline``: Parler-TTS's own training settings from its training README's example, stepped as its
  ``run_parler_tts_training.py`` steps them: the whole model on the device (Flan-T5's encoder frozen but run, and
  in train mode, in every step; DAC frozen), ``torch.optim.AdamW(model.parameters(), lr=0.00095, betas=(0.9, 0.99),
  weight_decay=0.01)``, bf16 mixed precision (``--dtype bfloat16``), 3 clips a micro-batch and 8 accumulated
  (``--per_device_train_batch_size 3 --gradient_accumulation_steps 8``), no checkpointing, the loss
  ``model(**batch, loss_reduction="sum") / num_items`` (its train_step), gradients clipped at 1.0 (its
  ``max_grad_norm`` default). Inputs: the description as 40 random token ids, the transcript as tokens.

Inputs: random DAC codes of ``--clip-seconds`` (861 frames for 10 s) in Parler's delay pattern, 4 transcript tokens a
second, a 40-token description (random states for our cases, which T5 would have made once; random ids for the
baseline, whose T5 runs). Every clip of the same length. Each record holds the peak (CUDA reserved and allocated,
or the CPU's peak RSS), the mean step time, samples/s, the final loss and the engine's estimate.

    python benchmarks/parler_memory_profiles.py --device cuda            # the GPU run: 10 s clips, 1 + 3 steps
    python benchmarks/parler_memory_profiles.py --device cuda --size large --profiles low
    python benchmarks/parler_memory_profiles.py --quick                  # CPU: micro-batches only, 1 + 1 steps
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from profile_cases import (  # noqa: E402
    GIB,
    case_started,
    choose_cases,
    complete,
    device_info,
    device_label,
    device_slug,
    peaks,
    profile_config,
    resolve_device,
    run_cases,
    timed,
    to_device,
    wait_for_the_card,
)

CASES = ("low", "medium", "high", "auto", "parler-baseline")
# Imported while the case before runs (see profile_cases.wait_for_the_card): nothing that touches the GPU.
PRELOAD = ("parler_tts",)
BASELINE = "parler-baseline"
ENGINE = "parler"
EFFECTIVE_BATCH = 8
DESCRIPTION_TOKENS = 40
TEXT_TOKENS_PER_S = 4
# Parler-TTS's training README example (training/README.md, the Mini v0.1 recipe) and its script's defaults.
PARLER_LR = 0.00095
PARLER_BETAS = (0.9, 0.99)
PARLER_WEIGHT_DECAY = 0.01
PARLER_MICRO_BATCH = 3
PARLER_ACCUMULATION = 8
PARLER_PRECISION = "bf16"
PARLER_MAX_GRAD_NORM = 1.0
FULL = {"clip_seconds": 10.0, "steps": 3, "warmup": 1}
QUICK = {"clip_seconds": 10.0, "steps": 1, "warmup": 1, "grad_accum": 1}


def in_engine_environment() -> None:
    """Start this script again with the Parler environment's interpreter when this one is another."""
    import transformers

    if transformers.__version__.startswith("4.46."):
        return
    from alltalk_gui.core.engine_api.engine import get_engine
    from alltalk_gui.core.engine_api.environment import python_for

    os.execv(python_for(get_engine(ENGINE)), [python_for(get_engine(ENGINE)), *sys.argv])


def build_model(size: str, full: bool):
    """ParlerTTSForConditionalGeneration of ``size`` with random weights (seeded), on the CPU.

    ``full``: with Flan-T5 large's encoder and DAC at their real size (the baseline runs them); otherwise with a
    one-layer encoder of T5's real width and a small-latent DAC, which ``drop_frozen_parts`` removes anyway."""
    import torch
    from transformers import T5Config

    from alltalk_gui.core.engines.parler.memory_estimate import SIZES
    from alltalk_gui.core.engines.parler.tiny_model import TINY_DAC_LATENT, TINY_DECODER, TINY_T5
    from alltalk_gui.core.engines.parler.upstream import configs, model_class

    parler_config, decoder_config, dac_config = configs()
    if size == "tiny":
        t5 = T5Config(vocab_size=32_128, is_encoder_decoder=False, **TINY_T5)
        decoder = dict(TINY_DECODER)
    else:
        layers = 24 if full else 1
        t5 = T5Config(vocab_size=32_128, d_model=1024, d_kv=64, d_ff=2816, num_layers=layers, num_heads=16,
                      feed_forward_proj="gated-gelu", is_encoder_decoder=False)
        decoder = dict(SIZES[size], max_position_embeddings=4096)
    dac = dac_config(num_codebooks=9, codebook_size=1024, latent_dim=1024 if full else TINY_DAC_LATENT)
    decoder = decoder_config(vocab_size=1088, pad_token_id=1024, eos_token_id=1024, bos_token_id=1025,
                             num_codebooks=9, **decoder)
    config = parler_config.from_sub_models_config(t5, dac, decoder, vocab_size=32_128, pad_token_id=1024,
                                                  decoder_start_token_id=1025)
    torch.manual_seed(0)
    return model_class()(config)


def random_inputs(size: int, seconds: float, width: int, seed: int = 0) -> dict[str, Any]:
    """A batch of ``size`` clips of ``seconds`` in the layout of ``data.collate`` (labels from random codes)."""
    import torch

    from alltalk_gui.core.engines.parler import data
    from alltalk_gui.core.engines.parler.files import frames

    generator = torch.Generator().manual_seed(seed)
    n = frames(int(seconds * 44_100))
    prompt = max(1, int(seconds * TEXT_TOKENS_PER_S))
    samples = [{"labels": data.labels_from_codes(torch.randint(0, 1024, (9, n), generator=generator)),
                "prompt": torch.randint(3, 32_000, (prompt,), generator=generator),
                "description": torch.randn(DESCRIPTION_TOKENS, width, generator=generator)} for _ in range(size)]
    return data.collate(samples)


# ------------------------------------------------------------------------------------------------ one case (child)

def run_case(case: str, opts: argparse.Namespace) -> dict[str, Any]:
    alloc_conf = None
    if case != BASELINE:
        from alltalk_gui.core.machine.memory import use_expandable_segments

        alloc_conf = use_expandable_segments()
    import psutil
    import torch
    from accelerate.utils.memory import should_reduce_batch_size

    from alltalk_gui.core.engines.parler.worker import quiet
    from alltalk_gui.core.machine.gpu import cpu_cores
    from alltalk_gui.core.training.config import ConfigError

    quiet()
    threads = cpu_cores()
    torch.set_num_threads(threads)
    device = device_info(resolve_device(opts.device))
    record = case_started(case, opts, device, threads, alloc_conf)
    record["size"] = opts.size
    record["rss_before_model_gib"] = round(psutil.Process().memory_info().rss / GIB, 3)
    try:
        record.update((_baseline if case == BASELINE else _profile)(case, opts, device, record["notes"]))
    except ConfigError as exc:
        record["error"] = str(exc)
    except Exception as exc:
        if not should_reduce_batch_size(exc):
            raise
        record["error"] = f"out of memory: {str(exc).splitlines()[0][:300]}"
    record.update(peaks(device))
    return complete(record)


def _profile_config(case: str, opts: argparse.Namespace, device, notes: list[str]):
    return profile_config(ENGINE, case, opts, device, notes, EFFECTIVE_BATCH)


def _profile(case: str, opts: argparse.Namespace, device, notes: list[str]) -> dict[str, Any]:
    """A Parler profile trained the way ``alltalk_gui.core.training.loop`` trains it."""
    import dataclasses
    import gc

    import torch
    from accelerate import Accelerator

    from alltalk_gui.core.engine_api.engine import get_engine
    from alltalk_gui.core.engines.parler import model as parler_model
    from alltalk_gui.core.training.levers import cap_gpu_memory, forward_backward, make_optimizer, probe_micro_batch
    from alltalk_gui.core.training.profiles import AUTO_HEADROOM

    on_cuda = device.kind == "cuda"
    config, name = _profile_config(case, opts, device, notes)
    effective = config.batch_size * config.grad_accum_steps
    acc = Accelerator(mixed_precision=config.mixed_precision, gradient_accumulation_steps=config.grad_accum_steps,
                      cpu=not on_cuda)
    if case == "auto" and on_cuda:
        cap, free = cap_gpu_memory(acc.device, AUTO_HEADROOM)
        notes.append(f"auto sizing: allocator capped at {cap / GIB:.1f} GiB ({AUTO_HEADROOM:.0%} of {free / GIB:.1f} "
                     "GiB free).")
    engine = get_engine(ENGINE)
    full = build_model(opts.size, full=False)
    width = full.config.text_encoder.d_model
    parler_model.drop_frozen_parts(full)  # as training_setup, once the description and codes are computed
    model = parler_model.trainable_view(full)
    params = sum(p.numel() for n, p in model.named_parameters() if "lora_" not in n)
    trainable = engine.apply_memory_levers(model, config)
    model.train()

    def loss(m, batch) -> dict[str, Any]:
        return parler_model.loss(m, batch)

    optimizer = make_optimizer(model, config)
    model, optimizer = acc.prepare(model, optimizer)
    result: dict[str, Any] = {}
    if case == "auto" and on_cuda:
        micro = probe_micro_batch(model, lambda size: to_device(random_inputs(size, opts.clip_seconds, width),
                                                                acc.device), loss, config, acc, effective)
        result["probe_peak_reserved_gib"] = round(torch.cuda.max_memory_reserved(acc.device) / GIB, 3)
        if not micro:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory: auto sizing found no micro-batch that fits")
        accum = math.ceil(effective / micro)
        config = dataclasses.replace(config, batch_size=micro, grad_accum_steps=accum)
        acc.gradient_accumulation_steps = accum
        notes.append(f"auto sizing probed a micro-batch of {micro} (from {effective}); {accum} accumulated per step.")
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(acc.device)
    elif case == "auto":
        notes.append("auto sizing (memory cap, micro-batch probe) is CUDA-only: trained with the profile's batches.")

    batch = to_device(random_inputs(config.batch_size, opts.clip_seconds, width), acc.device)
    max_norm = config.max_grad_norm if config.max_grad_norm > 0 else float("inf")

    def micro_step(last: bool):
        with acc.accumulate(model):
            losses = forward_backward(model, batch, loss, acc)
            if acc.sync_gradients:
                acc.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        return losses["loss"].detach()

    result.update(timed(case, micro_step, config.batch_size, config.grad_accum_steps, opts, on_cuda))
    result.update({"resolved_profile": name, "precision": config.mixed_precision, "optimizer": config.optimizer,
                   "lora_rank": config.lora_rank, "gradient_checkpointing": config.gradient_checkpointing,
                   "trainable_params": trainable, "model_params": params, **_estimate(config, params)})
    return result


def _baseline(case: str, opts: argparse.Namespace, device, notes: list[str]) -> dict[str, Any]:
    """Parler-TTS's own training step (run_parler_tts_training.py's train_step) with its README's settings."""
    import torch
    from accelerate import Accelerator

    from alltalk_gui.core.engines.parler import data

    on_cuda = device.kind == "cuda"
    precision = PARLER_PRECISION if on_cuda else "no"
    if not on_cuda:
        notes.append("Parler trains in bf16; on the CPU the baseline trains in fp32, as the profiles do there.")
    micro = opts.micro_batch or PARLER_MICRO_BATCH
    accum = opts.grad_accum or PARLER_ACCUMULATION
    if (micro, accum) != (PARLER_MICRO_BATCH, PARLER_ACCUMULATION):
        notes.append(f"micro-batch {micro} x {accum} in this run (Parler's README: {PARLER_MICRO_BATCH} x "
                     f"{PARLER_ACCUMULATION}).")
    acc = Accelerator(mixed_precision=precision, gradient_accumulation_steps=accum, cpu=not on_cuda)
    model = build_model(opts.size, full=True)
    model.freeze_encoders(True)  # --freeze_text_encoder true; DAC is always frozen
    model.train()
    optimizer = torch.optim.AdamW(params=model.parameters(), lr=PARLER_LR, betas=PARLER_BETAS,
                                  weight_decay=PARLER_WEIGHT_DECAY)
    model, optimizer = acc.prepare(model, optimizer)
    generator = torch.Generator().manual_seed(0)
    ours = random_inputs(micro, opts.clip_seconds, 1)
    batch = to_device({"input_ids": torch.randint(3, 32_000, (micro, DESCRIPTION_TOKENS), generator=generator),
                       "attention_mask": torch.ones(micro, DESCRIPTION_TOKENS, dtype=torch.long),
                       "prompt_input_ids": ours["prompt_input_ids"], "prompt_attention_mask": ours["prompt_attention_mask"],
                       "labels": ours["labels"]}, acc.device)
    # Their train_step: loss * gradient_accumulation_steps / num_items_in_batch, where num_items counts every label
    # position of the step's micro-batches (all of this size here); accelerate divides by the accumulation again.
    num_items = data.positions(batch) * accum

    def micro_step(last: bool):
        with acc.accumulate(model):
            loss = model(**batch, loss_reduction="sum").loss * accum / num_items
            acc.backward(loss)
            if acc.sync_gradients:
                acc.clip_grad_norm_(model.parameters(), PARLER_MAX_GRAD_NORM)
            optimizer.step()
            optimizer.zero_grad()
        return loss.detach()

    result = timed(BASELINE, micro_step, micro, accum, opts, on_cuda)
    params = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    result.update({"resolved_profile": None, "precision": precision, "optimizer": "adamw (torch)", "lora_rank": 0,
                   "gradient_checkpointing": False, "trainable_params": trainable, "model_params": params,
                   "estimated_gib": None})
    notes.append(f"Parler-TTS's README settings: AdamW(lr {PARLER_LR}, betas {PARLER_BETAS}, weight decay "
                 f"{PARLER_WEIGHT_DECAY}), {PARLER_PRECISION}, {PARLER_MICRO_BATCH} x {PARLER_ACCUMULATION} clips, no "
                 "checkpointing, Flan-T5 frozen but run in every step, DAC frozen, both on the device.")
    return result


def _estimate(config, params: int) -> dict[str, Any]:
    from alltalk_gui.core.engine_api.engine import get_engine

    found = get_engine(ENGINE).estimate_memory(config, parameters=params)
    if found is None:
        return {"estimated_gib": None}
    parts = {k: round(v, 3) for k, v in found.as_dict().items() if k.endswith("_gib") and k != "total_gib"}
    return {"estimated_gib": round(found.total_gib, 3), "estimate_parts_gib": parts,
            "estimate_calibrated": found.calibrated}


# ------------------------------------------------------------------------------------------------ the run (parent)

def prepare(opts: argparse.Namespace) -> dict[str, Any]:
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
    except Exception as exc:
        info.update(auto_profile=None, auto_reason=f"{type(exc).__name__}: {exc}")
    return info


def _child(opts: argparse.Namespace, *extra: str) -> list[str]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--device", opts.device, "--size", opts.size,
           "--clip-seconds", str(opts.clip_seconds), "--steps", str(opts.steps), "--warmup", str(opts.warmup)]
    for flag, value in (("--micro-batch", opts.micro_batch), ("--grad-accum", opts.grad_accum)):
        if value:
            cmd += [flag, str(value)]
    return cmd + (["--quick"] if opts.quick else []) + list(extra)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"))
    parser.add_argument("--size", default="mini", choices=("mini", "large", "tiny"),
                        help="the published size (tiny: the test model's architecture, for the benchmark's tests)")
    parser.add_argument("--profiles", default=",".join(CASES), help="comma-separated cases")
    parser.add_argument("--clip-seconds", type=float, default=None)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--warmup", type=int, default=None)
    parser.add_argument("--micro-batch", type=int, default=None)
    parser.add_argument("--grad-accum", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help="CPU-sized run: profiles' micro-batches, 1 + 1 steps")
    parser.add_argument("--out", default=None, help="result JSON (default benchmarks/results/...)")
    parser.add_argument("--prepare", metavar="FOLDER", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--one", metavar="CASE", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--files", default=None, help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    defaults = QUICK if opts.quick else FULL
    for key in ("clip_seconds", "steps", "warmup", "grad_accum"):
        if getattr(opts, key, None) is None and key in defaults:
            setattr(opts, key, defaults[key])
    choose_cases(parser, opts, CASES)
    opts.arch = opts.size  # the shared record's field
    return opts


def main(argv: list[str] | None = None) -> int:
    import json

    opts = parse_args(argv)
    in_engine_environment()
    if opts.prepare:
        print(json.dumps(prepare(opts)))
        return 0
    if opts.one:
        imports_s = wait_for_the_card(PRELOAD)
        print(json.dumps({**run_case(opts.one, opts), "preload_s": round(imports_s, 1)}))
        return 0
    out = run_cases(opts, _child, f"parler_memory_profiles_{opts.size}")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
