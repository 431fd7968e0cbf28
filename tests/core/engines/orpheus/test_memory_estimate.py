"""Orpheus's memory estimate sees the base a run actually holds: one tied vocabulary matrix as Orpheus 3B is
published, two after a LoRA adapter that carries ``embed_tokens``/``lm_head`` in full (Orpheus's own LoRA script,
Unsloth when new tokens were trained) is merged into it.

* On the CPU with the tiny model: the estimate's weights, gradients and optimizer parts, for the tiny shape, are
  the bytes a run's model, its gradients after a step and AdamW's state hold (LoRA on a bf16 base, a full
  fine-tune in fp32 and bf16), on the tied base and on the base an adapter untied.
* At real size on the meta device: Orpheus 3B's tied and untied models differ by one 156,940 x 3,072 matrix
  (0.96 GB in bf16), which High trains (its weights, gradients and 8-bit AdamW state by one each); Low and Medium
  keep the frozen input embedding in host memory, so on the card they hold what they hold on the tied base, and
  Low stays under its 5 GiB target at 30 s.
* The engine's ``estimate_memory`` (what the profile picker, Auto and the run's memory.json ask) gives the untied
  estimate for a full-modules adapter chosen as the base, from the files before a run and from the model's count
  after it; nothing neutral knows why.
"""

from __future__ import annotations

import json

import pytest
import torch

from alltalk_gui.core.engine_api.engine import get_engine
from alltalk_gui.core.engines.orpheus import memory_estimate as m
from alltalk_gui.core.engines.orpheus.files import loaded_shape
from alltalk_gui.core.training.levers import make_optimizer
from tests.core.engines.orpheus.test_adapter_base import adapter, full_adapter, settings  # noqa: F401 (fixtures)
from tests.core.engines.orpheus.test_engine_training import orpheus_config

MATRIX = m.ORPHEUS_3B.embedding  # 156,940 x 3,072 values


def held_bytes(model, optimizer) -> dict[str, int]:
    """What a run holds: every distinct parameter, every gradient, every optimizer state tensor (AdamW's scalar
    step counters left out)."""
    params = list(model.parameters())  # a tied matrix once
    state = [t for s in optimizer.state.values() for t in s.values() if torch.is_tensor(t) and t.numel() > 1]
    return {"weights": sum(p.numel() * p.element_size() for p in params),
            "gradients": sum(p.grad.numel() * p.grad.element_size() for p in params if p.grad is not None),
            "optimizer": sum(t.numel() * t.element_size() for t in state)}


def one_step(config):
    """The engine's model for ``config`` after one optimizer step on one clip, and its optimizer."""
    engine = get_engine("orpheus")
    config.run_dir.mkdir(parents=True, exist_ok=True)
    setup = engine.training_setup(config, engine.load_clips(config), "cpu")
    optimizer = make_optimizer(setup.model, config)
    batch = setup.collate([setup.train_set[0]])
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=config.engine_options().base_weights == "bf16"):
        loss = setup.loss(setup.model, batch)["loss"]
    loss.backward()
    optimizer.step()
    return setup, optimizer


@pytest.mark.parametrize("weights, rank", [("bf16", 4), ("fp32", 0), ("bf16", 0)], ids=["lora", "full", "full-bf16"])
@pytest.mark.parametrize("base", ["tied", "full_adapter"])
def test_the_estimates_parts_are_the_bytes_a_run_holds(settings, project, tiny_orpheus, full_adapter, base,  # noqa: F811
                                                       weights, rank):
    folder = tiny_orpheus if base == "tied" else full_adapter
    config = orpheus_config(project, folder, "bytes", base_weights=weights, lora_rank=rank, lora_alpha=8.0,
                            batch_size=1)
    shape = loaded_shape(folder)
    assert shape.tied == (base == "tied")
    tiny = m.Shape.of(json.loads((tiny_orpheus / "config.json").read_text()))
    assert shape == (tiny if base == "tied" else tiny.untied())
    setup, optimizer = one_step(config)
    assert setup.parameters == shape.parameters  # the loop's count, which estimate_memory reads
    held = held_bytes(setup.model, optimizer)
    estimated = m.estimate(m.setting_for(config), shape)
    gib = m.GIB
    assert round(estimated.weights_gib * gib) == held["weights"]
    assert round(estimated.gradients_gib * gib) == held["gradients"]
    assert round(estimated.optimizer_gib * gib) == held["optimizer"]
    if base == "full_adapter":  # the same run on the tied base holds one matrix less of each part it trains
        tied = m.estimate(m.setting_for(config), tiny)
        one = shape.embedding * (2 if weights == "bf16" else 4)
        # LoRA: the untied input embedding, frozen, is held in host memory (model.HostEmbedding), not among the
        # parameters the loop places on the card: its weights there are the tied base's
        embedding = setup.model.lm.get_input_embeddings()
        host = embedding.weight.numel() * embedding.weight.element_size() if rank else 0
        assert host == m.on_host(m.setting_for(config), shape) * (2 if weights == "bf16" else 4)
        assert round((estimated.weights_gib - tied.weights_gib) * gib) == one - host
        assert round((estimated.gradients_gib - tied.gradients_gib) * gib) == (0 if rank else one)
        assert round((estimated.optimizer_gib - tied.optimizer_gib) * gib) == (0 if rank else 2 * one)


