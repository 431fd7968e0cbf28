"""Measure what autograd keeps for the backward pass of the real-size XTTS v2 GPT, per clip, by clip length.

This is the activation term of :mod:`alltalk_gui.core.engines.xtts.memory_estimate`. It runs one forward pass of the
real-size GPT (random weights, 441 M parameters) at batch 1 under ``torch.autograd.graph.saved_tensors_hooks``
and adds up the bytes of every distinct tensor saved for backward, sorted into: the GPT-2 blocks, the
conditioning encoder + perceiver, and the rest (embeddings, heads, losses). Weights and autocast's 16-bit copies
of weights are left out (the estimate counts them as weights). The count is the same on any device, except that
CPU attention saves its full score matrix where CUDA's fused kernels do not (counted apart), and that autocast
casts differently on each: 16-bit runs are counted under CUDA's autocast rules
(:mod:`alltalk_gui.core.machine.cuda_autocast`), since 16-bit training is for CUDA cards.

Activation checkpointing keeps only each block's input (plus one block's activations while it is recomputed):
that figure is the bytes of the hidden states each block is given, as they come (fp32 under autocast too: GPT-2's
residual stream adds each block's 16-bit output to fp32 hidden states; until 2026-11-27 this counted them at
2 bytes, which put Low's estimate 9 % under the H200's peak at 8 clips a micro-batch).

The GPT is measured as training runs it, after ``streamline_for_training`` (GELU in one kernel, fused attention in
the conditioning encoder), and as coqui builds it (``coqui``: what AllTalk's trainer and our runs measured before
2026-11-27 trained, which their tests compare against).

    python benchmarks/activation_calibration.py [--out resources/profiles/xtts/activation_calibration.json]

Needs about 4 GiB of RAM and a minute or two of CPU.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The one description of the real architecture and of a typical clip (text tokens per second, prompt length).
from real_size import CONDITIONING_S, TEXT_TOKENS, TEXT_TOKENS_PER_S, XTTS_V2  # noqa: E402

CLIP_SECONDS = (6.0, 11.6)
# Every GPT-2 block saves the same for a given sequence, so a few blocks measure the per-block figure exactly
# in a fraction of the memory; the estimate multiplies it by the real model's 30.
MEASURED_LAYERS = 3


def measure(precision: str, clip_s: float, streamlined: bool = True) -> dict:
    """What one clip of ``clip_s`` saves for backward, by part: the GPT as training runs it (``streamlined``) or as
    coqui builds it."""
    import contextlib

    import torch
    from TTS.tts.configs.xtts_config import XttsArgs

    from alltalk_gui.core.engines.xtts.model import build_gpt_from_args, gpt_loss
    from alltalk_gui.core.engines.xtts.streamline import streamline_for_training
    from alltalk_gui.core.machine.cuda_autocast import cuda_autocast_rules

    torch.manual_seed(0)
    gpt = build_gpt_from_args(XttsArgs(**{**XTTS_V2, "gpt_layers": MEASURED_LAYERS}), number_text_tokens=TEXT_TOKENS,
                              start_text_token=TEXT_TOKENS - 1, stop_text_token=0)
    if streamlined:
        streamline_for_training(gpt)
    gpt.train()
    blocks = list(gpt.gpt.h)
    region = {"name": "other"}

    def enter(name):
        return lambda *_: region.__setitem__("name", name)

    block_inputs = []

    def keep_input(_module, args):
        block_inputs.append(args[0].numel() * args[0].element_size())  # the hidden states, as checkpointing keeps them

    def leave(*_):
        region["name"] = "other"

    for block in blocks:
        block.register_forward_pre_hook(keep_input)
        block.register_forward_pre_hook(enter("blocks"))
        block.register_forward_hook(leave)
    for module in (gpt.conditioning_encoder, gpt.conditioning_perceiver):
        module.register_forward_pre_hook(enter("conditioning"))
        module.register_forward_hook(leave)

    param_ptrs = {p.untyped_storage().data_ptr() for p in gpt.parameters()}
    seen: set[int] = set()
    totals = {"blocks": 0, "attention": 0, "conditioning": 0, "other": 0}

    def is_weight_cast(t) -> bool:
        fn = t.grad_fn
        return fn is not None and type(fn).__name__ == "ToCopyBackward0" and any(
            nxt is not None and type(nxt).__name__ == "AccumulateGrad" for nxt, _ in fn.next_functions)

    def pack(t):
        storage = t.untyped_storage()
        ptr = storage.data_ptr()
        if ptr not in seen and ptr not in param_ptrs and not is_weight_cast(t):
            seen.add(ptr)
            where = region["name"]
            # Square (sequence x sequence) tensors in a block are attention scores and masks: CPU attention saves
            # them, CUDA's fused attention (flash / memory-efficient SDPA) does not.
            if where == "blocks" and t.dim() >= 3 and t.shape[-1] == t.shape[-2] > 64:
                where = "attention"
            totals[where] += storage.nbytes()
        return t

    samples = int(clip_s * 22050)
    text_len = int(TEXT_TOKENS_PER_S * clip_s)
    cond_samples = int(CONDITIONING_S * 22050)
    inputs = {
        "text_inputs": torch.randint(1, TEXT_TOKENS - 1, (1, text_len), dtype=torch.int32),
        "text_lengths": torch.full((1,), text_len, dtype=torch.long),
        "audio_codes": torch.randint(0, 1024, (1, samples // 1024 + 1)),
        "wav_lengths": torch.full((1,), samples, dtype=torch.long),
        "cond_mels": torch.randn(1, 1, 80, cond_samples // 256 + 1),
        "cond_idxs": torch.tensor([[0, min(samples, cond_samples)]]),
        "cond_lens": None,
    }
    dtype = {"fp32": None, "bf16": torch.bfloat16}[precision]
    # 16-bit training runs on CUDA cards: counted under CUDA's autocast rules (machine/cuda_autocast.py).
    rules = cuda_autocast_rules() if dtype is not None else contextlib.nullcontext()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with torch.autocast("cpu", dtype=dtype, enabled=dtype is not None), rules:
            gpt_loss(gpt, inputs)["loss"]
    # Sequence length through the blocks: conditioning latents + text + audio codes (+ start/stop tokens).
    seq = 32 + text_len + 2 + samples // 1024 + 1 + 2
    return {"precision": precision, "streamlined": streamlined, "clip_s": clip_s, "text_tokens": text_len, "sequence": seq,
            "block_bytes": totals["blocks"], "attention_bytes": totals["attention"], "conditioning_bytes": totals["conditioning"],
            "other_bytes": totals["other"], "block_input_bytes": sum(block_inputs),
            "layers": len(blocks)}


def _line(points: list[tuple[float, float]]) -> dict:
    (x0, y0), (x1, y1) = points[0], points[-1]
    slope = (y1 - y0) / (x1 - x0)
    return {"bytes_at_0s": round(y0 - slope * x0), "bytes_per_s": round(slope)}


def fit(rows: list[dict]) -> dict:
    """Per clip, as bytes = a + b * clip_s: one block's saved tensors without and with only its attention
    scores, one block's input (what checkpointing keeps), everything outside the blocks, and the conditioning
    front end (fixed 6 s prompt), per precision; and the block and the conditioning front end as coqui builds them
    (``coqui``). Attention grows with the square of the length: the straight
    line through 6 s and 11.6 s is exact at those lengths and errs high between them."""
    out = {}
    for precision, label in (("fp32", "fp32"), ("bf16", "16bit")):
        pts = sorted((r for r in rows if r["precision"] == precision and r["streamlined"]),
                     key=lambda r: r["clip_s"])
        coqui = sorted((r for r in rows if r["precision"] == precision and not r["streamlined"]),
                       key=lambda r: r["clip_s"])
        out[label] = {
            "block": _line([(r["clip_s"], r["block_bytes"] / r["layers"]) for r in pts]),
            "attention": _line([(r["clip_s"], r["attention_bytes"] / r["layers"]) for r in pts]),
            "block_input": _line([(r["clip_s"], r["block_input_bytes"] / r["layers"]) for r in pts]),
            "other": _line([(r["clip_s"], r["other_bytes"]) for r in pts]),
            "conditioning_bytes": pts[-1]["conditioning_bytes"],
        }
        if coqui:
            out[label]["coqui"] = {"block": _line([(r["clip_s"], r["block_bytes"] / r["layers"]) for r in coqui]),
                                   "conditioning_bytes": coqui[-1]["conditioning_bytes"]}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "resources" / "profiles"
                                             / "xtts" / "activation_calibration.json"))
    args = parser.parse_args()
    rows = [measure(p, s, streamlined) for streamlined in (True, False) for p in ("fp32", "bf16") for s in CLIP_SECONDS]
    result = {"date": date.today().isoformat(),
              "device": "cpu (saved-tensor bytes are device-independent; 16-bit counted under CUDA's autocast rules)",
              "measured_layers": MEASURED_LAYERS, "width": XTTS_V2["gpt_n_model_channels"],
              "conditioning_s": CONDITIONING_S, "text_tokens_per_s": TEXT_TOKENS_PER_S,
              "per_clip": fit(rows), "measurements": rows}
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result["per_clip"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
