"""A LoRA run on a base an adapter untied (``embed_tokens``/``lm_head`` carried in full) keeps the frozen input
embedding in host memory and looks its rows up there (``model.keep_embedding_on_host``): on a card, 0.90 GiB less
at Orpheus 3B's size. On the CPU the same code runs (host and device are one): the real loop's losses equal those
of the unchanged model's (the embedding an ``nn.Embedding`` among the parameters), Low's 4-bit base included; the
model's parameters drop by exactly that matrix; a tied base keeps its one matrix where the output projection is."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from alltalk_gui.core.engine_api.engine import get_engine
from alltalk_gui.core.engines.orpheus import model as orpheus_model
from alltalk_gui.core.engines.orpheus.files import special_tokens, validate_base_model
from alltalk_gui.core.engines.orpheus.model import (
    HostEmbedding, OrpheusLM, add_lora, keep_embedding_on_host, load_model,
)
from alltalk_gui.core.training.events import Step
from tests.core.engines.orpheus.test_adapter_base import full_adapter, settings  # noqa: F401 (fixtures)
from tests.core.engines.orpheus.test_engine_training import orpheus_config, run

STEPS = 3


def step_losses(project, base, name: str, steps: int = STEPS, **settings) -> list[tuple[float, dict, float]]:
    events = run(orpheus_config(project, base, name, max_steps=steps, lora_rank=4, lora_alpha=8.0, **settings))
    assert events[-1].reason == "max_steps", events[-3:]
    return [(e.loss, e.parts, e.grad_norm) for e in events if isinstance(e, Step)]


@pytest.mark.parametrize("weights", ["fp32", "nf4"])
def test_the_loop_trains_as_with_the_embedding_on_the_device(settings, project, full_adapter, monkeypatch,  # noqa: F811
                                                             weights):
    # The clips' SNAC codes first: a run that encodes them draws from the random generator before the adapters
    # are drawn, and one that reads them from the project's cache does not.
    step_losses(project, full_adapter, "codes", steps=1)
    held = step_losses(project, full_adapter, f"host_{weights}", base_weights=weights)
    with monkeypatch.context() as patch:  # the model as it was: the embedding a parameter beside the others
        patch.setattr(orpheus_model, "keep_embedding_on_host", lambda lm: False)
        plain = step_losses(project, full_adapter, f"plain_{weights}", base_weights=weights)
    assert len(held) == len(plain) == STEPS
    for (loss, parts, norm), (loss0, parts0, norm0) in zip(held, plain):
        assert loss == pytest.approx(loss0, abs=1e-5, rel=0)
        assert parts == pytest.approx(parts0, abs=1e-5, rel=0)
        assert norm == pytest.approx(norm0, abs=1e-5, rel=1e-5)
    assert held[-1][0] != held[0][0]  # it trained


def test_the_model_holds_one_matrix_less_among_its_parameters(settings, project, full_adapter):  # noqa: F811
    engine = get_engine("orpheus")
    config = orpheus_config(project, full_adapter, "parameters", lora_rank=4, lora_alpha=8.0)
    config.run_dir.mkdir(parents=True, exist_ok=True)
    setup = engine.training_setup(config, engine.load_clips(config), "cpu")
    lm = setup.model.lm
    embedding = lm.get_input_embeddings()
    assert isinstance(embedding, HostEmbedding) and not embedding.weight.requires_grad
    assert lm.get_output_embeddings().weight is not embedding.weight
    in_parameters = sum(p.numel() for p in setup.model.parameters())
    matrix = embedding.weight.numel()
    # The loop's count, which the estimate reads, is still the untied model's (the tied base's and one matrix)
    assert setup.parameters == validate_base_model(full_adapter).parameters + matrix
    lora = sum(p.numel() for n, p in setup.model.named_parameters() if "lora_" in n)
    assert in_parameters == setup.parameters + lora - matrix
    assert not any(embedding.weight is p for p in setup.model.parameters())
    assert not [k for k in setup.model.state_dict() if "embed_tokens" in k]
    moved = setup.model.to(torch.float64)  # Module.to (accelerate's placement) leaves the host matrix as it is
    assert moved.lm.get_input_embeddings().weight is embedding.weight


def test_the_lookup_gives_the_embeddings_rows_and_a_tied_matrix_stays(tiny_orpheus, full_adapter):  # noqa: F811
    lm = load_model(validate_base_model(full_adapter), "fp32")
    add_lora(lm, 4, 8.0)
    before = lm.get_input_embeddings()
    ids = torch.tensor([[3, 7, 7, 11], [0, 1, 2, 3]])
    expected = before(ids)
    assert keep_embedding_on_host(lm) and keep_embedding_on_host(lm)  # once
    after = lm.get_input_embeddings()
    assert after.weight.data_ptr() == before.weight.data_ptr()  # on the CPU the same storage: no copy
    assert torch.equal(after(ids), expected)
    tied = load_model(validate_base_model(tiny_orpheus), "fp32")
    add_lora(tied, 4, 8.0)
    assert not keep_embedding_on_host(tied) and type(tied.get_input_embeddings()) is nn.Embedding
    model = OrpheusLM(lm, special_tokens(tiny_orpheus))
    assert model._shared_gradient() is None  # frozen: no gradient of the matrix to share
