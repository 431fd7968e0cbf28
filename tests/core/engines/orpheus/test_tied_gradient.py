"""The tied vocabulary matrix's one gradient buffer (``tied_gradient``): the embedding lookup's rows are added into
the loss's gradient in place, exactly as torch's lookup backward would have added its dense gradient (fp32 sums
per id, the padding row left out); the engine's full fine-tune learns the same through gradient accumulation, in
fp32 and under bf16 autocast; only a trained, tied matrix takes the path; and at Orpheus's vocabulary one
matrix-sized buffer lives at once in the backward pass instead of two (counted with the CPU allocator's events by
``benchmarks/orpheus_embedding_gradient_transient.py``)."""

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


@pytest.fixture(scope="module")
def special(tiny_orpheus):
    return special_tokens(tiny_orpheus)


def lookup_gradients(ids, weight, incoming, padding_idx, shared: bool, start=None):
    """The weight's gradient from an embedding lookup of ``ids`` (torch's, or the tied lookup handed ``start`` as
    the loss's gradient), for the incoming gradient ``incoming``; torch's is added to ``start`` as autograd does."""
    weight = weight.detach().clone().requires_grad_()
    if shared:
        passer = SharedGradient()
        if start is not None:
            passer.put(start.clone())
        out = tied_lookup(ids, weight, passer, padding_idx)
    else:
        out = nn.functional.embedding(ids, weight, padding_idx)
    out.backward(incoming)
    return weight.grad if shared or start is None else start + weight.grad


@pytest.mark.parametrize("padding_idx", [None, 3])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_the_rows_are_added_as_torchs_lookup_backward_adds_them(dtype, padding_idx):
    generator = torch.Generator().manual_seed(0)
    weight = torch.randn(40, 8, generator=generator).to(dtype)
    ids = torch.tensor([[0, 5, 3, 5, 39, 0, 5], [3, 7, 7, 1, 0, 39, 2]])  # repeats, the first and last row, padding
    incoming = torch.randn(2, 7, 8, generator=generator).to(dtype)
    start = torch.randn(40, 8, generator=generator).to(dtype)  # the loss's gradient, waiting
    for begin in (None, start):
        got = lookup_gradients(ids, weight, incoming, padding_idx, True, begin)
        want = lookup_gradients(ids, weight, incoming, padding_idx, False, begin)
        assert got.dtype == want.dtype == dtype
        tolerance = {"rtol": 1e-6, "atol": 1e-6} if dtype == torch.float32 else {"rtol": 8e-3, "atol": 1e-2}
        torch.testing.assert_close(got, want, **tolerance)
    if padding_idx is not None:
        assert (lookup_gradients(ids, weight, incoming, padding_idx, True)[padding_idx] == 0).all()


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
    results = []
    for make in (OrpheusLM, BENCHMARK.unshared_model):
        model = make(load_lm(tiny_orpheus, weights), special, 16)
        assert model.lm.lm_head.weight is model.lm.get_input_embeddings().weight  # tied
        results.append(_train(model, batches, autocast))
    got, want = results
    assert got.keys() == want.keys() and len(got) > 10
    tolerance = {"rtol": 1e-5, "atol": 1e-7} if weights == "fp32" else {"rtol": 2e-2, "atol": 2e-3}
    for name in want:
        torch.testing.assert_close(got[name], want[name], **tolerance, msg=name)


def test_only_a_trained_tied_matrix_takes_the_shared_path(tiny_orpheus, special):
    model = OrpheusLM(load_lm(tiny_orpheus, "fp32"), special)
    assert isinstance(model._shared_gradient(), SharedGradient)
    with torch.no_grad():  # evaluation: no backward pass to hand anything to
        assert model._shared_gradient() is None
    add_lora(model.lm, 4, 8.0)  # the matrix frozen
    assert model._shared_gradient() is None
    untied = OrpheusLM(load_lm(tiny_orpheus, "fp32"), special)
    untied.lm.lm_head.weight = nn.Parameter(untied.lm.lm_head.weight.detach().clone())
    assert untied._shared_gradient() is None
    out = loss(untied, make_batch(special))
    out["loss"].backward()
    assert untied.lm.lm_head.weight.grad is not None and untied.lm.get_input_embeddings().weight.grad is not None


@pytest.mark.parametrize("kind, buffers", [("fused", 1), ("unshared", 2)])
def test_one_matrix_sized_gradient_buffer_lives_at_once(capsys, kind, buffers):
    """At Orpheus's 156,940-token vocabulary (a narrow hidden size, so the matrix is 57 MiB, and no other tensor
    of the run has its size), bf16, checkpointing, two accumulated micro-batches."""
    assert BENCHMARK.main(["--hidden", "192", "--tokens", "300", "--micro-batches", "2", "--loss", kind]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    micro_batches, summary = rows[:-1], rows[-1]
    assert summary["loss"] == kind and len(micro_batches) == 2
    assert [m["most_embedding_sized_buffers_live"] for m in micro_batches] == [buffers, buffers]
