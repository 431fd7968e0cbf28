"""The Preview page with a Parler-TTS checkpoint, offscreen, clicked as a user would: the voice description the run
trained with is filled in, Generate speaks it at 44.1 kHz in the engine's own environment (the take's row, its
waveform and the WER of what Whisper heard), A/B puts the base model beside it, and an emptied description stops
Generate with the engine's own words."""

from __future__ import annotations

import json

import pytest
import soundfile as sf

from alltalk_gui.core.project.folder import VoiceProject
from tests.engine_envs import parler_python, tiny_parler  # noqa: F401  (fixtures)
from tests.gui.test_preview_page import _wait_idle, open_page

DESCRIPTION = "Jenny speaks slowly, in a very clear recording."


@pytest.fixture(scope="module")
def parler_voice(tmp_path_factory, tiny_parler):
    """A project whose one short Parler run (2 steps on the tiny model, in the engine's environment) trained with
    :data:`DESCRIPTION`."""
    from alltalk_gui.core.engines.parler.description import save_description
    from alltalk_gui.testing.speech import make_speech_dataset, speech_available
    from tests.core.engines.parler.training_runs import parler_config, train

    if not speech_available():
        pytest.skip("espeak-ng is not installed (Debian: espeak-ng)")
    root = tmp_path_factory.mktemp("parler_preview") / "Jenny"
    project = VoiceProject.create(root, name="Jenny", language="en", engine="parler")
    make_speech_dataset(project.dataset_dir, n_train=3, n_eval=1)
    save_description(project.settings, DESCRIPTION, edited=True)
    project.save()
    events = train(parler_config(root, tiny_parler, "run1", max_steps=2, save_every_steps=2))
    assert events[-1]["reason"] == "max_steps", events[-3:]
    return root


@pytest.fixture
def page(qtbot, parler_voice):
    # The tiny random model never says it is done: half-second takes.
    yield from open_page(qtbot, parler_voice, max_seconds=0.5)


@pytest.mark.timeout(900)
def test_generate_speaks_the_runs_description_at_44_khz(page, qtbot, parler_voice):
    assert page.inputs.engine.name == "parler" and page.selected_checkpoint().engine == "parler"
    assert page.inputs.reference_text() == DESCRIPTION  # from the run, as it trained
    assert page.generate_button.isEnabled() and not page.references  # no reference clip: a description
    page.text_box.setCurrentText("Hello there.")
    page.generate_button.click()
    _wait_idle(qtbot, page)
    assert page.message.text() == "", page.message.text()
    take = page.rows[0].takes[0]
    assert take.result.label == "fine-tuned" and take.result.wav.parent == parler_voice / "previews"
    audio, rate = sf.read(take.result.wav, dtype="float32")
    assert rate == 44_100 and 0.2 < len(audio) / rate < 2.0 and abs(audio).max() > 0
    assert json.loads(take.result.info.read_text())["reference_text"] == DESCRIPTION
    assert take.plot.listDataItems() and take.wer_label.text()  # its waveform, and what Whisper made of it


@pytest.mark.timeout(900)
def test_ab_puts_the_base_model_beside_the_checkpoint(page, qtbot):
    page.text_box.setCurrentText("Hello there.")
    page.compare_button.click()
    _wait_idle(qtbot, page)
    assert page.message.text() == "", page.message.text()
    assert [t.result.label for t in page.rows[0].takes] == ["base", "fine-tuned"]
    assert all(t.result.sample_rate == 44_100 for t in page.rows[0].takes)
    # Each voice lives in a child process of Parler's environment (about 1 GB each with the tiny model): giving
    # the models back, as a starting training run asks, ends both.
    children = [voice.child.process for voice in page.session.engine._models.values()]
    assert len(children) == 2 and all(child.poll() is None for child in children)
    page.release_models()
    _wait_idle(qtbot, page)
    assert page.session.engine is None
    qtbot.waitUntil(lambda: all(child.poll() is not None for child in children), timeout=30_000)


def test_an_emptied_description_stops_generate_and_says_why(page):
    page.inputs.picker.description.setPlainText("")  # the user clears the box
    assert not page.generate_button.isEnabled() and not page.compare_button.isEnabled()
    assert "Parler-TTS v1 speaks in a voice described in words: describe the voice." in page.message.text()
    page.inputs.picker.description.setPlainText("A calm voice.")
    assert page.generate_button.isEnabled() and page.message.text() == ""
