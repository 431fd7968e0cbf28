"""How many embedding-sized gradient buffers live at once while a full Orpheus fine-tune runs backward, on the CPU.

Orpheus's embedding is tied to its output projection: in a full fine-tune it gets a gradient from the embedding
lookup and from the loss. This runs micro-batches of the engine's own ``OrpheusLM`` on a Llama with Orpheus's
vocabulary (a narrower hidden size by default, so that the embedding dominates and the run is quick; ``--hidden
3072`` for the real width), bf16 weights, gradient accumulation as the High profile does (``.grad`` already there
from the second micro-batch), and follows the CPU allocator's live bytes with ``torch.profiler``
(``profile_memory=True``). It prints, for each micro-batch, the peak of live bytes above the weights and existing
gradients in units of the embedding's size, and what else was live then.

``--loss fused`` (the default) is the engine's loss and lookup in a process of its own (``linear_cross_entropy``
and ``tied_gradient``: the chunks' weight gradients and the lookup's rows added straight into ``.grad``);
``--loss handed`` the same as under torch.distributed (the loss's gradient handed to the lookup, which adds its
rows and returns it to autograd: one buffer); ``--loss unshared`` the same loss with torch's lookup, whose own
dense gradient autograd adds to the loss's (the engine until 2026-11-27's ``tied_gradient``); ``--loss
checkpointed`` the loss before both, kept here to compare with (:class:`CheckpointedOrpheusLM`: each chunk of the
projection checkpointed apart, one full-size weight gradient per chunk, which autograd sums out of place; the
H200 measurement of 2026-11-27 ran it).

    python benchmarks/orpheus_embedding_gradient_transient.py                # hidden 512
    flock /work/wt/.heavy.lock python benchmarks/orpheus_embedding_gradient_transient.py --hidden 3072 --tokens 600
"""

from __future__ import annotations

import argparse
import json

LOSSES = ("fused", "handed", "unshared", "checkpointed")


def checkpointed_token_losses(lm_head, states, wanted, chunk: int):
    """The loss before ``linear_cross_entropy`` (until 2026-11-27): each chunk's ``lm_head(states).float()`` and
    cross-entropy under non-reentrant activation checkpointing, recomputed in the backward pass."""
    import torch
    from torch import nn
    from torch.utils.checkpoint import checkpoint

    def chunk_losses(rows, targets):
        return nn.functional.cross_entropy(lm_head(rows).float(), targets, reduction="none")

    return torch.cat([checkpoint(chunk_losses, states[i:i + chunk], wanted[i:i + chunk], use_reentrant=False)
                      for i in range(0, wanted.numel(), chunk)])


def handed_model(lm, special, chunk: int | None = None):
    """An ``OrpheusLM`` whose tied matrix's gradient the loss hands to the lookup's backward, which returns it to
    autograd with its rows added (the engine's way under torch.distributed: one buffer beside ``.grad``)."""
    from alltalk_gui.core.engines.orpheus.model import CE_CHUNK, OrpheusLM
    from alltalk_gui.core.engines.orpheus.tied_gradient import SharedGradient

    class HandedOrpheusLM(OrpheusLM):
        def _shared_gradient(self):
            direct = super()._shared_gradient()
            return None if direct is None else SharedGradient(direct.weight, direct=False)

    return HandedOrpheusLM(lm, special, chunk or CE_CHUNK)


def unshared_model(lm, special, chunk: int | None = None):
    """An ``OrpheusLM`` whose tied matrix gets its two gradients apart, summed by autograd (the engine's model
    until ``tied_gradient``: torch's embedding lookup, the loss's gradient handed to autograd)."""
    from alltalk_gui.core.engines.orpheus.model import CE_CHUNK, OrpheusLM

    class UnsharedOrpheusLM(OrpheusLM):
        def _shared_gradient(self):
            return None

    return UnsharedOrpheusLM(lm, special, chunk or CE_CHUNK)


def checkpointed_model(lm, special, chunk: int | None = None):
    """An ``OrpheusLM`` whose token losses are :func:`checkpointed_token_losses`, its tied matrix's gradients
    summed by autograd (the engine's model before ``linear_cross_entropy``)."""
    from alltalk_gui.core.engines.orpheus.model import CE_CHUNK, OrpheusLM

    class CheckpointedOrpheusLM(OrpheusLM):
        def _shared_gradient(self):
            return None

        def token_losses(self, states, wanted, shared=None):
            return checkpointed_token_losses(self.lm.lm_head, states, wanted, self.chunk)

    return CheckpointedOrpheusLM(lm, special, chunk or CE_CHUNK)