@pytest.fixture(scope="module")
def meta_models() -> dict[bool, torch.nn.Module]:
    """Orpheus 3B in bf16 on the meta device (nothing allocated), tied as published and not."""
    from transformers import LlamaConfig, LlamaForCausalLM

    with torch.device("meta"):
        return {tied: LlamaForCausalLM(LlamaConfig(**dict(m.ORPHEUS_3B_CONFIG, tie_word_embeddings=tied))).to(
            torch.bfloat16) for tied in (True, False)}


@pytest.mark.parametrize("profile", ["low", "medium", "high"])
def test_at_real_size_untied_holds_one_matrix_more_and_high_trains_it(meta_models, profile):
    from alltalk_gui.core.training.config import TrainConfig
    from alltalk_gui.core.training.profiles import apply_profile

    models = meta_models
    counts = {tied: sum(p.numel() for p in lm.parameters()) for tied, lm in models.items()}
    assert counts == {True: m.ORPHEUS_3B.parameters, False: m.ORPHEUS_3B.untied().parameters}
    bf16 = {tied: sum(p.numel() * p.element_size() for p in lm.parameters()) for tied, lm in models.items()}
    assert bf16[False] - bf16[True] == 2 * MATRIX == pytest.approx(0.964e9, rel=1e-3)  # 0.96 GB a matrix
    for tied in (True, False):  # the engine's way of telling them apart once a run has counted its model
        assert m.orpheus_3b_of_size(counts[tied]).tied is tied
    config = apply_profile(TrainConfig(engine="orpheus"), profile).with_values({"max_audio_seconds": 10.0})
    tied, untied = (m.estimate(m.setting_for(config), shape) for shape in (m.ORPHEUS_3B, m.ORPHEUS_3B.untied()))
    gib = m.GIB
    if profile == "high":
        assert round((untied.weights_gib - tied.weights_gib) * gib) == 2 * MATRIX  # bf16: never quantised  # trained: bf16 gradients, 8-bit AdamW's two moments and their block scales, and the
        # buffer its gradient from the loss is summed in (tied, the fused loss adds it straight into .grad)
        assert round((untied.gradients_gib - tied.gradients_gib) * gib) == 2 * MATRIX
        assert (untied.optimizer_gib - tied.optimizer_gib) * gib == pytest.approx(MATRIX * (2 + 8 / 256))
        assert tied.gradient_buffers_gib == 0 and untied.gradient_buffers_gib * gib == pytest.approx(2 * MATRIX,
                                                                                                    rel=0.01)
        assert untied.total_gib - tied.total_gib > 3.6  # 20.0 GiB: a 24 GB card; 23.7 GiB: no longer
    else:  # LoRA: the matrices stay frozen, and the untied input embedding in host memory (model.HostEmbedding):
        # on the card the untied model holds what the tied one does (before: one bf16 matrix more, 0.90 GiB)
        assert m.on_host(m.setting_for(config), m.ORPHEUS_3B.untied()) == MATRIX
        assert m.on_host(m.setting_for(config), m.ORPHEUS_3B) == 0
        assert untied == tied


@pytest.mark.parametrize("seconds", [10.0, 30.0])
def test_low_from_an_untied_base_fits_its_5_gib_target(seconds):
    """Low's target: at most 5 GiB, a 6 GB card. From an adapter that untied the model it came to 4.52 GiB at
    10 s and 5.06 GiB at 30 s with the untied input embedding on the card; in host memory, 3.59 and 4.13 (both
    with the estimate fitted to the H200's first run). Fitted to its second run (bf16 hidden states between a
    4-bit base's layers): 4.30 and 4.61 on the card, 3.37 and 3.68 in host memory, as for a tied base."""
    from alltalk_gui.core.training.config import TrainConfig
    from alltalk_gui.core.training.profiles import apply_profile

    config = apply_profile(TrainConfig(engine="orpheus"), "low").with_values({"max_audio_seconds": seconds})
    setting = m.setting_for(config)
    untied = m.estimate(setting, m.ORPHEUS_3B.untied())
    assert untied.total_gib < 5.0
    assert untied.total_gib == pytest.approx({10.0: 3.373, 30.0: 3.680}[seconds], abs=0.001)
    on_card = untied.total_gib + 2 * MATRIX / m.GIB * (1 + m.FRAGMENTATION)  # the bf16 matrix, and its 3 %
    assert on_card == pytest.approx({10.0: 4.298, 30.0: 4.605}[seconds], abs=0.001)


