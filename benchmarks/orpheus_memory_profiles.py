"""Peak memory and speed of each Orpheus-TTS memory profile and of Orpheus's own fine-tuning settings, on the
real-size model (Orpheus 3B 0.1's config: Llama 3.2 3B with its 156,940-token vocabulary, 3.3 B parameters, random
weights: nothing can be downloaded).

The run first writes a random real-size base folder (``config.json`` + bf16 safetensors shards, 6.6 GB, into a
temporary folder or ``--base``), which every case loads as the engine loads a base model, so the Low profile's
4-bit weights are quantised by bitsandbytes as they are in a real run. Each case then trains a few steps on
micro-batches of its micro-batch's number of clips of ``--clip-seconds`` (a 40-token prompt and 82 audio tokens a
second, every token scored from the first audio token on; the baselines one clip). Until the third H200 run of
2026-11-27 every case trained one clip a micro-step whatever micro-batch its record names: those records have no
``clips`` field, and ``tests/benchmarks/test_orpheus_estimates_match_the_h200.py`` holds them as one clip:

* ``low`` / ``medium`` / ``high``: ``resources/profiles/orpheus/<name>.toml`` adapted to the device by
  ``profile_settings`` (on the CPU: fp32 maths and torch AdamW instead of bf16 autocast and 8-bit AdamW), trained as
  the loop trains it: ``load_lm`` with the profile's ``base_weights``, ``OrpheusLM``, ``engine.apply_memory_levers``
  (LoRA, checkpointing), ``levers.make_optimizer``, accelerate with the profile's precision and accumulation, the
  engine's chunked loss, ``acc.backward``, clipping, step, gradients freed.
* ``auto`` (CUDA): the profile ``choose_auto`` picks for this GPU, sized as the loop sizes it (the micro-batch is
  the profile's: Orpheus's profiles train one clip at a time). Skipped on the CPU.
* ``orpheus-full``: Orpheus's own ``finetune/train.py`` as transformers 4.x ran it: ``from_pretrained`` in fp32 (4.x's
  default), the Trainer's ``bf16=True`` (autocast), torch AdamW (fused on CUDA), lr 5e-5, no weight decay,
  clipping at 1.0, batch 1, no accumulation, no checkpointing, ``labels = input_ids`` (every position scored, the
  full logits made by transformers' own loss); SDPA attention (its flash_attention_2 is not installed here).
* ``orpheus-lora``: Orpheus's ``finetune/lora.py``: the same, with peft's LoRA r32, alpha 64, rsLoRA, on the seven
  projections and ``modules_to_save=["lm_head", "embed_tokens"]`` (both trained in full, as trainable copies).

Each record holds the peak (``max_memory_reserved`` / ``max_memory_allocated`` on CUDA, peak RSS on the CPU), the
mean step time, samples/s, the final loss and the engine's estimate for the same settings.

    python benchmarks/orpheus_memory_profiles.py --device cuda --clip-seconds 30     # the GPU kit's run
    python benchmarks/orpheus_memory_profiles.py --device cpu --profiles low,medium --clip-seconds 10 --steps 1
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from profile_cases import (  # noqa: E402, F401  (FIELDS: every record's keys, for readers and tests)
    FIELDS,
    GIB,
    case_started,
    check_steps,
    choose_cases,
    chosen_profile,
    complete,
    device_info,
    device_label,
    device_slug,
    peaks,
    resolve_device,
    run_cases,
    run_command,
    timed,
    to_device,
)

CASES = ("low", "medium", "high", "auto", "orpheus-full", "orpheus-lora")
# Imported while the case before runs (see profile_cases.wait_for_the_card): nothing that touches the GPU.
PRELOAD = ("alltalk_gui.core.engines.orpheus.model", "transformers.models.llama.modeling_llama")
BASELINES = ("orpheus-full", "orpheus-lora")
ENGINE = "orpheus"
PROMPT_TOKENS = 40
ORPHEUS_LR = 5e-5
ORPHEUS_MAX_GRAD_NORM = 1.0
DEFAULTS = {"clip_seconds": 30.0, "steps": 3, "warmup": 1}


def special_tokens(config: dict[str, Any]):
    """Orpheus's special ids (128257 .. 128263, audio from 128266), or the tiny model's for its vocabulary."""
    from alltalk_gui.core.engines.orpheus.tokens import SpecialTokens

    if config["vocab_size"] >= 156938:
        return SpecialTokens(128257, 128258, 128259, 128260, 128261, 128262, 128263, end_of_text=128009,
                             audio_base=128266, codebook_size=4096)
    from alltalk_gui.core.engines.orpheus.files import special_tokens as read

    return read(config["_folder"])


def write_random_base(folder: Path, arch: str) -> Path:
    """A base folder with random weights: the real config (bf16 shards of at most 2 GB), or the tiny test model.

    Written beside it under a ``.partial`` name and renamed when complete, so a write that is stopped (the GPU kit
    starts it during call 2's tests, whose time limit may cut it) never leaves a folder that looks whole."""
    import shutil

    import torch
    from safetensors.torch import save_file
    from transformers import LlamaConfig, LlamaForCausalLM

    from alltalk_gui.core.engines.orpheus.memory_estimate import ORPHEUS_3B_CONFIG

    if arch == "tiny":
        from alltalk_gui.core.engines.orpheus.tiny_model import build_tiny_orpheus

        return build_tiny_orpheus(folder)
    final, folder = folder, folder.with_name(folder.name + ".partial")
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(dict(ORPHEUS_3B_CONFIG, torch_dtype="bfloat16")))
    with torch.device("meta"):
        shapes = {k: v.shape for k, v in LlamaForCausalLM(LlamaConfig(**ORPHEUS_3B_CONFIG)).state_dict().items()
                  if k != "lm_head.weight"}  # tied
    generator = torch.Generator().manual_seed(0)
    shard, size, index, names = {}, 0, {}, []

    def flush() -> None:
        name = f"model-{len(names) + 1:05d}.safetensors"
        save_file(shard, str(folder / name), metadata={"format": "pt"})
        index.update({k: name for k in shard})
        names.append(name)

    for key, shape in shapes.items():
        value = torch.ones(shape) if key.endswith("norm.weight") else torch.randn(shape, generator=generator) * 0.02
        shard[key] = value.to(torch.bfloat16)
        size += shard[key].numel() * 2
        if size > 2 * GIB:
            flush()
            shard, size = {}, 0
    if shard:
        flush()
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": index}))
    folder.rename(final)
    return final


