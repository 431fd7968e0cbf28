"""The tied vocabulary matrix's gradient without matrix-sized buffers (``tied_gradient``): the embedding lookup's
rows are added where the loss's gradient went - straight into ``.grad`` in a process of its own, into the buffer
the loss handed on under torch.distributed - exactly as torch's lookup backward would have added its dense gradient
(fp32 sums per id, the padding row left out); the engine's full fine-tune learns the same through gradient
accumulation either way, in fp32 and under bf16 autocast; only a trained, tied matrix takes the path; and at
Orpheus's vocabulary no matrix-sized buffer lives beside ``.grad`` in the backward pass (one handed on, two with
torch's lookup; counted with the CPU allocator's events by ``benchmarks/orpheus_embedding_gradient_transient.py``)."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from alltalk_gui.core.engines.orpheus.files import special_tokens
from alltalk_gui.core.engines.orpheus.model import OrpheusLM, add_lora, load_lm, loss
from alltalk_gui.core.engines.orpheus.tied_gradient import SharedGradient, add_rows_, tied_lookup
from tests.benchmarks.scripts import load_script
from tests.core.engines.orpheus.test_model import make_batch

BENCHMARK = load_script("orpheus_embedding_gradient_transient.py")
TORCHS, DIRECT, HANDED = "torch's lookup", "direct", "handed on"


@pytest.fixture(scope="module")
def special(tiny_orpheus):
    return special_tokens(tiny_orpheus)


def lookup_gradient(ids, weight, incoming, padding_idx, way: str, earlier):
    """The weight's ``.grad`` after an embedding lookup of ``ids`` gets the incoming gradient ``incoming``, where
    ``earlier`` is the gradient the matrix already had from the loss (or an earlier micro-batch)."""
    weight = weight.detach().clone().requires_grad_()
    if way == TORCHS:
        weight.grad = earlier.clone()  # autograd adds the lookup's dense gradient into it
        nn.functional.embedding(ids, weight, padding_idx).backward(incoming)
    elif way == DIRECT:
        weight.grad = earlier.clone()
        tied_lookup(ids, weight, SharedGradient(weight, direct=True), padding_idx).backward(incoming)
    else:
        passer = SharedGradient(weight, direct=False)
        passer.loss_done(earlier.clone())
        tied_lookup(ids, weight, passer, padding_idx).backward(incoming)
    return weight.grad


@pytest.mark.parametrize("way", [DIRECT, HANDED])
@pytest.mark.parametrize("padding_idx", [None, 3])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_the_rows_are_added_as_torchs_lookup_backward_adds_them(dtype, padding_idx, way):
    generator = torch.Generator().manual_seed(0)
    weight = torch.randn(40, 8, generator=generator).to(dtype)
    ids = torch.tensor([[0, 5, 3, 5, 39, 0, 5], [3, 7, 7, 1, 0, 39, 2]])  # repeats, the first and last row, padding
    incoming = torch.randn(2, 7, 8, generator=generator).to(dtype)
    earlier = torch.randn(40, 8, generator=generator).to(dtype)
    for start in (torch.zeros_like(earlier), earlier):
        got = lookup_gradient(ids, weight, incoming, padding_idx, way, start)
        want = lookup_gradient(ids, weight, incoming, padding_idx, TORCHS, start)
        assert got.dtype == want.dtype == dtype
        tolerance = {"rtol": 1e-6, "atol": 1e-6} if dtype == torch.float32 else {"rtol": 8e-3, "atol": 1e-2}
        torch.testing.assert_close(got, want, **tolerance)
    if padding_idx is not None:
        got = lookup_gradient(ids, weight, incoming, padding_idx, way, torch.zeros_like(earlier))
        assert (got[padding_idx] == 0).all()


def test_add_rows_sums_each_id_once_in_fp32_before_adding():
    """Thirty rows of 1/512 added one at a time to a bf16 1.0 would each round away (a quarter of bf16's step at
    1.0); torch's lookup backward sums them in fp32 first, rounds the sum to bf16 and adds it once: so does
    add_rows_."""
    matrix = torch.ones(4, 2, dtype=torch.bfloat16)
    rows = torch.full((30, 2), 1 / 512, dtype=torch.bfloat16)
    add_rows_(matrix, torch.full((30,), 2), rows)
    once = torch.tensor(1.0, dtype=torch.bfloat16) + torch.tensor(30 / 512, dtype=torch.bfloat16)
    assert once > 1 and matrix[2].tolist() == [once.item()] * 2 and (matrix[[0, 1, 3]] == 1).all()


def _train(model, batches, autocast: bool):
    for batch in batches:  # gradient accumulation: the second micro-batch adds into an existing .grad
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            out = loss(model, batch)
        out["loss"].backward()
    return {name: p.grad for name, p in model.named_parameters() if p.requires_grad}


@pytest.mark.parametrize("weights", ["fp32", "bf16"])
def test_a_full_fine_tune_gets_the_gradients_of_torchs_lookup(tiny_orpheus, special, weights):
    batches = [make_batch(special), {k: v.flip(0) for k, v in make_batch(special).items()}]
    autocast = weights == "bf16"
    results = {}
    for way, make in ((DIRECT, OrpheusLM), (HANDED, BENCHMARK.handed_model), (TORCHS, BENCHMARK.unshared_model)):
        model = make(load_lm(tiny_orpheus, weights), special, 16)
        assert model.lm.lm_head.weight is model.lm.get_input_embeddings().weight  # tied
        results[way] = _train(model, batches, autocast)
    want = results[TORCHS]
    tolerance = {"rtol": 1e-5, "atol": 1e-7} if weights == "fp32" else {"rtol": 2e-2, "atol": 2e-3}
    for way in (DIRECT, HANDED):
        got = results[way]
        assert got.keys() == want.keys() and len(got) > 10
        for name in want:
            torch.testing.assert_close(got[name], want[name], **tolerance, msg=f"{way}: {name}")


def test_only_a_trained_tied_matrix_takes_the_path_and_distributed_runs_hand_it_on(tiny_orpheus, special,
                                                                                    monkeypatch):
    model = OrpheusLM(load_lm(tiny_orpheus, "fp32"), special)
    assert model._shared_gradient().direct  # this process trains alone
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: True)
    assert not model._shared_gradient().direct  # DDP and FSDP hear of a gradient through autograd
    monkeypatch.undo()
    with torch.no_grad():  # evaluation: no backward pass to carry anything to
        assert model._shared_gradient() is None
    add_lora(model.lm, 4, 8.0)  # the matrix frozen
    assert model._shared_gradient() is None
    untied = OrpheusLM(load_lm(tiny_orpheus, "fp32"), special)
    untied.lm.lm_head.weight = nn.Parameter(untied.lm.lm_head.weight.detach().clone())
    assert untied._shared_gradient() is None
    out = loss(untied, make_batch(special))
    out["loss"].backward()
    assert untied.lm.lm_head.weight.grad is not None and untied.lm.get_input_embeddings().weight.grad is not None


@pytest.mark.parametrize("kind, first, accumulating", [("fused", 1, 0), ("handed", 1, 1), ("unshared", 2, 2)])
def test_matrix_sized_gradient_buffers_live_at_once(capsys, kind, first, accumulating):
    """At Orpheus's 156,940-token vocabulary (a narrow hidden size, so the matrix is 19 MiB, and no other tensor
    of the run has its size: 39 scored tokens make 23 MiB of bf16 logits), bf16, checkpointing, two micro-batches:
    the first makes ``.grad`` (one matrix, which every way needs), the second accumulates into it. The counts do
    not depend on the width; the width costs time (a bf16 matmul on the CPU: 130 s a case at hidden 192)."""
    assert BENCHMARK.main(["--hidden", "64", "--tokens", "80", "--micro-batches", "2", "--loss", kind]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    micro_batches, summary = rows[:-1], rows[-1]
    assert summary["loss"] == kind and len(micro_batches) == 2
    assert [m["most_embedding_sized_buffers_live"] for m in micro_batches] == [first, accumulating]
