"""A trained Orpheus voice: previewed as its speaker name at 24 kHz (A/B with the base), exported as a Hugging Face
folder that transformers loads and generates with (and that is a valid base folder itself), and as a peft LoRA
adapter that puts the same voice on the base model; the README names the speaker; bad requests are refused."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile as sf
import torch

from alltalk_gui.core.engine_api.engine import EngineError, Reference, get_engine
from alltalk_gui.core.engines.orpheus.files import validate_base_model
from alltalk_gui.core.training.checkpoints import read_checkpoint
from alltalk_gui.core.training.loop import latest_checkpoint, train
from alltalk_gui.core.voice.export import ExportError, ExportOptions, export_voice
from alltalk_gui.core.voice.preview import GenerationSettings, PreviewEngine, generate_ab
from tests.core.engines.orpheus.test_engine_training import orpheus_config

SHORT = {"max_seconds": 0.9}  # 10 frames (11.7 a second): a short take keeps the tiny model's generation quick


@pytest.fixture(scope="module")
def lora_checkpoint(project, tiny_orpheus):
    events = list(train(orpheus_config(project, tiny_orpheus, "voice_lora", max_steps=2, lora_rank=4,
                                       lora_alpha=8.0)))
    assert events[-1].reason == "max_steps", events[-3:]
    return read_checkpoint(latest_checkpoint(project / "runs" / "voice_lora"))


@pytest.fixture(scope="module")
def full_checkpoint(project, tiny_orpheus):
    events = list(train(orpheus_config(project, tiny_orpheus, "voice_full", max_steps=2)))
    assert events[-1].reason == "max_steps", events[-3:]
    return read_checkpoint(latest_checkpoint(project / "runs" / "voice_full"))


def test_the_speaker_name_is_the_reference(lora_checkpoint):
    engine = get_engine("orpheus")
    assert engine.reference_suggestion(lora_checkpoint) == "tester"
    voice = engine.load_voice(lora_checkpoint.base_model_dir, lora_checkpoint.weights, "cpu")
    with pytest.raises(EngineError, match="tester"):
        engine.synthesize(voice, "Hello.", Reference.speaker(""), "en", GenerationSettings(options=SHORT))


def test_a_b_preview_writes_24khz_audio(lora_checkpoint, tmp_path):
    engine = get_engine("orpheus")
    settings = GenerationSettings(seed=1, options=SHORT)
    base, tuned = generate_ab(PreviewEngine("cpu", engine="orpheus"), checkpoint=lora_checkpoint, text="Hello there.",
                              references=[], language="en", settings=settings, out_dir=tmp_path,
                              reference_text="tester")
    for result in (base, tuned):
        audio, rate = sf.read(result.wav)
        assert rate == 24000 and audio.ndim == 1 and audio.size == 10 * 2048
        assert result.reference_text == "tester"
    assert not np.array_equal(sf.read(base.wav)[0], sf.read(tuned.wav)[0])  # the fine-tune speaks differently


def test_a_voice_held_in_bf16_as_on_a_card_speaks_on_the_cpu(lora_checkpoint):
    """The CPU twin of a preview on a card, which holds the weights in bf16 (``voice_weights``): the same loader
    with bf16 weights gives the fp32 voice's logits to bf16's precision and speaks 24 kHz audio."""
    from alltalk_gui.core.engines.orpheus.tokens import prompt_ids
    from alltalk_gui.core.engines.orpheus.voice import load_voice_as, voice_weights

    assert [voice_weights(d) for d in ("cuda", "cuda:1", "cpu")] == ["bf16", "bf16", "fp32"]
    engine = get_engine("orpheus")
    base, weights = lora_checkpoint.base_model_dir, lora_checkpoint.weights
    half, full = (load_voice_as(base, weights, "cpu", held) for held in ("bf16", "fp32"))
    assert half.lm.dtype == torch.bfloat16 and full.lm.dtype == torch.float32
    ids = torch.tensor([prompt_ids(half.tokenizer, half.special, "tester", "Hello there.")])
    with torch.no_grad():
        torch.testing.assert_close(half.lm(ids).logits.float(), full.lm(ids).logits, rtol=0.05, atol=0.05)
    audio = engine.synthesize(half, "Hello there.", Reference.speaker("tester"), "en",
                              GenerationSettings(seed=1, options=SHORT))
    assert audio.dtype == np.float32 and audio.size == 10 * 2048 and np.isfinite(audio).all() and audio.any()


def test_the_model_folder_loads_with_transformers_and_generates(lora_checkpoint, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    result = export_voice(lora_checkpoint, tmp_path, ExportOptions(format="orpheus", name="my_voice"))
    folder = result.folder
    assert {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
            "snac/pytorch_model.bin", "README.md", "export_info.json"} <= set(result.files)
    model = AutoModelForCausalLM.from_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert model.dtype == torch.bfloat16 and model.generation_config.eos_token_id == get_special(folder).end_of_speech
    ids = tokenizer("tester: Hello.", return_tensors="pt")["input_ids"]
    out = model.generate(ids, max_new_tokens=8, do_sample=True, top_p=0.95, temperature=0.6)
    assert out.shape[1] == ids.shape[1] + 8
    # The merged weights are the checkpoint's model: the same logits as the engine's own rebuild.
    from alltalk_gui.core.engines.orpheus.tuned import tuned_lm

    tuned = tuned_lm(lora_checkpoint.base_model_dir, lora_checkpoint.path).lm
    with torch.no_grad():
        torch.testing.assert_close(model.float()(ids).logits, tuned(ids).logits, rtol=0.05, atol=0.05)
    assert validate_base_model(folder).parameters == validate_base_model(lora_checkpoint.base_model_dir).parameters
    readme = (folder / "README.md").read_text()
    assert "`tester`" in readme and "tester: Hello there" in readme and "Llama 3.2" in readme
    info = json.loads((folder / "export_info.json").read_text())
    assert info["speakers"] == ["tester"]
    # The recipe as every engine's export records it (voice.export.training_settings), the engine's own after it.
    settings = info["training_settings"]
    assert settings["max_steps"] == 2 and settings["lora_rank"] == 4 and settings["base_weights"] == "fp32"
    assert list(settings)[-1] == "base_weights" and "| max_steps | 2 |" in readme


def get_special(folder):
    from alltalk_gui.core.engines.orpheus.files import special_tokens

    return special_tokens(folder)


def test_the_lora_adapter_puts_the_voice_on_the_base_model(lora_checkpoint, tiny_orpheus, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from alltalk_gui.core.engines.orpheus.tuned import tuned_lm

    result = export_voice(lora_checkpoint, tmp_path, ExportOptions(format="lora", name="my_adapter"))
    assert {"adapter_config.json", "adapter_model.safetensors", "README.md"} <= set(result.files)
    base = AutoModelForCausalLM.from_pretrained(tiny_orpheus, dtype=torch.float32)
    adapted = PeftModel.from_pretrained(base, result.folder).merge_and_unload()
    tuned = tuned_lm(tiny_orpheus, lora_checkpoint.path).lm
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    with torch.no_grad():
        torch.testing.assert_close(adapted(ids).logits, tuned(ids).logits)
    assert "PeftModel.from_pretrained" in (result.folder / "README.md").read_text()


def test_bad_exports_are_refused(full_checkpoint, lora_checkpoint, tmp_path):
    with pytest.raises(ExportError, match="whole model"):
        export_voice(full_checkpoint, tmp_path, ExportOptions(format="lora", name="x"))
    assert not (tmp_path / "x").exists()
    export_voice(full_checkpoint, tmp_path, ExportOptions(format="orpheus", name="full"))
    with pytest.raises(ExportError, match="already exists"):
        export_voice(lora_checkpoint, tmp_path, ExportOptions(format="orpheus", name="full"))
