"""Where an Orpheus-TTS micro-step's time goes when the card waits on the host, measured on the CPU: the operations
each profile and Orpheus's own settings dispatch per micro-step, and the host's seconds for them.

On the H200 (2026-11-27, ``results/orpheus_memory_profiles_10s_2026-11-27_gpu.json``) Medium (LoRA on a bf16 base)
took 0.39 s a micro-step and High (every weight, 8-bit AdamW) 0.24 s, each one 10 s clip (860 tokens) through 28
checkpointed layers. The card's arithmetic for such a micro-step is a small part of that (about 16 TFLOP for
Medium's forward, recomputation and backward, some 40 ms at 400 TFLOP/s), and Medium does less of it than High
(no weight gradients for the frozen base), yet it took longer: the step waited on the host, which dispatches
each operation. This benchmark counts them and times them:

* **operations per micro-step** (aten operations below autograd, ``profile_cases.op_counter``; on a card most
  launch a kernel), forward and backward of one clip under bf16 autocast with CUDA's rules, at the real width
  (hidden 3,072, MLP 8,192, 24 heads, 8 key/value heads) with 1 and 2 decoder layers: the count per layer, and
  what 28 layers make. The vocabulary is cut to 8,192 (the count does not depend on it); the clip's 860 tokens
  keep the loss's four 256-token chunks;
* **host seconds per micro-step**: the same micro-step at a width so small (96) that the arithmetic is nothing,
  with all 28 layers and 64 tokens, each case timed in turn (``--repeats`` rounds, the median), on one thread:
  the Python, autograd and dispatch the host does, which on a card comes before each kernel's launch.

Cases: ``high`` and ``medium`` as the engine trains them (``OrpheusLM``, ``add_lora``, ``set_checkpointing``);
``orpheus-full`` and ``orpheus-lora``, Orpheus's own settings as ``orpheus_memory_profiles.py`` runs them (fp32
weights under autocast, no checkpointing, transformers' own loss over every position; peft's LoRA r32 with both
vocabulary matrices trained in full), the baselines of Medium's speed goal. ``--non-reentrant`` adds the
engine's two cases with torch's non-reentrant checkpointing, which the engine used until 2026-11-27, for
comparison (``model.set_checkpointing``: reentrant since). Orpheus's own settings also step the optimizer after
every clip (batch 1, no accumulation), the profiles after eight; that is not in these figures. Low's 4-bit layers
run bitsandbytes' CPU code, which is not the card's, so Low is left out.

    python benchmarks/orpheus_host_overhead.py [--non-reentrant] [--out FILE]   # FILE: results/..._<date>_cpu.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from orpheus_memory_profiles import orpheus_lora  # noqa: E402
from profile_cases import op_counter  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
CASES = ("high", "medium", "orpheus-full", "orpheus-lora")
ENGINE_CASES = ("high", "medium")
BASELINE_CASES = ("orpheus-full", "orpheus-lora")
VOCAB = 8192
PROMPT = 40
NARROW = {"hidden_size": 96, "intermediate_size": 256, "num_attention_heads": 24, "num_key_value_heads": 8,
          "head_dim": 4}
# The H200's micro-steps (2026-11-27): each case's mean step over its 8 micro-steps (1 x 8, 10 s clips).
H200_MICRO_STEP_S = {"high": round(1.915 / 8, 3), "medium": round(3.11 / 8, 3)}


def build(case: str, layers: int, narrow: bool, reentrant: bool = True):
    """The model ``case`` trains, with random weights, ``layers`` decoder layers (real width unless ``narrow``)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from alltalk_gui.core.engines.orpheus.memory_estimate import ORPHEUS_3B_CONFIG
    from alltalk_gui.core.engines.orpheus.model import OrpheusLM, add_lora, set_checkpointing
    from alltalk_gui.core.engines.orpheus.tokens import SpecialTokens

    torch.manual_seed(0)
    config = dict(ORPHEUS_3B_CONFIG, num_hidden_layers=layers, vocab_size=VOCAB, bos_token_id=None,
                  eos_token_id=None, **(NARROW if narrow else {}))
    lm = LlamaForCausalLM(LlamaConfig(**config, attn_implementation="sdpa")).train()
    lm.config.use_cache = False
    if case in BASELINE_CASES:
        return orpheus_lora(lm) if case == "orpheus-lora" else lm
    lm = lm.to(torch.bfloat16)
    if case == "medium":
        add_lora(lm, 16, 32.0)
    set_checkpointing(lm, True, reentrant=reentrant)
    base = VOCAB - 1000
    special = SpecialTokens(*range(base, base + 7), end_of_text=base + 7, audio_base=100, codebook_size=10)
    return OrpheusLM(lm, special)


