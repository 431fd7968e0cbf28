"""Orpheus's tied vocabulary matrix on the card (``engines/orpheus/tied_gradient.py``; its CPU tests are
``tests/core/engines/orpheus/test_tied_gradient.py``): in a full bf16 fine-tune with gradient accumulation, the
loss and the embedding lookup that add their gradients straight into ``.grad`` (one process) or through one
handed-on buffer (torch.distributed's way) give the gradients torch's lookup gives (CUDA's ``index_add_`` sums with
atomics, so to bf16's precision); in the accumulating micro-batch no matrix-sized buffer is made (direct), one
(handed on) or two (torch's lookup), counted in the card allocator's own trace as the CPU test counts them in the
CPU allocator's events: the buffers the High profile's estimate no longer counts.

The peak says less: on the H200 (2026-11-27) the direct way's accumulating micro-batch peaked 0.99 matrix below
torch's, not the 1.8 this test first asked. At this narrow width one chunk of logits (256 x 156,940 in fp32, 2.7
matrices) sets the peak, and while it lives torch's way holds one matrix (the loss's summed gradient), not two;
its second matrix comes after the last chunk, when the peak is past. So the peak is asked for one matrix less
(0.8, for the allocator's rounding), and the count for the rest."""

from __future__ import annotations

import torch

from alltalk_gui.core.engines.orpheus.memory_estimate import ORPHEUS_3B_CONFIG
from alltalk_gui.core.engines.orpheus.model import OrpheusLM, set_checkpointing
from alltalk_gui.core.engines.orpheus.tokens import IGNORE, SpecialTokens
from tests.benchmarks.scripts import load_script

BENCHMARK = load_script("orpheus_embedding_gradient_transient.py")
SPECIAL = SpecialTokens(128257, 128258, 128259, 128260, 128261, 128262, 128263, end_of_text=128009,
                        audio_base=128266, codebook_size=4096)


def _narrow_orpheus():
    """One decoder layer 192 wide, Orpheus's 156,940-token vocabulary (a 57 MiB bf16 matrix), tied, on the card."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = dict(ORPHEUS_3B_CONFIG, hidden_size=192, intermediate_size=384, num_hidden_layers=1,
                  num_attention_heads=1, num_key_value_heads=1, head_dim=128)
    lm = LlamaForCausalLM(LlamaConfig(**config)).to(torch.bfloat16).cuda().train()
    lm.config._attn_implementation = "sdpa"
    set_checkpointing(lm, True)
    return lm


def most_live(trace: list[dict], size: int) -> int:
    """The most blocks of exactly ``size`` bytes live at once in a CUDA allocator trace (``torch.cuda.memory.
    _snapshot()["device_traces"][device]``: ``alloc`` entries, and ``free_completed`` when a block is free again)."""
    live = most = 0
    for entry in trace:
        if entry["size"] == size and entry["action"] in ("alloc", "free_completed"):
            live += 1 if entry["action"] == "alloc" else -1
            most = max(most, live)
    return most


def _accumulate(make) -> tuple[list[int], list[int], dict[str, torch.Tensor], int]:
    """Over each of two micro-batches: the peak bytes above its start and the most matrix-sized buffers live at
    once; then the gradients, and the matrix's bytes."""
    model = make(_narrow_orpheus(), SPECIAL)
    matrix = model.lm.get_input_embeddings().weight
    unit = matrix.numel() * matrix.element_size()
    generator = torch.Generator().manual_seed(1)
    peaks, buffers = [], []
    for _ in range(2):
        ids = torch.randint(SPECIAL.audio_base, 156940, (1, 600), generator=generator).cuda()
        labels = ids.clone()
        labels[:, :40] = IGNORE
        torch.cuda.synchronize()
        start = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.memory._record_memory_history(max_entries=200_000, clear_history=True)
        try:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                out = model(ids, torch.ones_like(ids), labels)
            out["loss"].backward()
            torch.cuda.synchronize()
            trace = torch.cuda.memory._snapshot()["device_traces"][torch.cuda.current_device()]
        finally:
            torch.cuda.memory._record_memory_history(enabled=None)
        peaks.append(torch.cuda.max_memory_allocated() - start)
        buffers.append(most_live(trace, unit))
        del out
    grads = {name: p.grad.float().cpu() for name, p in model.named_parameters() if p.requires_grad}
    return peaks, buffers, grads, unit


def test_the_matrix_gradient_without_buffers_gives_torchs_gradients_and_a_lower_peak_on_the_card():
    results = {}
    for way, make in (("direct", OrpheusLM), ("handed", BENCHMARK.handed_model),
                      ("torch", BENCHMARK.unshared_model)):
        results[way] = _accumulate(make)
        torch.cuda.empty_cache()
    apart_peaks, apart_buffers, apart, matrix = results["torch"]
    # The second micro-batch accumulates into an existing .grad, as every profile's steps do.
    assert apart_buffers[1] >= 2, apart_buffers  # the lookup's dense gradient beside the loss's
    # The handed-on way holds the loss's buffer through the chunks as torch's does: its peak is no higher.
    for way, most, lower in (("direct", 0, 0.8), ("handed", 1, -0.1)):
        peaks, buffers, grads, _ = results[way]
        assert grads.keys() == apart.keys()
        for name in apart:
            torch.testing.assert_close(grads[name], apart[name], rtol=2e-2,
                                       atol=2e-3 * apart[name].abs().max().item(), msg=f"{way}: {name}")
        assert buffers[1] <= most, (way, buffers, apart_buffers)
        assert apart_peaks[1] - peaks[1] >= lower * matrix, (way, peaks, apart_peaks, matrix)