def test_the_engine_estimates_the_base_a_full_modules_adapter_leaves(settings, project, tiny_orpheus, adapter,  # noqa: F811
                                                                      full_adapter):
    """What the profile picker and Auto ask before a run (the files), and the loop after it (the model's count)."""
    engine = get_engine("orpheus")
    high = orpheus_config(project, full_adapter, "x", base_weights="bf16", lora_rank=0, optimizer="adamw8bit")
    untied = m.estimate(m.setting_for(high), m.ORPHEUS_3B.untied())
    tied = m.estimate(m.setting_for(high))
    assert engine.estimate_memory(high) == untied
    for folder in (tiny_orpheus, adapter, "", "/nowhere"):  # the published layout, a plain adapter, no base (yet)
        assert engine.estimate_memory(high.with_values({"base_model_dir": str(folder)})) == tied
    assert engine.estimate_memory(high, parameters=m.ORPHEUS_3B.untied().parameters) == untied
    # the model decides where it was counted: a merge whose matrices were equal is tied again
    assert engine.estimate_memory(high, parameters=m.ORPHEUS_3B.parameters) == tied
    tiny = m.Shape.of(json.loads((tiny_orpheus / "config.json").read_text()))
    assert engine.estimate_memory(high, parameters=tiny.untied().parameters) is None  # not the size it describes
    disk = {folder: engine.disk_needs(high.with_values({"base_model_dir": str(folder)}))
            for folder in (tiny_orpheus, full_adapter)}
    per_value = 2 + 2  # a bf16 weight and 8-bit AdamW's two moments
    assert disk[full_adapter].checkpoint_bytes - disk[tiny_orpheus].checkpoint_bytes == tiny.embedding * per_value
    assert disk[full_adapter].export_bytes - disk[tiny_orpheus].export_bytes == tiny.embedding * 2


def test_the_shape_is_read_without_torch(settings, full_adapter):  # noqa: F811
    """The Train page asks for estimates on its GUI thread: the adapter's header is read without safetensors'
    loader (which imports torch), and gives what safetensors gives."""
    import subprocess
    import sys

    from safetensors import safe_open

    from alltalk_gui.core.engines.orpheus.adapter import ADAPTER_WEIGHTS, header_shapes

    code = ("import sys; from alltalk_gui.core.engines.orpheus.files import loaded_shape; "
            f"s = loaded_shape({str(full_adapter)!r}); print(s.tied, 'torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"], done.stderr[-2000:]
    with safe_open(str(full_adapter / ADAPTER_WEIGHTS), framework="pt") as f:
        assert header_shapes(full_adapter / ADAPTER_WEIGHTS) == {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}


def test_fp32_weights_under_autocast_save_bf16_copies_of_every_projection(monkeypatch):
    """What :func:`memory_estimate.autocast_copies` counts (Orpheus's own settings were 14 % under without it): a
    layer of fp32 weights under bf16 autocast saves, for backward, a bf16 copy of each projection beside its
    activations, new memory; a layer of bf16 weights saves the weights themselves. Counted as the calibration
    counts, on a narrow Llama of Orpheus's kind (its own width: 0.2 GB a layer, in the docstring)."""
    narrow = dict(m.ORPHEUS_3B_CONFIG, hidden_size=256, intermediate_size=512, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=64)
    monkeypatch.setattr(m, "ORPHEUS_3B_CONFIG", narrow)
    copies = 2 * m.Shape.of(narrow).layer_linear

    def new_per_layer(precision: str) -> int:
        return (m.saved_tensor_bytes(8, 2, precision, False, False, new_only=True)
                - m.saved_tensor_bytes(8, 1, precision, False, False, new_only=True))

    activations = new_per_layer("bf16_base")
    assert 0 < activations < copies / 4
    assert copies < new_per_layer("bf16") <= copies + 3 * activations  # fp32 hidden states: up to twice bf16's
    fp32_lora = m.estimate(m.OrpheusSetting(base_weights="fp32", gradient_checkpointing=False, lora_rank=32,
                                            embeddings_in_full=True, chunked_loss=False, max_clip_seconds=10.0))
    assert m.autocast_copies(m.OrpheusSetting(base_weights="bf16"), m.ORPHEUS_3B) == (0.0, 0.0)
    layer_copies, output_copy = m.autocast_copies(m.OrpheusSetting(base_weights="fp32", lora_rank=32), m.ORPHEUS_3B)
    assert fp32_lora.activations_gib * m.GIB > 28 * layer_copies + output_copy > 6 * m.GIB
