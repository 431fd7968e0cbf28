"""What streamlining the XTTS GPT for training saves (``alltalk_gui.core.engines.xtts.streamline``), on the CPU.

A card's training step waited on the host in every GPU run so far (the H100's and H200's micro-steps took about the
same time with 2 clips as with 8), and the host's work grows with the operations it dispatches. This benchmark
counts them, for the real-size GPT (random weights) as coqui builds it and as training runs it, per micro-step
(forward and backward of 2 clips), in fp32 and in bf16 under CUDA's autocast rules
(:mod:`alltalk_gui.core.machine.cuda_autocast`); it times the same micro-steps on this CPU; and it adds the memory
the activation calibration measured per clip and what the estimate makes of High at 8 clips per micro-batch.

    python benchmarks/xtts_streamline.py [--clip-seconds 2] [--out benchmarks/results/xtts_streamline_<date>_cpu.json]

The operation counts do not depend on the clip length (the clips' length changes the sizes, not the operations), so
short clips keep it to a few minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from profile_cases import op_counter  # noqa: E402
from real_size import TEXT_TOKENS, TEXT_TOKENS_PER_S, XTTS_V2, gpt_inputs  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def micro_step(streamlined: bool, precision: str, clip_s: float, repeats: int) -> dict:
    """Operations dispatched by one forward and backward of 2 clips, and the mean seconds of ``repeats`` more."""
    import contextlib

    import torch
    from TTS.tts.configs.xtts_config import XttsArgs

    from alltalk_gui.core.engines.xtts.model import build_gpt_from_args, gpt_loss
    from alltalk_gui.core.engines.xtts.streamline import streamline_for_training
    from alltalk_gui.core.machine.cuda_autocast import cuda_autocast_rules

    torch.manual_seed(0)
    gpt = build_gpt_from_args(XttsArgs(**{**XTTS_V2, "gpt_use_masking_gt_prompt_approach": True}),
                              number_text_tokens=TEXT_TOKENS, start_text_token=TEXT_TOKENS - 1, stop_text_token=0)
    if streamlined:
        streamline_for_training(gpt)
    gpt.train()
    inputs = gpt_inputs(2, clip_s, text_len=max(1, round(TEXT_TOKENS_PER_S * clip_s)))
    half = precision == "bf16"

    def forward():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=half), (
                cuda_autocast_rules() if half else contextlib.nullcontext()):
            return gpt_loss(gpt, inputs)["loss"]

    forward().backward()  # warm-up
    with op_counter() as count:
        loss = forward()
        forward_ops = count.ops
        loss.backward()
    start = time.perf_counter()
    for _ in range(repeats):
        forward().backward()
    return {"streamlined": streamlined, "precision": precision, "forward_ops": forward_ops,
            "backward_ops": count.ops - forward_ops, "ops": count.ops,
            "cpu_s": round((time.perf_counter() - start) / repeats, 4)}


def memory() -> dict:
    """Saved activations per 11 s clip (calibration, 16-bit) and High's estimate at 8 x 1, coqui's GPT and ours."""
    from alltalk_gui.core.engines.xtts.memory_estimate import _calibration, estimate
    from alltalk_gui.core.training.config import TrainConfig
    from alltalk_gui.core.training.profiles import load_profile

    fits = _calibration()["per_clip"]["16bit"]
    layers = XTTS_V2["gpt_layers"]

    def per_clip(part: dict, clip_s: float) -> float:
        return part["bytes_at_0s"] + part["bytes_per_s"] * clip_s

    high = TrainConfig(max_audio_seconds=11.0).with_values(
        {**load_profile("high").settings, "batch_size": 8, "grad_accum_steps": 1})
    out = {}
    for name, streamlined, parts in (("coqui", False, fits["coqui"]), ("streamlined", True, fits)):
        out[name] = {"blocks_mib_per_clip": round(layers * per_clip(parts["block"], 11.0) / 2**20, 1),
                     "conditioning_mib_per_clip": round(parts["conditioning_bytes"] / 2**20, 1),
                     "high_8x1_estimate_gib": estimate(high, streamlined=streamlined).total_gib}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clip-seconds", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=str(RESULTS / f"xtts_streamline_{date.today().isoformat()}_cpu.json"))
    opts = parser.parse_args(argv)
    import torch

    steps = [micro_step(s, p, opts.clip_seconds, opts.repeats) for p in ("fp32", "bf16") for s in (False, True)]
    result = {"date": date.today().isoformat(), "torch": torch.__version__, "threads": torch.get_num_threads(),
              "clip_s": opts.clip_seconds, "clips": 2, "micro_steps": steps, "memory": memory(),
              "notes": ["ops: aten operations dispatched below autograd (TorchDispatchMode), forward and backward "
                        "of one micro-step; each one the host dispatches, and on a card most launch a kernel.",
                        "cpu_s: this CPU's seconds per micro-step, its arithmetic nearly all of it (bf16: the CPU's "
                        "autocast with CUDA's rules): the counts, not the CPU's times, carry to a card.",
                        "memory: the activation calibration (resources/profiles/xtts/activation_calibration.json), "
                        "16-bit, 11 s clips, 6 s voice prompt; High's estimate with its own AdamW at 8 x 1."]}
    Path(opts.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
