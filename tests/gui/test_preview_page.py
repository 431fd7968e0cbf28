"""The Preview & Export page on a project trained for a few steps on the tiny model: generate, play, A/B rows,
the WER beside each take, errors shown as messages, and the Export button writing the model folder."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.gui.preview.preview_page import PreviewPage
from tests.trained_voice import trained_voice, whisper_tiny_en

GENERATION_TIMEOUT_MS = 240_000  # the CPU is shared in CI; a tiny take is a few seconds on an idle machine


@pytest.fixture(scope="module")
def voice(tmp_path_factory):
    return trained_voice(tmp_path_factory)


def open_page(qtbot, project, **short_take):
    """A Preview page on ``project`` with the tiny Whisper model, its takes kept short (``short_take``: generation
    settings); when the test ends, its workers are waited for and playback stops."""
    page = PreviewPage()
    qtbot.addWidget(page)
    page.whisper_model = whisper_tiny_en()
    page.set_project(VoiceProject.open(project))
    page.generation.set_defaults(page.generation.defaults.with_values(short_take))
    yield page
    for worker in (page.worker, page.export_job):
        if worker is not None:
            worker.wait(GENERATION_TIMEOUT_MS)
    page.player.stop()
    page.release_models()  # the voices (an engine's child processes among them) go with the test
    if page.releaser is not None:
        page.releaser.wait(GENERATION_TIMEOUT_MS)


@pytest.fixture
def page(qtbot, voice):
    # The tiny random model rarely stops by itself: cap the audio codes so a take is short.
    yield from open_page(qtbot, voice.project, max_new_tokens=8)


def _wait_idle(qtbot, page):
    qtbot.waitUntil(lambda: not page.is_busy(), timeout=GENERATION_TIMEOUT_MS)


def test_checkpoints_references_and_sentences_are_filled_in(page):
    items = [page.checkpoint_box.itemText(i) for i in range(len(page.inputs.checkpoints))]
    assert items[0].startswith("XTTS v2 · run1 · step 4") and "latest" in items[0]  # named with its engine
    assert len(items) == 2 and sum("best" in item for item in items) == 1  # each checkpoint once, marked
    best = next(i for i, item in enumerate(items) if "best" in item)
    assert page.checkpoint_box.currentIndex() == best  # best by default (preview and export)
    # The run was not judged: the note says why best is best (the eval loss) and to listen.
    note = page.inputs.checkpoint_note.text()
    assert "the lowest eval loss" in note and "the judge has not scored" in note and "Listen" in note
    assert page.references and all(p.suffix == ".wav" for p in page.references)
    assert page.text_box.count() >= 3 and page.text_box.itemText(0).startswith("The quick brown fox")
    assert page.generate_button.isEnabled() and page.compare_button.isEnabled()
    assert page.generation.settings().options["temperature"] == 0.85  # the tiny base model's config.json


def test_best_is_the_default_and_latest_one_click_away(qtbot, voice, tmp_path):
    from tests.core.voice.test_preview_checkpoints import _with_eval_losses

    page = PreviewPage()
    qtbot.addWidget(page)
    page.set_project(VoiceProject.open(_with_eval_losses(voice, tmp_path, {2: 1.0, 4: 2.0})))
    assert page.selected_checkpoint().step == 2  # the lowest eval loss, for preview and export alike
    assert page.inputs.switch_button.text() == "Use latest"
    page.inputs.switch_button.click()
    assert page.selected_checkpoint().step == 4 and page.inputs.switch_button.text() == "Use best"
    page.refresh()  # new checkpoints may have come: "Latest" stays chosen
    assert page.selected_checkpoint().step == 4
    page.inputs.switch_button.click()
    assert page.selected_checkpoint().step == 2


@pytest.mark.timeout(600)
def test_generate_then_play(page, qtbot, voice):
    page.text_box.setCurrentText("Hello world.")
    page.generation.toggle.setChecked(True)
    page.generation.boxes["temperature"].setValue(0.5)
    page.generation.boxes["seed"].setValue(7)
    before = len(page.rows)
    page.generate_button.click()
    assert not page.generate_button.isEnabled()  # one job at a time
    _wait_idle(qtbot, page)
    assert page.message.text() == "" and len(page.rows) == before + 1
    take = page.rows[0].takes[0]
    assert take.result.wav.parent == voice.project / "previews" and take.result.wav.is_file()
    assert take.result.label == "fine-tuned" and take.wer_label.text().startswith("WER ")
    saved = json.loads(take.result.info.read_text())["settings"]
    assert (saved["options"]["temperature"], saved["seed"], saved["options"]["max_new_tokens"]) == (0.5, 7, 8)
    take.play_button.click()
    assert page.player.current == str(take.result.wav)
    take.play_button.click()
    assert page.player.current == ""


@pytest.mark.timeout(600)
def test_a_starting_training_run_gives_back_the_preview_models(page, qtbot, voice):
    """The models stay loaded between takes; when a run starts on the Train page (or another project opens) the
    page drops them, so that the run finds the card's memory free. A take being made finishes first."""
    from alltalk_gui.gui.main_window import MainWindow

    rows = len(page.rows)  # earlier tests' takes, shown again
    page.text_box.setCurrentText("Hello.")
    page.compare_button.click()  # the base model and the checkpoint
    page.release_models()  # asked while the take is being made: done after it
    assert page.session.engine is not None or page.is_busy()
    _wait_idle(qtbot, page)
    qtbot.waitUntil(lambda: page.session.engine is None and not page.is_busy(), timeout=GENERATION_TIMEOUT_MS)
    assert len(page.rows) == rows + 1 and len(page.rows[0].takes) == 2  # the take was made, then the models went

    page.generate_button.click()  # loaded again for the next take
    _wait_idle(qtbot, page)
    assert len(page.session.engine._models) == 1

    window = MainWindow()
    qtbot.addWidget(window)
    window.preview_page.session = page.session  # the window's Preview page holding these loaded models
    window.train_page.run.running_changed.emit(True)  # what the Train page says as its run starts
    qtbot.waitUntil(lambda: page.session.engine is None, timeout=GENERATION_TIMEOUT_MS)
    window.train_page.run.running_changed.emit(False)  # a run ending loads nothing
    assert page.session.engine is None


