"""Preview is ready as soon as training has written a checkpoint (issue #17): the automatic references follow
the dataset that training exports, are shown by their words, and each checkpoint is listed once."""

from __future__ import annotations

import shutil

import pytest

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.gui.preview.preview_page import PreviewPage, transcription_model
from tests.trained_voice import trained_voice


@pytest.fixture(scope="module")
def voice(tmp_path_factory):
    return trained_voice(tmp_path_factory)


def test_references_come_from_the_dataset_written_after_the_page_opened(qtbot, voice, tmp_path):
    project_dir = tmp_path / "voice"
    shutil.copytree(voice.project, project_dir)
    dataset = project_dir / "dataset"
    shutil.move(dataset, tmp_path / "dataset_later")  # opened before training exported the dataset
    page = PreviewPage()
    qtbot.addWidget(page)
    page.set_project(VoiceProject.open(project_dir))
    assert page.references == [] and not page.generate_button.isEnabled()
    assert "none yet" in page.inputs.reference_label.text()

    shutil.move(tmp_path / "dataset_later", dataset)  # training wrote it
    page.refresh()  # what showing the page does
    assert page.references and all(p.parent.parent == dataset for p in page.references)
    label = page.inputs.reference_label.text()
    assert "“" in label and " s)" in label and ".wav" not in label  # words, not file names
    assert page.generate_button.isEnabled() and page.compare_button.isEnabled()

    # Chosen files stay chosen across refreshes; Automatic goes back to the dataset's clips.
    chosen = [page.references[0]]
    page.inputs.set_references(chosen)
    page.refresh()
    assert page.references == chosen and chosen[0].name in page.inputs.reference_label.text()
    page.inputs.auto_references()
    assert len(page.references) > 1


def test_each_checkpoint_is_listed_once_with_its_marks(qtbot, voice):
    page = PreviewPage()
    qtbot.addWidget(page)
    page.set_project(VoiceProject.open(voice.project))
    rows = range(len(page.inputs.checkpoints))  # the checkpoints come first, then the model folder's entries
    items = [page.checkpoint_box.itemText(i) for i in rows]
    paths = [page.checkpoint_box.itemData(i) for i in rows]
    assert len(items) == len(set(paths)) == 2 and all(p.startswith(str(voice.project)) for p in paths)
    assert page.checkpoint_box.itemText(page.checkpoint_box.count() - 1) == "A model folder…"
    assert "latest" in items[0] and sum("best" in item for item in items) == 1


def test_the_intelligibility_check_uses_the_transcription_model(monkeypatch, tmp_path):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    from alltalk_gui.gui import settings

    assert transcription_model() is None
    settings.settings().setValue("transcribe/model", "/models/tiny.en")
    assert transcription_model() == "/models/tiny.en"


def test_ab_cards_are_even_and_never_overflow(qtbot, voice, tmp_path):
    import numpy as np
    import soundfile as sf

    from alltalk_gui.core.voice.preview import GenerationSettings, PreviewResult
    from alltalk_gui.gui.preview.ab_row import AbRow

    results = []
    for label, title in (("base", ""), ("fine-tuned", "run_20261123_040725 · step 80, eval loss 0.809 (latest)")):
        wav = tmp_path / f"{label}.wav"
        sf.write(wav, np.sin(np.arange(22050) / 10).astype("float32") * 0.3, 22050)
        results.append(PreviewResult(wav=wav, info=tmp_path / f"{label}.json", label=label, text="Hello there.",
                                     language="en", checkpoint=None, checkpoint_label=title, references=[],
                                     settings=GenerationSettings(), sample_rate=22050, duration_s=1.0,
                                     generation_s=21.5, wer=1.0, transcript=""))
    row = AbRow(results)
    qtbot.addWidget(row)
    row.resize(820, 200)
    row.show()
    qtbot.wait(20)
    base, tuned = row.takes
    assert abs(base.width() - tuned.width()) <= 2 and tuned.geometry().right() <= row.width()


def test_playing_without_a_sound_device_says_so(qtbot, tmp_path, monkeypatch):
    import numpy as np
    import soundfile as sf

    from alltalk_gui.gui.common import audio_player

    wav = tmp_path / "a.wav"
    sf.write(wav, np.zeros(2205, dtype="float32"), 22050)
    player = audio_player.AudioPlayer()
    messages: list[str] = []
    player.error.connect(messages.append)
    monkeypatch.setattr(audio_player, "has_sound_output", lambda: False)
    player.play(wav)
    assert messages and "No sound output" in messages[0]
    player.stop()
    messages.clear()
    monkeypatch.setattr(audio_player, "has_sound_output", lambda: True)
    player.play(wav)
    player.stop()
    assert not any("No sound output" in m for m in messages)
