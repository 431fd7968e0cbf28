"""The Train page's speaker name for Orpheus-TTS, offscreen: the name the model learns, as it will be learned.

First renderings (docs/images/train_orpheus.png) showed the project's name ("Grandma's voice") in a four-line box
with "Suggest from the recordings", while the dataset export writes the metadata-safe ``Grandma_s_voice``, which
training reads and the Preview page then offers; typing another name was refused, and the button gave the same
name back. Now the page shows the dataset's name, on one line, read-only, without the button."""

from __future__ import annotations

import pytest

from alltalk_gui.core.dataset.export import speaker_name
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.gui.train.train_page import TrainPage


def _page(qtbot, project: VoiceProject) -> TrainPage:
    from alltalk_gui.core.machine.gpu import list_devices

    page = TrainPage()
    qtbot.addWidget(page)
    page.setup.set_devices(list_devices())
    page.resize(1200, 900)
    page.set_project(project)
    editor = page.setup.voice_prompt
    qtbot.waitUntil(lambda: bool(editor.text.toPlainText()), timeout=30_000)  # read in a worker
    return page


@pytest.fixture
def project(tmp_path, monkeypatch) -> VoiceProject:
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    return VoiceProject.create(tmp_path / "voice", name="Grandma's voice", language="en", engine="orpheus")


def test_the_speaker_name_is_the_datasets_on_one_read_only_line(qtbot, project):
    from alltalk_gui.testing.speech import make_speech_dataset, speech_available

    if not speech_available():
        pytest.skip("espeak-ng is not installed (Debian: espeak-ng)")
    make_speech_dataset(project.dataset_dir, n_train=1, n_eval=1, speaker=speaker_name(project))  # as exported
    editor = _page(qtbot, project).setup.voice_prompt
    assert editor.isVisibleTo(editor.parentWidget()) and editor.title() == "Speaker name"
    assert editor.text.toPlainText() == "Grandma_s_voice"  # what training reads, not the project's name
    assert editor.text.isReadOnly() and editor.suggest.isHidden() and editor.status.isHidden()  # no empty row
    assert editor.text.height() < 2 * editor.text.fontMetrics().lineSpacing() + 12  # one line
    assert "dataset's speaker name" in editor.hint.text()


def test_before_an_export_it_is_the_name_the_export_will_write(qtbot, project):
    editor = _page(qtbot, project).setup.voice_prompt
    assert editor.text.toPlainText() == "Grandma_s_voice"


def test_a_description_stays_a_few_editable_lines(qtbot, tmp_path, monkeypatch):
    from alltalk_gui.core.engines.parler.description import save_description

    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    project = VoiceProject.create(tmp_path / "jenny", name="Jenny", language="en", engine="parler")
    save_description(project.settings, "Jenny speaks.", edited=True)  # kept: nothing to measure
    project.save()
    editor = _page(qtbot, project).setup.voice_prompt
    assert editor.title() == "Voice description" and editor.text.toPlainText() == "Jenny speaks."
    assert not editor.text.isReadOnly() and not editor.suggest.isHidden() and not editor.status.isHidden()
    assert editor.text.height() > 3 * editor.text.fontMetrics().lineSpacing()


def test_another_engines_words_are_not_shown_while_these_are_read(qtbot, project, tmp_path):
    """The project goes over from Orpheus to Parler: the box is empty until Parler's description is measured, not
    the speaker name under "Voice description" (docs/images/train_parler.png, a rendering after Orpheus's)."""
    from alltalk_gui.core.engine_api.engine import get_engine
    from alltalk_gui.gui.train.voice_prompt_editor import VoicePromptEditor

    editor = VoicePromptEditor()
    qtbot.addWidget(editor)
    editor.set_context(get_engine("orpheus"), project)
    qtbot.waitUntil(lambda: editor.text.toPlainText() == "Grandma_s_voice", timeout=30_000)
    other = VoiceProject.create(tmp_path / "jenny", name="Jenny", language="en", engine="parler")
    editor.set_context(get_engine("parler"), other)
    assert editor.title() == "Voice description" and editor.text.toPlainText() == ""
    assert editor.text.isReadOnly()  # until the measurement answers
    qtbot.waitUntil(lambda: not editor.text.isReadOnly(), timeout=120_000)  # its worker ends within the test
