"""A trained Parler-TTS voice in the app's preview and export (which run Parler in the engine's environment): the
preview speaks at 44.1 kHz with the description the run trained with, refuses other languages and an empty
description, and the export is a folder that ParlerTTSForConditionalGeneration.from_pretrained loads and
generates with, holding the fine-tuned weights and that description."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile as sf

from alltalk_gui.core.engine_api.engine import Reference
from alltalk_gui.core.training.checkpoints import resolve_checkpoint
from alltalk_gui.core.voice.export import ExportError, ExportOptions, export_voice
from alltalk_gui.core.voice.preview import GenerationSettings, PreviewEngine, PreviewError, generate_preview
from tests.core.engines.parler.training_runs import checkpoint_state, parler_config, train

TEXT = "Hello there, this is a test."


@pytest.fixture(scope="module")
def trained(jenny, tiny_parler):
    events = train(parler_config(jenny, tiny_parler, "voice", max_steps=2))
    assert events[-1]["reason"] == "max_steps", events[-3:]
    return resolve_checkpoint(jenny, "latest")


@pytest.fixture(scope="module")
def previews():
    engine = PreviewEngine(device="cpu", engine="parler")
    yield engine
    engine._models.clear()  # ends the engine's children now, not at interpreter exit


def settings(**kw) -> GenerationSettings:
    return GenerationSettings(**{"max_new_tokens": 40, **kw})  # about half a second: the tiny model never stops


def test_the_preview_speaks_at_44_khz_with_the_runs_description(jenny, trained, previews, tmp_path):
    description = (jenny / "runs" / "voice" / "description.txt").read_text(encoding="utf-8").strip()
    clip = sorted((jenny / "dataset" / "wavs").glob("*.wav"))[0]  # a preview takes a clip; Parler reads none
    result = generate_preview(previews, base_model_dir=trained.base_model_dir, checkpoint=trained, text=TEXT,
                              references=[clip], language="en", settings=settings(), out_dir=tmp_path)
    audio, rate = sf.read(result.wav, dtype="float32")
    assert rate == result.sample_rate == 44_100
    assert 0.2 < result.duration_s < 2.0 and np.isfinite(audio).all() and np.abs(audio).max() > 0
    voice = previews.model(trained.base_model_dir, trained.weights)
    assert voice.description == description and voice.step == 2
    # The same seed speaks the same; another seed differently (Parler samples).
    again = previews.synthesize(trained.base_model_dir, trained.weights, TEXT, Reference(np.zeros(0)), "en", settings())
    other = previews.synthesize(trained.base_model_dir, trained.weights, TEXT, Reference(np.zeros(0)), "en",
                                settings(seed=7))
    np.testing.assert_allclose(again, audio, atol=1e-4)
    assert other.shape != again.shape or not np.allclose(other, again, atol=1e-4)


def test_the_preview_reads_a_description_it_is_given_and_refuses_what_it_cannot_speak(trained, previews):
    base = trained.base_model_dir
    spoken = previews.synthesize(base, None, TEXT, Reference(np.zeros(0), "A woman speaks fast."), "en", settings())
    assert spoken.size > 0
    with pytest.raises(PreviewError, match="needs a description of the voice"):
        previews.synthesize(base, None, TEXT, Reference(np.zeros(0)), "en", settings())  # the base model has none
    with pytest.raises(PreviewError, match="English only"):
        previews.synthesize(base, None, "Guten Tag.", Reference(np.zeros(0), "Anna speaks."), "de", settings())


def test_the_export_loads_with_parlers_class_and_generates(jenny, trained, engine_side, tmp_path):
    result = export_voice(trained, tmp_path, ExportOptions(format="parler", name="Jenny voice"))
    folder = result.folder
    assert folder.name == "Jenny_voice"
    for name in ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "description.txt",
                 "README.md", "export_info.json"):
        assert (folder / name).is_file(), name
    description = (folder / "description.txt").read_text(encoding="utf-8").strip()
    assert description == (jenny / "runs" / "voice" / "description.txt").read_text(encoding="utf-8").strip()
    info = json.loads((folder / "export_info.json").read_text(encoding="utf-8"))
    assert info["engine"] == "parler" and info["checkpoint"]["step"] == 2 and info["description"] == description
    heard = engine_side.call("generate_with_parlers_class", folder=str(folder), description=description, text=TEXT)
    assert heard["class"] == "ParlerTTSForConditionalGeneration" and heard["sampling_rate"] == 44_100
    assert heard["samples"] > 0 and heard["finite"]
    # The exported decoder is the checkpoint's, not the base model's.
    exported = engine_side.call("state_of", folder=str(folder))
    saved = checkpoint_state(jenny / "runs" / "voice")
    for key, value in exported.items():
        np.testing.assert_array_equal(value, saved[key].float().numpy(), err_msg=key)
    with pytest.raises(ExportError, match="already exists"):
        export_voice(trained, tmp_path, ExportOptions(format="parler", name="Jenny voice"))
    other = export_voice(trained, tmp_path, ExportOptions(format="parler", name="other", references=[folder / "x.wav"]))
    assert any("description, not from reference clips" in w for w in other.warnings)
    assert not list(other.folder.glob("*.wav"))