def test_ab_row_shows_base_and_fine_tuned_side_by_side(page, qtbot):
    page.text_box.setCurrentText("Hello world.")
    page.compare_button.click()
    _wait_idle(qtbot, page)
    row = page.rows[0]
    assert [t.result.label for t in row.takes] == ["base", "fine-tuned"]
    assert row.takes[0].title.text() == "<b>Base model</b>" and "run1 · step 4" in row.takes[1].title.text()
    assert all(t.plot.listDataItems() for t in row.takes)  # a waveform in each
    assert all("WER" in t.wer_label.text() for t in row.takes)


@pytest.mark.timeout(600)
def test_generation_errors_are_shown_as_messages(page, qtbot):
    before = list(page.rows)
    page.text_box.setCurrentText("   ")
    page.generate_button.click()
    assert "Type a sentence" in page.message.text() and page.worker is None
    page.text_box.setCurrentText("hello þing")
    page.generate_button.click()
    _wait_idle(qtbot, page)
    assert "vocabulary does not know" in page.message.text() and "Traceback" not in page.message.text()
    assert page.rows == before


@pytest.mark.timeout(600)
def test_saved_previews_come_back_when_the_project_is_opened_again(page, qtbot, voice):
    page.text_box.setCurrentText("Hello world.")
    page.compare_button.click()
    _wait_idle(qtbot, page)
    newest = [t.result.wav for t in page.rows[0].takes]
    again = PreviewPage()
    qtbot.addWidget(again)
    again.set_project(VoiceProject.open(voice.project))
    assert len(again.rows) == len(page.rows) and [t.result.wav for t in again.rows[0].takes] == newest
    assert not again.placeholder.isVisibleTo(again)


@pytest.mark.timeout(600)
def test_export_button_produces_the_folder(page, qtbot, tmp_path):
    panel = page.export_panel
    assert not panel.button.isEnabled()  # no output folder yet
    panel.folder.setText(str(tmp_path))
    panel.format.setCurrentIndex(panel.format.findData("coqui"))
    panel.half.setChecked(True)
    panel.name.setText("gui voice")
    panel.button.click()
    _wait_idle(qtbot, page)
    folder = tmp_path / "gui_voice"
    assert (folder / "model.pth").is_file() and (folder / "README.md").is_file()
    assert "Exported to" in panel.result.text()
    panel.button.click()  # again: the folder is not empty now
    _wait_idle(qtbot, page)
    assert "not empty" in panel.result.text()


def test_references_can_be_chosen_and_reset(page, monkeypatch, tmp_path):
    from PySide6.QtWidgets import QFileDialog

    automatic = list(page.references)
    mine = tmp_path / "my voice.wav"
    mine.write_bytes(automatic[0].read_bytes())
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda *a, **k: ([str(mine)], ""))
    page.inputs._choose_references()
    assert page.references == [mine] and page.inputs.reference_label.text() == "my voice.wav"
    page.inputs.auto_references()
    assert page.references == automatic


def test_without_checkpoints_the_page_says_train_first(qtbot, tmp_path):
    page = PreviewPage()
    qtbot.addWidget(page)
    page.set_project(VoiceProject.create(tmp_path / "fresh"))
    # Only "A model folder…": a folder the user has may speak before any training.
    assert page.checkpoint_box.count() == 1 and page.checkpoint_box.itemText(0) == "A model folder…"
    assert not page.generate_button.isEnabled() and page.inputs.voice() is None
    assert "No training checkpoint yet" in page.message.text() and not page.export_panel.isEnabled()


def test_page_is_step_4_and_opening_it_loads_no_torch():
    code = ("import sys; from alltalk_gui.gui.main_window import STEPS; "
            "from alltalk_gui.gui.preview.preview_page import PreviewPage; assert STEPS[3].page is PreviewPage; "
            "bad = [m for m in ('torch', 'TTS', 'whisper', 'faster_whisper') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
