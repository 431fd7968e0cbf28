"""A trained Parler-TTS voice in the app's preview and export (which run Parler in the engine's environment): the
preview speaks at 44.1 kHz with the description the run trained with, refuses other languages and an empty
description, and the export is a folder that ParlerTTSForConditionalGeneration.from_pretrained loads and
generates with, holding the fine-tuned weights and that description."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile as sf

from alltalk_gui.core.engine_api.engine import Reference, get_engine
from alltalk_gui.core.training.checkpoints import resolve_checkpoint
from alltalk_gui.core.voice.export import ExportError, ExportOptions, export_voice
from alltalk_gui.core.voice.preview import GenerationSettings, PreviewEngine, PreviewError, generate_preview
from tests.core.engines.parler.training_runs import checkpoint_state
from tests.take_stop import LONG_TEXT, Stopped, stop_at_part

TEXT = "Hello there, this is a test."
STEP = 6  # the full run's last step


@pytest.fixture(scope="module")
def trained(jenny, full_run):
    """The newest checkpoint of the session's full run (step 6)."""
    assert full_run[-1]["reason"] == "finished", full_run[-3:]
    return resolve_checkpoint(jenny, "latest", run="full")


@pytest.fixture(scope="module")
def previews():
    engine = PreviewEngine(device="cpu", engine="parler")
    yield engine
    engine._models.clear()  # ends the engine's children now, not at interpreter exit


def settings(**kw) -> GenerationSettings:
    """Parler's defaults, with takes of half a second (the tiny model never says it is done)."""
    return GenerationSettings.for_engine(get_engine("parler")).with_values({"max_seconds": 0.5, **kw})


def test_the_preview_speaks_at_44_khz_with_the_runs_description(jenny, trained, previews, tmp_path):
    description = (jenny / "runs" / "full" / "description.txt").read_text(encoding="utf-8").strip()
    assert get_engine("parler").reference_suggestion(trained) == description  # what the Preview page starts with
    result = generate_preview(previews, base_model_dir=trained.base_model_dir, checkpoint=trained, text=TEXT,
                              references=[], language="en", settings=settings(), out_dir=tmp_path,
                              reference_text=description)
    audio, rate = sf.read(result.wav, dtype="float32")
    assert rate == result.sample_rate == 44_100
    assert 0.2 < result.duration_s < 2.0 and np.isfinite(audio).all() and np.abs(audio).max() > 0
    assert json.loads(result.info.read_text())["reference_text"] == description
    voice = previews.model(trained.base_model_dir, trained.weights)
    assert voice.description == description and voice.step == STEP
    # The same seed speaks the same; another seed differently (Parler samples).
    spoken = Reference.description(description)
    again = previews.synthesize(trained.base_model_dir, trained.weights, TEXT, spoken, "en", settings())
    other = previews.synthesize(trained.base_model_dir, trained.weights, TEXT, spoken, "en", settings(seed=7))
    np.testing.assert_allclose(again, audio, atol=1e-4)
    assert other.shape != again.shape or not np.allclose(other, again, atol=1e-4)


def test_the_preview_reads_a_description_it_is_given_and_refuses_what_it_cannot_speak(trained, previews):
    base = trained.base_model_dir
    spoken = previews.synthesize(base, None, TEXT, Reference.description("A woman speaks fast."), "en", settings())
    assert spoken.size > 0
    with pytest.raises(PreviewError, match="needs a description of the voice"):
        previews.synthesize(base, None, TEXT, Reference.description(""), "en", settings())  # the base model has none
    with pytest.raises(PreviewError, match="English only"):
        previews.synthesize(base, None, "Guten Tag.", Reference.description("Anna speaks."), "de", settings())
    longer = previews.synthesize(base, None, TEXT, Reference.description("Anna speaks."), "en",
                                 settings(max_seconds=1.0))
    assert longer.size > spoken.size  # the longest take is Parler's own option


def test_the_export_loads_with_parlers_class_and_generates(jenny, trained, engine_side, tmp_path):
    result = export_voice(trained, tmp_path, ExportOptions(format="parler", name="Jenny voice"))
    folder = result.folder
    assert folder.name == "Jenny_voice"
    for name in ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "description.txt",
                 "README.md", "export_info.json"):
        assert (folder / name).is_file(), name
    description = (folder / "description.txt").read_text(encoding="utf-8").strip()
    assert description == (jenny / "runs" / "full" / "description.txt").read_text(encoding="utf-8").strip()
    info = json.loads((folder / "export_info.json").read_text(encoding="utf-8"))
    assert info["engine"] == "parler" and info["checkpoint"]["step"] == STEP and info["description"] == description
    heard = engine_side.call("generate_with_parlers_class", folder=str(folder), description=description, text=TEXT)
    assert heard["class"] == "ParlerTTSForConditionalGeneration" and heard["sampling_rate"] == 44_100
    assert heard["samples"] > 0 and heard["finite"]
    # The exported decoder is the checkpoint's, not the base model's.
    exported = engine_side.call("state_of", folder=str(folder))
    saved = checkpoint_state(jenny / "runs" / "full")
    for key, value in exported.items():
        np.testing.assert_array_equal(value, saved[key].float().numpy(), err_msg=key)
    with pytest.raises(ExportError, match="already exists"):
        export_voice(trained, tmp_path, ExportOptions(format="parler", name="Jenny voice"))
    other = export_voice(trained, tmp_path, ExportOptions(format="parler", name="other", references=[folder / "x.wav"],
                                                          voice_prompt="Jenny  speaks."))
    assert any("description, not from reference clips" in w for w in other.warnings)
    assert (other.folder / "description.txt").read_text(encoding="utf-8") == "Jenny speaks.\n"  # the page's, edited
    assert not list(other.folder.glob("*.wav"))


def test_a_long_take_is_spoken_piece_by_piece_and_stops_between_them(trained, previews, tmp_path):
    """Each piece of a long text is one call to the engine's child, so a take shows how far it got and stops before
    the next piece (it ran to its end before); what is spoken is the pieces joined as the child joins them."""
    from alltalk_gui.core.engine_api.languages import split_text
    from alltalk_gui.core.engines.parler.synthesis import MAX_CHARACTERS, SENTENCE_PAUSE_S

    text = LONG_TEXT
    pieces = split_text(text, "en", MAX_CHARACTERS)
    assert len(pieces) >= 3
    told, progress = stop_at_part(2)
    description = "Jenny speaks slowly."
    with pytest.raises(Stopped):
        generate_preview(previews, base_model_dir=trained.base_model_dir, checkpoint=trained, text=text,
                         references=[], language="en", settings=settings(), out_dir=tmp_path,
                         reference_text=description, progress=progress)
    assert told[-1].startswith("Speaking with ") and told[-1].endswith(f"part 2 of {len(pieces)}"), told
    assert list(tmp_path.iterdir()) == []  # nothing written of the stopped take
    # Uninterrupted, two pieces are each as the child speaks them alone, with the pause between.
    spoken = Reference.description(description)
    two = " ".join(pieces[:2])
    whole = previews.synthesize(trained.base_model_dir, trained.weights, two, spoken, "en", settings())
    alone = [previews.synthesize(trained.base_model_dir, trained.weights, p, spoken, "en", settings())
             for p in split_text(two, "en", MAX_CHARACTERS)]
    assert len(alone) == 2
    pause = int(44_100 * SENTENCE_PAUSE_S)
    assert whole.size == alone[0].size + pause + alone[1].size
    np.testing.assert_allclose(whole[:alone[0].size], alone[0], atol=1e-4)
    np.testing.assert_allclose(whole[-alone[1].size:], alone[1], atol=1e-4)