def live_peak(prof, unit: int) -> tuple[int, int, int, int]:
    """Over a profile, from the CPU allocator's allocation and free events in order: the peak of live bytes, the
    live bytes at the end, the most buffers of exactly ``unit`` bytes live at once, those live at the peak, and the
    most live bytes while the most such buffers were (all relative to the start)."""
    # The raw events: prof.events() files an allocation under the operator that made it.
    events = sorted((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events() if e.name() == "[memory]")
    live = peak = units = most_units = units_at_peak = live_at_most = 0
    for _, nbytes in events:
        live += nbytes
        units += (nbytes == unit) - (nbytes == -unit)
        if units > most_units or (units == most_units and live > live_at_most):
            most_units, live_at_most = units, live
        if live > peak:
            peak, units_at_peak = live, units
    return peak, live, most_units, units_at_peak, live_at_most


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--tokens", type=int, default=860, help="sequence length (scored: all but the prompt)")
    parser.add_argument("--micro-batches", type=int, default=3)
    parser.add_argument("--tied", choices=("yes", "no"), default="yes",
                        help="no: an untied output projection (as peft's modules_to_save copies are)")
    parser.add_argument("--loss", choices=LOSSES, default="fused",
                        help="fused: the engine's loss and lookup in one process; handed: as under "
                             "torch.distributed; unshared: its loss, the tied matrix's gradients summed by autograd; "
                             "checkpointed: the loss before it (see the docstring)")
    opts = parser.parse_args(argv)

    import torch
    from torch.profiler import ProfilerActivity, profile
    from transformers import LlamaConfig, LlamaForCausalLM

    from alltalk_gui.core.engines.orpheus.memory_estimate import ORPHEUS_3B_CONFIG
    from alltalk_gui.core.engines.orpheus.model import OrpheusLM, set_checkpointing
    from alltalk_gui.core.engines.orpheus.tokens import IGNORE, SpecialTokens

    torch.manual_seed(0)
    heads = max(1, opts.hidden // 128)
    config = dict(ORPHEUS_3B_CONFIG, hidden_size=opts.hidden, intermediate_size=2 * opts.hidden, num_hidden_layers=1,
                  num_attention_heads=heads, num_key_value_heads=heads, head_dim=128,
                  tie_word_embeddings=opts.tied == "yes")
    lm = LlamaForCausalLM(LlamaConfig(**config)).to(torch.bfloat16).train()
    lm.config._attn_implementation = "sdpa"
    set_checkpointing(lm, True)
    special = SpecialTokens(128257, 128258, 128259, 128260, 128261, 128262, 128263, end_of_text=128009,
                            audio_base=128266, codebook_size=4096)
    model = {"fused": OrpheusLM, "handed": handed_model, "unshared": unshared_model,
             "checkpointed": checkpointed_model}[opts.loss](lm, special)
    embedding = lm.model.embed_tokens.weight
    unit = embedding.numel() * embedding.element_size()
    ids = torch.randint(128266, 156940, (1, opts.tokens))
    labels = ids.clone()
    labels[:, :40] = IGNORE
    mask = torch.ones_like(ids)
    rows = []
    for step in range(opts.micro_batches):
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            model(ids, mask, labels)["loss"].backward()
        peak, final, most, at_peak, with_most = live_peak(prof, unit)
        # Bytes are relative to the start of the micro-batch (weights, and gradients from earlier micro-batches,
        # were already live); ``final`` is what the micro-batch left live (its new .grad buffers).
        rows.append({"micro_batch": step + 1, "peak_above_start_in_embeddings": round(peak / unit, 3),
                     "left_live_in_embeddings": round(final / unit, 3),
                     "most_embedding_sized_buffers_live": most, "embedding_sized_buffers_at_peak": at_peak,
                     "live_with_most_embedding_sized_in_embeddings": round(with_most / unit, 3), "peak_above_start_mib": round(peak / 2**20, 1)})
        print(json.dumps(rows[-1]), flush=True)
    scored = opts.tokens - 40 - 1
    print(json.dumps({"hidden": opts.hidden, "vocab": config["vocab_size"], "tokens": opts.tokens,
                      "chunks": -(-scored // 256), "tied": opts.tied, "loss": opts.loss, "embedding_mib": round(unit / 2**20, 1),
                      "logits_chunk_fp32_mib": round(256 * config["vocab_size"] * 4 / 2**20, 1),
                      "torch": torch.__version__}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