def micro_step(model, case: str, ids) -> None:
    """Forward and backward of one clip under bf16 autocast with CUDA's rules, as each case trains."""
    import torch

    from alltalk_gui.core.engines.orpheus.tokens import IGNORE
    from alltalk_gui.core.machine.cuda_autocast import cuda_autocast_rules

    mask = torch.ones_like(ids)
    with torch.autocast("cpu", dtype=torch.bfloat16), cuda_autocast_rules():
        if case in BASELINE_CASES:  # Orpheus's datasets: labels = input_ids, every position scored
            loss = model(input_ids=ids, attention_mask=mask, labels=ids).loss
        else:
            labels = ids.clone()
            labels[:, :PROMPT] = IGNORE
            loss = model(ids, mask, labels)["loss"]
    loss.backward()


def operations(case: str, tokens: int, reentrant: bool = True, narrow: bool = False) -> dict:
    """Operations of one micro-step at the real width (``narrow``: the timing's; the count is the same): with 1 and
    2 layers, per layer, and for Orpheus's 28."""
    import torch

    ids = torch.randint(0, VOCAB - 1000, (1, tokens), generator=torch.Generator().manual_seed(1))
    counts = []
    for layers in (1, 2):
        model = build(case, layers, narrow=narrow, reentrant=reentrant)
        micro_step(model, case, ids)  # warm-up: lazy initialisation is not a step's
        with op_counter() as count:
            micro_step(model, case, ids)
        counts.append(count)
        del model
    per_layer = counts[1].ops - counts[0].ops
    by_name = counts[1].names.copy()
    by_name.subtract(counts[0].names)
    return {"ops_1_layer": counts[0].ops, "ops_per_layer": per_layer, "ops_28_layers": counts[0].ops + 27 * per_layer,
            "per_layer_by_operation": dict(sorted(((k, v) for k, v in by_name.items() if v), key=lambda kv: -kv[1]))}


def host_seconds(cases: list[tuple[str, bool]], repeats: int) -> dict[str, dict]:
    """Each case's host seconds per micro-step at a width where the arithmetic is nothing, all 28 layers, timed in
    turn so that the machine's drift reaches every case alike."""
    import torch

    ids = torch.randint(0, VOCAB - 1000, (1, 64), generator=torch.Generator().manual_seed(1))
    models = {}
    for case, reentrant in cases:
        model = build(case, 28, narrow=True, reentrant=reentrant)
        for _ in range(3):
            micro_step(model, case, ids)
        models[(case, reentrant)] = model
    times: dict = {key: [] for key in models}
    for _ in range(repeats):
        for (case, reentrant), model in models.items():
            start = time.perf_counter()
            micro_step(model, case, ids)
            times[(case, reentrant)].append(time.perf_counter() - start)
    return {_name(case, reentrant): {"median_s": round(statistics.median(t), 4), "min_s": round(min(t), 4)}
            for (case, reentrant), t in times.items()}


def _name(case: str, reentrant: bool) -> str:
    return case if reentrant else f"{case} (non-reentrant checkpointing)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=860, help="the counted clip's tokens (860: 10 s)")
    parser.add_argument("--repeats", type=int, default=12)
    parser.add_argument("--non-reentrant", action="store_true", help="also the engine's cases with "
                                                                     "non-reentrant checkpointing (for comparison)")
    parser.add_argument("--out", default=str(RESULTS / f"orpheus_host_overhead_{date.today().isoformat()}_cpu.json"))
    opts = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    cases = [(case, True) for case in CASES] + ([(c, False) for c in ENGINE_CASES] if opts.non_reentrant else [])
    counted = {_name(case, reentrant): operations(case, opts.tokens, reentrant) for case, reentrant in cases}
    timed = host_seconds(cases, opts.repeats)
    result = {"date": date.today().isoformat(), "torch": torch.__version__, "threads": 1, "tokens": opts.tokens,
              "cases": {name: {**counted[name], "host": timed[name]} for name in counted},
              "h200_micro_step_s": H200_MICRO_STEP_S,
              "notes": ["ops: aten operations below autograd per micro-step (forward and backward of one clip, bf16 "
                        "autocast with CUDA's rules), real width, vocabulary 8,192; ops_28_layers = ops_1_layer + "
                        "27 x ops_per_layer.",
                        "host: seconds per micro-step at width 96 with 28 layers and 64 tokens on one thread, "
                        "where the arithmetic is negligible: the host's share of a micro-step.",
                        "Orpheus's own settings step fused AdamW after every clip; the profiles after 8 "
                        "(not counted here)."]}
    Path(opts.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for name, case in result["cases"].items():
        print(f"{name}: {case['ops_28_layers']:,} ops a micro-step ({case['ops_per_layer']} a layer), "
              f"host {case['host']['median_s']:.3f} s", flush=True)
    print(f"wrote {opts.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