def random_batch(special, seconds: float, vocab_text: int, clips: int = 1, seed: int = 0) -> dict[str, Any]:
    """A micro-batch of ``clips`` clips as the engine collates it: each a prompt, then Orpheus's frames of random
    codes. (Until 2026-11-27's third H200 run every case collated one clip, whatever its micro-batch: each of
    those records trained one clip a micro-step; ``clips`` in a record says how many it trained.)"""
    import torch

    from alltalk_gui.core.engines.orpheus.data import Sample, collate
    from alltalk_gui.core.engines.orpheus.memory_estimate import TOKENS_PER_SECOND

    generator = torch.Generator().manual_seed(seed)
    frames = max(1, int(seconds * TOKENS_PER_SECOND) // 7)
    samples = []
    for _ in range(clips):
        codes = torch.randint(0, special.codebook_size, (frames * 7,), generator=generator)
        audio = special.audio_base + (torch.arange(frames * 7) % 7) * special.codebook_size + codes
        words = torch.randint(0, vocab_text, (PROMPT_TOKENS - 6,), generator=generator)
        ids = torch.cat([torch.tensor([special.start_of_human]), words, torch.tensor(
            [special.end_of_text, special.end_of_human, special.start_of_ai, special.start_of_speech]), audio,
            torch.tensor([special.end_of_speech, special.end_of_ai])])
        samples.append(Sample(ids, PROMPT_TOKENS))
    return collate(samples, special.pad)


# ------------------------------------------------------------------------------------------------ one case (child)

def run_case(case: str, opts: argparse.Namespace) -> dict[str, Any]:
    from alltalk_gui.core.machine.memory import use_expandable_segments

    alloc_conf = use_expandable_segments() if case not in BASELINES else None
    import psutil
    import torch
    from accelerate.utils.memory import should_reduce_batch_size

    from alltalk_gui.core.machine.gpu import cpu_cores
    from alltalk_gui.core.training.config import ConfigError

    threads = cpu_cores()
    torch.set_num_threads(threads)
    device = device_info(resolve_device(opts.device))
    record = case_started(case, opts, device, threads, alloc_conf)
    record["rss_before_model_gib"] = round(psutil.Process().memory_info().rss / GIB, 3)
    try:
        record.update(_baseline(case, opts, device, record["notes"]) if case in BASELINES
                      else _profile(case, opts, device, record["notes"]))
    except ConfigError as exc:
        record["error"] = str(exc)
    except Exception as exc:  # out of memory is a result; anything else is a bug and is raised
        if not should_reduce_batch_size(exc):
            raise
        record["error"] = f"out of memory: {str(exc).splitlines()[0][:300]}"
    record.update(peaks(device))
    return complete(record)


def _config(opts: argparse.Namespace) -> dict[str, Any]:
    config = json.loads((Path(opts.base) / "config.json").read_text())
    config["_folder"] = opts.base
    return config


def _profile(case: str, opts: argparse.Namespace, device, notes: list[str]) -> dict[str, Any]:
    import torch
    from accelerate import Accelerator

    from alltalk_gui.core.engine_api.engine import get_engine
    from alltalk_gui.core.engines.orpheus.memory_estimate import Shape
    from alltalk_gui.core.engines.orpheus.model import OrpheusLM, load_lm, loss
    from alltalk_gui.core.training.levers import make_optimizer

    on_cuda = device.kind == "cuda"
    base, settings, name = chosen_profile(ENGINE, case, opts, device, notes)
    config = base.with_values({**settings, "max_audio_seconds": opts.clip_seconds}).with_values({"profile": case})
    if opts.grad_accum:
        config = config.with_values({"grad_accum_steps": opts.grad_accum})
        notes.append(f"{opts.grad_accum} micro-batch(es) per step in this run (the profile has "
                     f"{settings['grad_accum_steps']}).")
    acc = Accelerator(mixed_precision=config.mixed_precision, gradient_accumulation_steps=config.grad_accum_steps,
                      cpu=not on_cuda)
    model_config = _config(opts)
    special = special_tokens(model_config)
    weights = config.engine_options().base_weights
    torch.manual_seed(0)
    model = OrpheusLM(load_lm(opts.base, weights, acc.device), special)
    trainable = get_engine(ENGINE).apply_memory_levers(model, config)
    # The configuration's count, as the engine's training_setup gives it: numel() counts a 4-bit weight as half
    # (two to a byte), so Low's NF4 base would look like another size and get no estimate.
    params = Shape.of(model_config).parameters
    model.train()
    optimizer = make_optimizer(model, config)
    model, optimizer = acc.prepare(model, optimizer)
    batch = to_device(random_batch(special, opts.clip_seconds, min(128000, model_config["vocab_size"] // 2),
                                   clips=config.batch_size), acc.device)
    max_norm = config.max_grad_norm if config.max_grad_norm > 0 else float("inf")

    def micro_step(last: bool):
        with acc.accumulate(model):
            losses = loss(model, batch)
            acc.backward(losses["loss"])
            if acc.sync_gradients:
                acc.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        return losses["loss"].detach()

    result = timed(case, micro_step, config.batch_size, config.grad_accum_steps, opts, on_cuda)
    result.update({"resolved_profile": name, "precision": config.mixed_precision, "optimizer": config.optimizer,
                   "base_weights": weights, "lora_rank": config.lora_rank,
                   "gradient_checkpointing": config.gradient_checkpointing, "trainable_params": trainable,
                   "model_params": params, "tokens": int(batch["input_ids"].shape[1]),
                   "clips": int(batch["input_ids"].shape[0]), **_estimate(config, params)})
    return result


def _baseline(case: str, opts: argparse.Namespace, device, notes: list[str]) -> dict[str, Any]:
    """Orpheus's own finetune/train.py (full) or finetune/lora.py step, as the Hugging Face Trainer runs it."""
    import torch
    from accelerate import Accelerator
    from transformers import AutoModelForCausalLM

    on_cuda = device.kind == "cuda"
    precision = "bf16" if on_cuda else "no"
    if not on_cuda:
        notes.append("Orpheus trains with bf16 autocast; on the CPU the baseline runs in fp32, as the profiles do.")
    acc = Accelerator(mixed_precision=precision, cpu=not on_cuda)
    torch.manual_seed(0)
    lm = AutoModelForCausalLM.from_pretrained(opts.base, dtype=torch.float32, attn_implementation="sdpa")
    params = sum(p.numel() for p in lm.parameters())
    lora = case == "orpheus-lora"
    if lora:
        lm = orpheus_lora(lm)
    lm.train()
    trainable = sum(p.numel() for p in lm.parameters() if p.requires_grad)
    optimizer = torch.optim.AdamW([p for p in lm.parameters() if p.requires_grad], lr=ORPHEUS_LR, weight_decay=0.0,
                                  fused=on_cuda)
    lm, optimizer = acc.prepare(lm, optimizer)
    special = special_tokens(_config(opts))
    batch = random_batch(special, opts.clip_seconds, min(128000, _config(opts)["vocab_size"] // 2))
    ids = batch["input_ids"].to(acc.device)
    mask = batch["attention_mask"].to(acc.device)

    def micro_step(last: bool):
        out = lm(input_ids=ids, attention_mask=mask, labels=ids)  # Orpheus's datasets: labels = input_ids
        acc.backward(out.loss)
        acc.clip_grad_norm_(lm.parameters(), ORPHEUS_MAX_GRAD_NORM)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return out.loss.detach()

    result = timed(case, micro_step, 1, 1, opts, on_cuda)
    from alltalk_gui.core.engines.orpheus.memory_estimate import Shape, OrpheusSetting, estimate

    found = estimate(OrpheusSetting(batch_size=1, max_clip_seconds=opts.clip_seconds, base_weights="fp32",
                                    mixed_precision=precision, gradient_checkpointing=False, optimizer="adamw",
                                    lora_rank=32 if lora else 0, embeddings_in_full=lora, chunked_loss=False),
                     Shape.of(_config(opts)))
    notes.append(f"Orpheus's finetune/{'lora' if lora else 'train'}.py under the Hugging Face Trainer: fp32 weights "
                 "(transformers 4.x's default dtype), bf16 autocast, torch AdamW (lr 5e-5, no weight decay), "
                 "clipping at 1.0, batch 1, no checkpointing, labels = input_ids, SDPA attention"
                 + ("; LoRA r32 a64 rsLoRA with lm_head and embed_tokens trained in full" if lora else "") + ".")
    result.update({"resolved_profile": None, "precision": precision, "optimizer": "adamw (torch)",
                   "base_weights": "fp32", "lora_rank": 32 if lora else 0, "gradient_checkpointing": False,
                   "trainable_params": trainable, "model_params": params, "tokens": int(ids.shape[1]), "clips": 1,
                   "estimated_gib": round(found.total_gib, 3)})
    return result


def orpheus_lora(lm):
    """Orpheus's ``finetune/lora.py`` adapters on ``lm``: peft's LoRA r32, alpha 64, rsLoRA, on the seven
    projections, with ``lm_head`` and ``embed_tokens`` trained in full (peft's trainable copies)."""
    from peft import LoraConfig, get_peft_model

    return get_peft_model(lm, LoraConfig(
        r=32, lora_alpha=64, lora_dropout=0.0, bias="none", task_type="CAUSAL_LM", use_rslora=True,
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "down_proj", "up_proj"],
        modules_to_save=["lm_head", "embed_tokens"]))


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
    """In a child: describe the device and ask which profile auto would choose."""
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
    except Exception as exc:  # recorded in auto's record
        info.update(auto_profile=None, auto_reason=f"{type(exc).__name__}: {exc}")
    return info


def _child(opts: argparse.Namespace, *extra: str) -> list[str]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--device", opts.device, "--arch", opts.arch,
           "--clip-seconds", str(opts.clip_seconds), "--steps", str(opts.steps), "--warmup", str(opts.warmup),
           "--base", str(opts.base)]
    if opts.grad_accum:
        cmd += ["--grad-accum", str(opts.grad_accum)]
    return cmd + list(extra)


def run(opts: argparse.Namespace) -> Path:
    """The random base folder once, then every case in its own process."""
    if opts.base:
        if not (Path(opts.base) / "config.json").is_file():
            write_random_base(Path(opts.base), opts.arch)
        return run_cases(opts, _child, f"orpheus_memory_profiles_{opts.clip_seconds:g}s")
    with tempfile.TemporaryDirectory(prefix="orpheus_random_base_") as tmp:
        opts.base = str(write_random_base(Path(tmp) / "base", opts.arch))
        return run_cases(opts, _child, f"orpheus_memory_profiles_{opts.clip_seconds:g}s")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=DEFAULTS["steps"], help="timed optimizer steps per case")
    parser.add_argument("--warmup", type=int, default=DEFAULTS["warmup"], help="untimed steps first")
    parser.add_argument("--clip-seconds", type=float, default=DEFAULTS["clip_seconds"], help="the clip's length")
    parser.add_argument("--grad-accum", type=int, help="micro-batches per optimizer step (default: the profile's)")
    parser.add_argument("--profiles", default=",".join(CASES), help=f"comma-separated cases ({','.join(CASES)})")
    parser.add_argument("--base", default="", help="the random base folder (written when missing; default: a "
                                                   "temporary folder)")
    parser.add_argument("--write-base", action="store_true", help="only write the --base folder (when missing) "
                                                                  "and stop: the GPU kit does so during its tests")
    parser.add_argument("--out", help="JSON file (default benchmarks/results/orpheus_memory_profiles_<s>s_<date>_"
                                      "<device>.json)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--arch", choices=("orpheus_3b", "tiny"), default="orpheus_3b", help=argparse.SUPPRESS)
    parser.add_argument("--one", choices=CASES, help=argparse.SUPPRESS)  # internal: run one case, print its JSON
    parser.add_argument("--files", help=argparse.SUPPRESS)  # internal (run_cases passes it; unused here)
    parser.add_argument("--prepare", help=argparse.SUPPRESS)  # internal: describe the device
    opts = parser.parse_args(argv)
    opts.quick = False
    if opts.write_base and not opts.base:
        parser.error("--write-base needs --base (the folder to write)")
    choose_cases(parser, opts, CASES)
    check_steps(parser, opts, 30, "Orpheus-TTS")
    return opts


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    if opts.write_base:
        if not (Path(opts.base) / "config.json").is_file():
            write_random_base(Path(opts.base), opts.arch)
        print(f"random base ready in {opts.base}", flush=True)
        return 0
    return run_command(opts, prepare, run_case, run, preload=PRELOAD)


if __name__ == "__main__":
    sys.exit(main())
