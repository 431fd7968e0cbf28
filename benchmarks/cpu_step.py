"""CPU step time of an engine's real-size model (random weights): batch 2, 6 s clips, fp32 (and bf16).

What ``resources/profiles/<engine>/cpu_speed.json`` (the CPU time estimate) is copied from.

XTTS v2 (``--engine xtts``): builds coqui's GPT with the published XTTS v2 architecture (30 layers, width 1024, 16 heads, 6681 text and 1026
audio tokens, perceiver resampler: 441 M parameters) and times full training steps the way our loop runs them
(accelerate with the given mixed precision, ``gpt_loss``, backward, gradient clipping, AdamW step). The inputs
are random but shaped like a real batch: 6 s of audio = 130 DVAE codes, a 6 s conditioning mel (517 frames),
~80 text tokens. The frozen DVAE/mel front end is not timed (it is small next to the GPT). About 11 GiB of RAM.

F5-TTS (``--engine f5``): builds CFM(DiT) with F5TTS_v1_Base's architecture (dim 1024, depth 22, 16 heads, ff x2,
text_dim 512, 4 ConvNeXt layers, 2,545 tokens: 337 M parameters) and times the engine's flow-matching loss,
backward, clipping and AdamW on 6 s clips at 24 kHz (563 mel frames of 100 bands, 14 characters a second).
About 7 GiB of RAM.

Orpheus-TTS (``--engine orpheus``): Orpheus 3B's width and vocabulary (hidden 3,072, 156,940 tokens) at depths 1
and 2, extrapolated to its 28 layers (:func:`measure_orpheus`); the engine's chunked loss, checkpointing, AdamW
over every weight. About 11 GiB of RAM in fp32.

Each precision runs in its own process so its peak RSS is its own.

    python benchmarks/cpu_step.py [--engine xtts|f5|orpheus] [--steps 3] [--precisions no,bf16] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The one description of the real architecture and of its random inputs.
from real_size import TEXT_TOKENS, XTTS_V2, gpt_inputs  # noqa: E402

from alltalk_gui.core.machine.gpu import cpu_name  # noqa: E402

F5_VOCAB_TOKENS = 2545  # F5TTS_v1_Base/vocab.txt
F5_CHARACTERS_PER_SECOND = 14


def measure_f5(precision: str, steps: int, batch: int, seconds: float, threads: int) -> dict:
    import torch

    from alltalk_gui.core.engines.f5.data import frames
    from alltalk_gui.core.engines.f5.files import V1_BASE_ARCH, build_cfm
    from alltalk_gui.core.engines.f5.model import loss as f5_loss

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    cfm = build_cfm(V1_BASE_ARCH, {str(i): i for i in range(F5_VOCAB_TOKENS)}).train()
    n, text_len = frames(seconds), int(seconds * F5_CHARACTERS_PER_SECOND)
    inputs = {"mel": torch.randn(batch, n, 100), "mel_lengths": torch.full((batch,), n),
              "text": torch.randint(0, F5_VOCAB_TOKENS, (batch, text_len)), "text_lengths": torch.full((batch,), text_len)}
    record = timed_steps(cfm, lambda model: f5_loss(model, inputs), precision, steps, lr=1e-5)
    return {"precision": precision, "parameters": record.pop("parameters"), "batch": batch, "clip_seconds": seconds,
            "mel_frames": n, "text_tokens": text_len, "threads": threads, **record}


ORPHEUS_PROMPT_TOKENS = 40
ORPHEUS_DEPTHS = (1, 2)  # measured; the real model's 28 layers are extrapolated from the difference


def measure_orpheus(precision: str, steps: int, batch: int, seconds: float, threads: int) -> dict:
    """Orpheus 3B's full fine-tune step, measured on its real width and vocabulary at depths 1 and 2 and extrapolated
    to its 28 decoder layers (the whole model's AdamW state alone is 26 GB: more than this machine holds). A layer
    costs the same wherever it sits, so step(28) = step(1) + 27 x (step(2) - step(1)); the first layer's share of
    step(1) also holds the embedding, the chunked loss over 156,940 tokens and AdamW over the 482 M-value embedding.
    ``precision`` names the weights: "no" fp32, "bf16" bf16 weights (what the High profile holds, and trains with
    on the CPU, where autocast is off)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from alltalk_gui.core.engines.orpheus.memory_estimate import ORPHEUS_3B_CONFIG, TOKENS_PER_SECOND
    from alltalk_gui.core.engines.orpheus.model import OrpheusLM, loss as orpheus_loss, set_checkpointing
    from alltalk_gui.core.engines.orpheus.tokens import IGNORE

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from orpheus_memory_profiles import random_batch, special_tokens

    torch.set_num_threads(threads)
    special = special_tokens(ORPHEUS_3B_CONFIG)
    batches = [random_batch(special, seconds, 128000, seed=i) for i in range(batch)]
    inputs = {k: torch.cat([b[k] for b in batches]) for k in batches[0]}
    per_depth = {}
    for depth in ORPHEUS_DEPTHS:
        torch.manual_seed(0)
        config = LlamaConfig(**dict(ORPHEUS_3B_CONFIG, num_hidden_layers=depth))
        lm = LlamaForCausalLM(config).to(torch.bfloat16 if precision == "bf16" else torch.float32)
        set_checkpointing(lm, True)  # every profile checkpoints
        model = OrpheusLM(lm, special).train()
        per_depth[depth] = timed_steps(model, lambda m: orpheus_loss(m, inputs)["loss"], "no", steps, lr=5e-5)
        del model, lm
    one, two = per_depth[1]["mean_step_s"], per_depth[2]["mean_step_s"]
    layers = ORPHEUS_3B_CONFIG["num_hidden_layers"]
    return {"precision": precision, "weights": "bf16" if precision == "bf16" else "fp32", "batch": batch,
            "clip_seconds": seconds, "tokens": int(inputs["input_ids"].shape[1]),
            "scored_tokens": int((inputs["labels"] != IGNORE).sum()), "threads": threads,
            "mean_step_s": round(one + (layers - 1) * (two - one), 2), "layer_step_s": round(two - one, 2),
            "depth_1": per_depth[1], "depth_2": per_depth[2], "tokens_per_second_of_audio": TOKENS_PER_SECOND}


def measure_xtts(precision: str, steps: int, batch: int, seconds: float, threads: int) -> dict:
    import torch
    from TTS.tts.configs.xtts_config import XttsArgs

    from alltalk_gui.core.engines.xtts.model import build_gpt_from_args, gpt_loss

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    args = XttsArgs(**XTTS_V2)
    gpt = build_gpt_from_args(args, number_text_tokens=TEXT_TOKENS, start_text_token=TEXT_TOKENS - 1,
                              stop_text_token=0).train()
    text_len = 80
    inputs = gpt_inputs(batch, seconds, text_len)
    record = timed_steps(gpt, lambda model: gpt_loss(model, inputs)["loss"], precision, steps, lr=5e-6)
    return {"precision": precision, "gpt_parameters": record.pop("parameters"), "batch": batch,
            "clip_seconds": seconds, "text_tokens": text_len, "audio_codes": inputs["audio_codes"].shape[1],
            "threads": threads, **record}


def timed_steps(model, loss_of, precision: str, steps: int, lr: float) -> dict:
    """``steps`` + 1 full training steps as our loop runs them (accelerate, the loss, backward, clipping at 1.0,
    AdamW); the first allocates the optimizer's state and warms up kernels, and is reported apart."""
    import torch
    from accelerate import Accelerator

    from alltalk_gui.core.machine.memory import peak_rss_gib

    parameters = sum(p.numel() for p in model.parameters())
    acc = Accelerator(mixed_precision=precision, cpu=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.96), weight_decay=1e-2)
    model, optimizer = acc.prepare(model, optimizer)
    times = []
    for _ in range(steps + 1):
        start = time.perf_counter()
        loss = loss_of(model)
        acc.backward(loss)
        acc.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - start)
        print(f"{precision}: step {len(times) - 1} took {times[-1]:.1f} s", file=sys.stderr, flush=True)
    return {"parameters": parameters, "warmup_step_s": round(times[0], 2), "step_s": [round(t, 2) for t in times[1:]],
            "mean_step_s": round(sum(times[1:]) / steps, 2), "peak_rss_gib": round(peak_rss_gib(), 2),
            "final_loss": float(loss.detach())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=("xtts", "f5", "orpheus"), default="xtts")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--precisions", default="no,bf16")
    parser.add_argument("--out", help="JSON file (default benchmarks/results/<engine>_cpu_step.json)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one precision, print JSON
    args = parser.parse_args()
    measure = {"f5": measure_f5, "orpheus": measure_orpheus}.get(args.engine, measure_xtts)
    if args.one:
        print(json.dumps(measure(args.one, args.steps, args.batch, args.seconds, args.threads)))
        return 0
    args.out = args.out or str(Path(__file__).parent / "results" / f"{args.engine}_cpu_step.json")
    import torch

    name = {"f5": "f5_tts_v1_base_cpu_training_step", "orpheus": "orpheus_3b_cpu_training_step"}.get(
        args.engine, "xtts_v2_gpt_cpu_training_step")
    report = {"benchmark": name, "date": date.today().isoformat(),
              "machine": {"cpu": cpu_name(), "cores": args.threads, "torch": torch.__version__,
                          "load_average_before": os.getloadavg()},
              "results": []}
    for precision in args.precisions.split(","):
        cmd = [sys.executable, __file__, "--engine", args.engine, "--one", precision, "--steps", str(args.steps),
               "--batch", str(args.batch),
               "--seconds", str(args.seconds), "--threads", str(args.threads)]
        # stderr passes through: per-step times show up while a slow precision is still running.
        out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True).stdout.strip().splitlines()[-1]
        report["results"].append(json.loads(out))
        print(out, flush=True)
        # Written after each precision, so a long run that is stopped still keeps what it measured.
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
