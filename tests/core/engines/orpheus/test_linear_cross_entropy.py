"""Orpheus's chunked linear cross-entropy (``linear_cross_entropy``) against the loss it replaced (each chunk of
the projection checkpointed apart: ``benchmarks/orpheus_embedding_gradient_transient.checkpointed_token_losses``),
on the tiny Orpheus's own hidden states and vocabulary matrix: the same per-token losses and the same gradients of
the hidden states and the weight, in fp32 (to 1e-5) with several chunks and a ragged last one, and under bf16
autocast (to bf16's precision, in the same types); a frozen weight gets no gradient and no weight-sized tensor is
allocated for one; the engine's model, trained in full or with LoRA, gives the same loss parts and gradients as
with the old loss; bad shapes are refused."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from alltalk_gui.core.engines.orpheus.files import special_tokens
from alltalk_gui.core.engines.orpheus.linear_cross_entropy import linear_cross_entropy
from alltalk_gui.core.engines.orpheus.model import OrpheusLM, load_lm, loss
from alltalk_gui.core.engines.orpheus.tokens import IGNORE
from tests.benchmarks.scripts import load_script
from tests.core.engines.orpheus.test_model import add_learning_lora, make_batch

OLD = load_script("orpheus_embedding_gradient_transient.py")
CHUNK = 16


@pytest.fixture(scope="module")
def special(tiny_orpheus):
    return special_tokens(tiny_orpheus)


@pytest.fixture(scope="module")
def lm(tiny_orpheus):
    return load_lm(tiny_orpheus, "fp32")


@pytest.fixture(scope="module")
def inputs(lm, special):
    """51 scored tokens (three chunks of 16 and a ragged 3): the tiny model's final hidden states and targets."""
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(special.audio_base, lm.config.vocab_size, (1, 52), generator=generator)
    with torch.no_grad():
        hidden = lm.model(input_ids=ids, use_cache=False).last_hidden_state[0, :-1]
    return hidden, ids[0, 1:]


def losses_and_gradients(fn, lm, hidden, targets, *, dtype=torch.float32, train_weight=True, autocast=False):
    """Per-token losses and the gradients of the states and the weight, for random incoming gradients."""
    states = hidden.to(dtype).clone().requires_grad_()
    head = nn.Linear(lm.config.hidden_size, lm.config.vocab_size, bias=False, dtype=dtype)
    with torch.no_grad():
        head.weight.copy_(lm.lm_head.weight)
    head.weight.requires_grad_(train_weight)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        losses = fn(head, states, targets)
    incoming = torch.rand(losses.shape, generator=torch.Generator().manual_seed(1))
    (losses * incoming).sum().backward()
    return losses.detach(), states.grad, head.weight.grad


def new(head, states, targets):
    return linear_cross_entropy(states, head.weight, targets, CHUNK)


def old(head, states, targets):
    return OLD.checkpointed_token_losses(head, states, targets, CHUNK)


def test_the_losses_and_gradients_are_the_old_losses_in_fp32(lm, inputs):
    hidden, targets = inputs
    assert targets.numel() % CHUNK and targets.numel() > 2 * CHUNK  # several chunks, the last one ragged
    got, want = (losses_and_gradients(f, lm, hidden, targets) for f in (new, old))
    for a, b, what in zip(got, want, ("losses", "states' gradient", "weight's gradient")):
        assert a.dtype == b.dtype == torch.float32, what
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7, msg=what)
    assert got[2].abs().max() > 0 and got[1].abs().max() > 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32-weights", "bf16-weights"])
def test_under_bf16_autocast_it_matches_the_old_loss_in_the_same_types(lm, inputs, dtype):
    hidden, targets = inputs
    got, want = (losses_and_gradients(f, lm, hidden, targets, dtype=dtype, autocast=True) for f in (new, old))
    for a, b, what in zip(got, want, ("losses", "states' gradient", "weight's gradient")):
        assert a.dtype == b.dtype, what
        torch.testing.assert_close(a.float(), b.float(), rtol=1.6e-2, atol=2e-3 * b.float().abs().max().item(),
                                   msg=what)
    assert got[0].dtype == torch.float32 and got[1].dtype == got[2].dtype == dtype


def test_ignored_targets_score_nothing_and_send_no_gradient(lm, inputs):
    hidden, targets = inputs
    targets = targets.clone()
    targets[::5] = IGNORE
    got, want = (losses_and_gradients(f, lm, hidden, targets) for f in (new, old))
    assert (got[0][::5] == 0).all() and (got[1][::5] == 0).all()
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)


def test_a_frozen_weight_gets_no_gradient_and_none_is_allocated(lm, inputs):
    from torch.profiler import ProfilerActivity, profile

    hidden, targets = inputs
    weight_bytes = lm.lm_head.weight.numel() * 4
    assert CHUNK * lm.config.vocab_size * 4 < weight_bytes  # a chunk's logits are smaller than the matrix
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        _, states_grad, weight_grad = losses_and_gradients(new, lm, hidden, targets, train_weight=False)
    assert weight_grad is None and states_grad is not None
    allocations = [e.nbytes() for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    # The copy of the weight losses_and_gradients makes for its head is the only matrix-sized allocation.
    assert sum(n >= weight_bytes for n in allocations) == 1, sorted(allocations)[-4:]
    torch.testing.assert_close(states_grad, losses_and_gradients(old, lm, hidden, targets, train_weight=False)[1],
                               rtol=1e-5, atol=1e-7)


def test_bad_shapes_are_refused(lm, inputs):
    hidden, targets = inputs
    weight = lm.lm_head.weight
    with pytest.raises(ValueError, match="do not fit"):
        linear_cross_entropy(hidden, weight, targets[:-1], CHUNK)
    with pytest.raises(ValueError, match="do not fit"):
        linear_cross_entropy(hidden[:, :-1], weight, targets, CHUNK)
    with pytest.raises(ValueError, match="chunk"):
        linear_cross_entropy(hidden, weight, targets, 0)


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_the_engines_model_gives_the_old_loss_parts_and_gradients(tiny_orpheus, special, lora):
    """OrpheusLM through its loss: trained in full (the tied matrix gets the loss's and the lookup's gradients)
    and with LoRA (the matrix frozen: no gradient)."""
    batch = make_batch(special)
    results = []
    for make in (OrpheusLM, OLD.checkpointed_model):
        torch.manual_seed(0)
        model = make(load_lm(tiny_orpheus, "fp32"), special, CHUNK)
        if lora:
            add_learning_lora(model.lm)
        out = loss(model, batch)
        out["loss"].backward()
        results.append((out, {n: p.grad for n, p in model.named_parameters() if p.requires_grad}))
        assert (model.lm.lm_head.weight.grad is None) == lora
    (got, got_grads), (want, want_grads) = results
    for part in want:
        assert got[part].item() == pytest.approx(want[part].item(), rel=1e-5), part
    assert got_grads.keys() == want_grads.keys()
    for name in want_grads:
        torch.testing.assert_close(got_grads[name], want_grads[name], rtol=1e-5, atol=1e-7, msg=name)


def test_the_projection_must_be_a_plain_unbiased_linear(tiny_orpheus, special):
    model = OrpheusLM(load_lm(tiny_orpheus, "fp32"), special)
    model.lm.lm_head.bias = nn.Parameter(torch.zeros(model.lm.config.vocab_size))
    with pytest.raises(TypeError, match="unbiased nn.Linear"):
        loss(model, make_batch(special))
