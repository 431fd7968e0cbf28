"""An Orpheus LoRA adapter folder made elsewhere (saved as Unsloth and peft save it: adapter_config.json naming a Hub
base, adapter_model.safetensors, the tokenizer) as the base model: checked against the base folder of the app
settings and merged in memory (fp32, bf16, and bf16-then-4-bit); a LoRA run and a full run start from the merge;
its checkpoints preview (the engine, and ``preview --model ADAPTER``) and export a merged model folder transformers
loads, whose README names the adapter and the base. Bad adapters are refused with their reason, nothing written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from alltalk_gui.core import app_settings
from alltalk_gui.core.engine_api.engine import BaseModelError, get_engine
from alltalk_gui.core.engines.orpheus.files import BASE_MODEL_SETTING, validate_base_model
from alltalk_gui.core.engines.orpheus.model import LORA_TARGETS, OrpheusLM, add_lora, load_model, loss
from alltalk_gui.core.training.checkpoints import read_checkpoint
from alltalk_gui.core.training.events import Log
from alltalk_gui.core.training.loop import latest_checkpoint, train
from alltalk_gui.core.voice.export import ExportError, ExportOptions, export_voice
from alltalk_gui.core.voice.preview import GenerationSettings, PreviewEngine, generate_ab
from tests.core.engines.orpheus.test_engine_training import orpheus_config

HUB_NAME = "unsloth/orpheus-3b-0.1-ft"   # what Unsloth's notebook writes as base_model_name_or_path
SHORT = {"max_seconds": 0.9}


def make_adapter(base: Path, out: Path, *, changes: dict | None = None, modules_to_save: list[str] | None = None,
                 targets=LORA_TARGETS, seed: int = 1) -> Path:
    """A LoRA adapter saved as peft (and Unsloth, which calls it) saves one, with Unsloth's Hub name of the base and
    the tokenizer beside it; its B matrices (and full modules) drawn, so that merging it changes the model.
    ``changes``: config values of another model to make it for (weights drawn, not loaded)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM, LlamaForCausalLM

    torch.manual_seed(seed)
    if changes:
        config = AutoConfig.from_pretrained(base)
        for key, value in changes.items():
            setattr(config, key, value)
        lm = LlamaForCausalLM(config)
    else:
        lm = AutoModelForCausalLM.from_pretrained(base)
    lora = LoraConfig(r=8, lora_alpha=16, target_modules=list(targets), modules_to_save=modules_to_save,
                      task_type="CAUSAL_LM")
    model = get_peft_model(lm, lora)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name or "modules_to_save" in name:
                parameter.add_(torch.randn_like(parameter) * 0.05)
    model.peft_config["default"].base_model_name_or_path = HUB_NAME
    model.save_pretrained(str(out), safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy2(base / name, out / name)
    return out


def tree(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` with its size and modification time: what "nothing written" compares."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


@pytest.fixture(scope="module")
def settings(tmp_path_factory, tiny_orpheus):
    """App settings whose Orpheus base-model folder is the tiny base (as download-base-model leaves them)."""
    patch = pytest.MonkeyPatch()
    patch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path_factory.mktemp("adapter_settings")))
    app_settings.set_value(BASE_MODEL_SETTING, str(tiny_orpheus))
    yield
    patch.undo()


@pytest.fixture(scope="module")
def adapter(tmp_path_factory, tiny_orpheus) -> Path:
    return make_adapter(tiny_orpheus, tmp_path_factory.mktemp("unsloth") / "lora_model")


@pytest.fixture(scope="module")
def full_adapter(tmp_path_factory, tiny_orpheus) -> Path:
    """Unsloth's adapter when new tokens were trained: embed_tokens and lm_head carried in full."""
    return make_adapter(tiny_orpheus, tmp_path_factory.mktemp("unsloth_full") / "lora_model",
                        modules_to_save=["embed_tokens", "lm_head"], seed=2)


def test_an_adapter_is_its_base_with_the_deltas_merged(settings, adapter, tiny_orpheus):
    before = tree(adapter), tree(tiny_orpheus)
    info = validate_base_model(adapter)
    assert info.folder == tiny_orpheus and info.adapter.folder == adapter and info.adapter.rank == 8
    assert len(info.adapter.modules) == 2 * len(LORA_TARGETS) and info.adapter.base_name == HUB_NAME
    said = get_engine("orpheus").describe_base_model(adapter)
    assert said.startswith(f"The LoRA adapter in {adapter} (rank 8, 14 modules; made for {HUB_NAME}) on the base "
                           f"model in {tiny_orpheus}, merged in memory when it loads: Llama with 2 layers")
    merged = load_model(info, "fp32")
    base = load_model(validate_base_model(tiny_orpheus), "fp32")
    saved = load_file(str(adapter / "adapter_model.safetensors"))
    key = "base_model.model.model.layers.1.mlp.down_proj"
    delta = 16 / 8 * saved[f"{key}.lora_B.weight"] @ saved[f"{key}.lora_A.weight"]  # alpha / r x B A
    torch.testing.assert_close(merged.model.layers[1].mlp.down_proj.weight,
                               base.model.layers[1].mlp.down_proj.weight + delta)
    assert torch.equal(merged.model.embed_tokens.weight, base.model.embed_tokens.weight)
    assert merged.lm_head.weight is merged.model.embed_tokens.weight and not hasattr(merged, "peft_config")
    assert (tree(adapter), tree(tiny_orpheus)) == before


def test_4bit_merges_in_bf16_then_quantises_and_takes_new_adapters(settings, adapter, tiny_orpheus, tmp_path):
    """Low's base from an adapter: the merged bf16 weights quantised exactly as transformers quantises a merged
    model folder on load (the same packed bytes); peft then puts its 4-bit LoRA layers on them, and the loss runs
    (the CPU twin of a 4-bit run on a card)."""
    import bitsandbytes as bnb

    from alltalk_gui.core.engines.orpheus.files import special_tokens
    from alltalk_gui.core.engines.orpheus.model import load_lm

    info = validate_base_model(adapter)
    load_model(info, "bf16").save_pretrained(str(tmp_path / "merged"))
    reference = load_lm(tmp_path / "merged", "nf4", "cpu")  # transformers' own quantisation of the merge
    quantised = load_model(info, "nf4", "cpu")
    assert type(quantised.lm_head) is torch.nn.Linear
    for name, module in reference.named_modules():
        if isinstance(module, bnb.nn.Linear4bit):
            ours = quantised.get_submodule(name)
            assert isinstance(ours, bnb.nn.Linear4bit) and torch.equal(ours.weight.data, module.weight.data), name
    add_lora(quantised, 4, 8.0)
    assert type(quantised.model.layers[0].self_attn.q_proj).__module__ == "peft.tuners.lora.bnb"
    model = OrpheusLM(quantised, special_tokens(tiny_orpheus))
    ids = torch.randint(0, 300, (1, 12))
    labels = ids.clone()
    labels[:, :6] = -100
    out = loss(model, {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels})
    out["loss"].backward()
    assert torch.isfinite(out["loss"]) and any(p.grad is not None for n, p in model.named_parameters() if "lora_" in n)


def test_lows_merge_writes_each_layer_anew_and_never_the_mapped_base(settings, adapter, tiny_orpheus):
    """Low's merge goes a layer at a time (``merge_lora(then=nf4_linear)``): each merged weight is a tensor of its
    own, read from the base's and handed on, and the base's weight (mapped from its safetensors file) is never
    written. Written in place, its pages became private copies that lived as long as the file's mapping: 7.6 GiB
    held for Orpheus 3B's 2.2 GiB of 4-bit weights on the CPU (``benchmarks/orpheus_adapter_merge.py``)."""
    from peft import PeftModel

    from alltalk_gui.core.engines.orpheus.model import load_lm, merge_lora

    lm = load_lm(tiny_orpheus, "bf16")
    base = lm.model.layers[0].self_attn.q_proj.weight.detach()
    kept = base.clone()
    handed = []
    merged = merge_lora(PeftModel.from_pretrained(lm, str(adapter)).get_base_model(),
                        then=lambda layer: handed.append(layer.weight) or layer)
    assert len(handed) == 2 * len(LORA_TARGETS) and handed[0] is merged.model.layers[0].self_attn.q_proj.weight
    assert handed[0].data_ptr() != base.data_ptr() and torch.equal(base, kept) and not torch.equal(handed[0], kept)


def test_full_modules_are_merged_and_the_output_projection_stays_tied_where_equal(settings, full_adapter,
                                                                                  tiny_orpheus):
    info = validate_base_model(full_adapter)
    assert info.adapter.saved_modules == ("embed_tokens", "lm_head")
    merged = load_model(info, "fp32")
    saved = load_file(str(full_adapter / "adapter_model.safetensors"))
    torch.testing.assert_close(merged.model.embed_tokens.weight, saved["base_model.model.model.embed_tokens.weight"])
    torch.testing.assert_close(merged.lm_head.weight, saved["base_model.model.lm_head.weight"])
    assert not merged.config.tie_word_embeddings  # trained apart: two matrices now
    same = make_adapter(tiny_orpheus, full_adapter.parent / "untrained_rows", modules_to_save=["embed_tokens",
                                                                                               "lm_head"])
    state = load_file(str(same / "adapter_model.safetensors"))
    state["base_model.model.lm_head.weight"] = state["base_model.model.model.embed_tokens.weight"].clone()
    from safetensors.torch import save_file

    save_file(state, str(same / "adapter_model.safetensors"))
    retied = load_model(validate_base_model(same), "fp32")
    assert retied.lm_head.weight is retied.model.embed_tokens.weight and retied.config.tie_word_embeddings


@pytest.fixture(scope="module")
def adapter_run(settings, project, adapter):
    events = list(train(orpheus_config(project, adapter, "from_adapter", max_steps=2, lora_rank=4, lora_alpha=8.0)))
    assert events[-1].reason == "max_steps", events[-3:]
    return events, read_checkpoint(latest_checkpoint(project / "runs" / "from_adapter"))


def test_a_lora_run_trains_new_adapters_on_the_merge_and_exports_a_merged_model(settings, adapter_run, adapter,
                                                                                tiny_orpheus, tmp_path):
    from transformers import AutoModelForCausalLM

    from alltalk_gui.core.engines.orpheus.tuned import tuned_lm

    events, checkpoint = adapter_run
    logged = " ".join(e.message for e in events if isinstance(e, Log))
    assert f"Base: the LoRA adapter in {adapter} (rank 8" in logged and "new LoRA adapters train" in logged
    saved = load_file(str(checkpoint.weights))
    assert saved and all("lora_" in k for k in saved) and {v.shape[0] for k, v in saved.items() if "lora_A" in k} == {4}
    base, tuned = generate_ab(PreviewEngine("cpu", engine="orpheus"), checkpoint=checkpoint, text="Hello.",
                              references=[], language="en", settings=GenerationSettings(seed=1, options=SHORT),
                              out_dir=tmp_path / "ab", reference_text="tester")  # base: the adapter merged
    assert base.duration_s == tuned.duration_s == pytest.approx(10 * 2048 / 24000)
    with pytest.raises(ExportError, match="its own adapters fit only that merge"):
        export_voice(checkpoint, tmp_path, ExportOptions(format="lora", name="alone"))
    result = export_voice(checkpoint, tmp_path, ExportOptions(format="orpheus", name="merged"))
    model = AutoModelForCausalLM.from_pretrained(result.folder)
    tuned = tuned_lm(adapter, checkpoint.path).lm
    plain = load_model(validate_base_model(adapter), "fp32")
    ids = torch.tensor([[5, 6, 7, 8, 9]])
    with torch.no_grad():
        torch.testing.assert_close(model.float()(ids).logits, tuned(ids).logits, rtol=0.05, atol=0.05)
        assert not torch.allclose(tuned(ids).logits, plain(ids).logits)  # the run's adapters, merged too
    assert validate_base_model(result.folder).adapter is None  # a whole model: a base folder itself
    readme = (result.folder / "README.md").read_text()
    assert f"The LoRA adapter in `{adapter}` (rank 8, 14 modules; made for `{HUB_NAME}`), merged into" in readme
    assert f"`{tiny_orpheus}`" in readme
    info = json.loads((result.folder / "export_info.json").read_text())
    assert info["adapter"]["folder"] == str(adapter) and info["base_model"]["folder"] == str(tiny_orpheus)


def test_a_full_run_trains_the_merged_weights_of_an_adapter_with_full_modules(settings, project, full_adapter,
                                                                              tmp_path):
    from transformers import AutoModelForCausalLM

    before = tree(full_adapter)
    events = list(train(orpheus_config(project, full_adapter, "full_from_adapter", max_steps=1)))
    assert events[-1].reason == "max_steps", events[-3:]
    checkpoint = read_checkpoint(latest_checkpoint(project / "runs" / "full_from_adapter"))
    assert "lm.lm_head.weight" in load_file(str(checkpoint.weights))  # untied by the adapter: trained apart
    result = export_voice(checkpoint, tmp_path, ExportOptions(format="orpheus", name="full"))
    model = AutoModelForCausalLM.from_pretrained(result.folder)
    assert not model.config.tie_word_embeddings and model.lm_head.weight is not model.model.embed_tokens.weight
    assert "embed_tokens and lm_head in full" in (result.folder / "README.md").read_text()
    assert tree(full_adapter) == before


def test_preview_model_speaks_with_base_and_adapter(settings, adapter, tmp_path, capsys):
    from alltalk_gui.cli import main

    project = tmp_path / "voice"
    assert main(["new", str(project), "--language", "en", "--engine", "orpheus"]) == 0
    out = tmp_path / "adapter.wav"
    assert main(["preview", str(project), "--text", "Hello.", "--model", str(adapter), "--out", str(out),
                 "--reference-text", "tara", "--max-seconds", "0.9", "--device", "cpu"]) == 0
    said = capsys.readouterr().out
    assert f"Speaking with the model in {adapter} (en): The LoRA adapter in {adapter}" in said
    import soundfile as sf

    audio, rate = sf.read(out)
    assert rate == 24000 and audio.size == 10 * 2048


# ---------------------------------------------------------------------------------------------------- refusals
def refused(folder: Path, *watched: Path) -> str:
    """The message validating ``folder`` raises; nothing in ``folder`` or ``watched`` changed."""
    before = [tree(f) for f in (folder, *watched)]
    with pytest.raises(BaseModelError) as error:
        validate_base_model(folder)
    assert [tree(f) for f in (folder, *watched)] == before
    return str(error.value)


def test_an_adapter_without_its_base_says_which_model_to_get(adapter, tmp_path, monkeypatch):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "empty_settings"))
    message = refused(adapter)
    assert message.startswith(f"{adapter} holds a LoRA adapter made for {HUB_NAME}; the app puts it on the Orpheus "
                              "base model of its settings, and no Orpheus base-model folder is set in the app settings.")
    assert ("get canopylabs/orpheus-3b-0.1-ft (unsloth/orpheus-3b-0.1-ft holds the same weights as "
            "canopylabs/orpheus-3b-0.1-ft) with 'alltalk-gui download-base-model BASE_DIR --engine orpheus'") in message
    assert f"'alltalk-gui train PROJECT --base-model {adapter}'" in message
    assert not (tmp_path / "empty_settings").exists()
    app_settings.set_value(BASE_MODEL_SETTING, str(adapter))  # the Train page's choice was the adapter itself
    assert "of the app settings is " + str(adapter) + ", which is an adapter too" in refused(adapter)
    app_settings.set_value(BASE_MODEL_SETTING, str(tmp_path))  # not a model
    assert f"the Orpheus base-model folder of the app settings is not one: The Orpheus model folder {tmp_path} is " \
           "missing config.json" in refused(adapter)


def test_a_local_base_the_adapter_names_is_named_not_read(adapter, tiny_orpheus, tmp_path, monkeypatch):
    """peft writes the folder a base was loaded from; a path in a file someone else wrote is not followed: the
    message names it, and the user's choice of it as Orpheus's base makes the adapter work."""
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "settings"))
    local = tmp_path / "local_adapter"
    shutil.copytree(adapter, local)
    config = json.loads((local / "adapter_config.json").read_text())
    (local / "adapter_config.json").write_text(json.dumps({**config, "base_model_name_or_path": str(tiny_orpheus)}))
    assert (f"The adapter names the folder {tiny_orpheus}: if that is its base, make it Orpheus's base model"
            in refused(local))
    app_settings.set_value(BASE_MODEL_SETTING, str(tiny_orpheus))
    assert validate_base_model(local).folder == tiny_orpheus


@pytest.mark.parametrize("case, expected", [
    ("no_base_name", "adapter_config.json in {adapter} does not say which model the adapter was made for "
                     "(base_model_name_or_path is missing)"),
    ("damaged", "adapter_model.safetensors in {adapter} cannot be read (damaged or incomplete)"),
    ("other_vocabulary", "its tensor for model.embed_tokens has shape (824, 96), made for another vocabulary, and the "
                         "base has a vocabulary of 816."),
    ("other_width", "made for another model size (hidden or MLP width)"),
    ("more_layers", "adapts model.layers.2.mlp.down_proj, which the Orpheus model in {base} does not have"),
    ("other_tokenizer", "The tokenizer in {adapter} is not the one of the Orpheus model in {base}"),
])
def test_bad_adapters_are_refused(settings, case, expected, adapter, tiny_orpheus, tmp_path):
    folder = tmp_path / case
    if case in ("no_base_name", "damaged", "other_tokenizer"):
        shutil.copytree(adapter, folder)
    if case == "no_base_name":
        config = json.loads((folder / "adapter_config.json").read_text())
        del config["base_model_name_or_path"]
        (folder / "adapter_config.json").write_text(json.dumps(config))
    elif case == "damaged":
        weights = folder / "adapter_model.safetensors"
        weights.write_bytes(weights.read_bytes()[:-100])  # a copy cut short
    elif case == "other_vocabulary":
        make_adapter(tiny_orpheus, folder, changes={"vocab_size": 824}, modules_to_save=["embed_tokens"])
    elif case == "other_width":
        make_adapter(tiny_orpheus, folder, changes={"hidden_size": 120, "num_attention_heads": 6,
                                                    "num_key_value_heads": 2})
    elif case == "more_layers":
        make_adapter(tiny_orpheus, folder, changes={"num_hidden_layers": 3})
    elif case == "other_tokenizer":
        tokenizer = json.loads((folder / "tokenizer.json").read_text())
        tokenizer["added_tokens"] = tokenizer["added_tokens"][:-7]  # one frame's audio tokens fewer
        (folder / "tokenizer.json").write_text(json.dumps(tokenizer))
    message = refused(folder, tiny_orpheus)
    assert expected.format(adapter=folder, base=tiny_orpheus) in message, message


def test_the_disk_needs_of_a_run_on_an_adapter_are_its_bases(settings, project, adapter, tiny_orpheus, tmp_path,
                                                             monkeypatch):
    engine = get_engine("orpheus")
    for rank in (0, 16):
        on_base = engine.disk_needs(orpheus_config(project, tiny_orpheus, "x", lora_rank=rank))
        assert on_base is not None
        assert engine.disk_needs(orpheus_config(project, adapter, "x", lora_rank=rank)) == on_base
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "empty_settings"))
    assert engine.disk_needs(orpheus_config(project, adapter, "x")) is None  # no base here: training says why


def test_a_base_downloaded_from_another_model_is_named_as_such(adapter, tiny_orpheus, tmp_path, monkeypatch):
    """The pretrained and the fine-tuned Orpheus have the same shapes and tokenizer: the fit cannot tell them apart,
    the record of the app's download can, and the description says so (the run's log and the Train page show it)."""
    from alltalk_gui.core.engines.orpheus.files import SOURCE_FILE

    base = tmp_path / "pretrained"
    shutil.copytree(tiny_orpheus, base)
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "settings"))
    app_settings.set_value(BASE_MODEL_SETTING, str(base))
    (base / SOURCE_FILE).write_text(json.dumps({"repo": "canopylabs/orpheus-3b-0.1-pretrained"}))
    assert (f"(downloaded from canopylabs/orpheus-3b-0.1-pretrained, not {HUB_NAME}: it fits, but the adapter's "
            "changes were learnt on another model's weights)") in get_engine("orpheus").describe_base_model(adapter)
    (base / SOURCE_FILE).write_text(json.dumps({"repo": "canopylabs/orpheus-3b-0.1-ft"}))  # Unsloth's copy of it
    assert "downloaded from" not in get_engine("orpheus").describe_base_model(adapter)
