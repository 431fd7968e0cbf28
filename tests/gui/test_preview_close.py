"""Closing the window while the Preview page makes a take: it asks first; No keeps the window open and the take
goes on; Yes stops the take at its next step (the model's own synthesis cannot be cut short), waits for that
with the window painting (never blocking the GUI thread on torch), and leaves nothing of the take in previews/.
Before, the window closed without a word and the process went on unseen until the take ended."""

from __future__ import annotations

import shutil
import time

import pytest

from alltalk_gui.core.project.folder import VoiceProject
from tests.trained_voice import trained_voice, whisper_tiny_en

TIMEOUT_MS = 240_000


@pytest.fixture
def window(qtbot, tmp_path_factory, tmp_path):
    from alltalk_gui.gui.main_window import MainWindow

    voice = trained_voice(tmp_path_factory)
    root = tmp_path / "project"
    shutil.copytree(voice.project, root, ignore=shutil.ignore_patterns("previews"))
    window = MainWindow()
    qtbot.addWidget(window)
    window.set_project(VoiceProject.open(root))
    page = window.preview_page
    page.whisper_model = whisper_tiny_en()
    page.generation.set_defaults(page.generation.defaults.with_values({"max_new_tokens": 8}))
    window.show()
    yield window
    page.shutdown()
    page.release_models()
    if page.releaser is not None:
        page.releaser.wait(TIMEOUT_MS)


def _files(folder):
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


@pytest.mark.timeout(600)
def test_closing_during_a_take_asks_then_stops_it_and_keeps_nothing_of_it(window, qtbot):
    page = window.preview_page
    previews = page.project.previews_dir
    asked = []
    page.ask_on_close = lambda take, export: asked.append((take, export)) or len(asked) > 1  # No, then Yes
    page.text_box.setCurrentText("Hello world.")
    page.compare_button.click()  # an A/B: the base model, then the checkpoint
    qtbot.waitUntil(lambda: page.progress.value() >= 30, timeout=TIMEOUT_MS)  # speaking
    assert page.busy_message() is not None  # another project waits for the take, as for an import

    assert not window.close()  # No: the window stays, the take goes on
    assert asked == [(True, False)] and window.isVisible() and page.is_busy()

    started = time.monotonic()
    assert window.close()  # Yes: stopped at its next step, waited for with the event loop running
    stopped_s = time.monotonic() - started
    assert asked[-1] == (True, False) and not page.is_busy() and not window.isVisible()
    assert [f for f in _files(previews) if f.endswith((".wav", ".json", ".tmp"))] == []  # nothing of the take
    assert "The take was stopped" in page.message.text()
    print(f"stopped {stopped_s:.1f} s after the close")


def test_closing_with_nothing_running_asks_nothing(window):
    page = window.preview_page
    page.ask_on_close = lambda take, export: pytest.fail("asked with nothing running")
    assert page.busy_message() is None and page.confirm_close()


@pytest.mark.timeout(600)
def test_a_pair_stopped_after_its_first_take_was_saved_leaves_neither(window, qtbot):
    """The stop comes after the first side of an A/B was saved whole: the pair is not kept, half of it neither."""
    page = window.preview_page
    previews = page.project.previews_dir
    before = _files(previews)
    page.text_box.setCurrentText("Hello.")
    page.compare_button.click()
    seen = []

    def second_side(_done, _total, what):
        seen.append(what)
        if "fine-tuned" in what:  # the base model's take is saved by now
            page.worker.cancel()

    page.worker.progress.connect(second_side)
    qtbot.waitUntil(lambda: not page.is_busy(), timeout=TIMEOUT_MS)
    assert any("fine-tuned" in what for what in seen)
    assert _files(previews) == before and not page.rows
    assert page.message.text() == "The take was stopped. Nothing of it was kept."


@pytest.mark.timeout(600)
def test_closing_during_an_export_asks_then_lets_it_finish_whole(window, qtbot, tmp_path):
    page = window.preview_page
    asked = []
    page.ask_on_close = lambda take, export: asked.append((take, export)) or True
    panel = page.export_panel
    panel.folder.setText(str(tmp_path / "alltalk_tts"))
    target = panel.destination().folder
    panel.button.click()
    assert page.is_busy() and page.busy_message() == "Wait for the export to finish first."
    assert window.close()  # waited for with the event loop running, then closed
    assert asked == [(False, True)] and not page.is_busy() and not window.isVisible()
    assert "Exported to" in panel.result.text() and (target / "config.json").is_file()
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]  # no staging folder left beside it


# Twenty sentences: XTTS speaks at most 250 characters of English at once, so eight pieces, one after another.
LONG = " ".join(["The first hall of the museum shows old maps of the city and its harbour."] * 20)


@pytest.mark.timeout(600)
def test_stop_ends_a_long_take_at_its_next_piece_and_keeps_nothing(window, qtbot):
    """A long take ran on to its end whatever the user did (the walk of 2026-11-27): Stop now ends it before the
    next piece of the text, the GUI thread never waiting for the model."""
    import re

    page = window.preview_page
    window.sidebar.setCurrentRow(3)
    previews = page.project.previews_dir
    before = _files(previews)
    page.text_box.setCurrentText(LONG)
    page.generate_button.click()
    parts = []
    page.worker.progress.connect(lambda _d, _t, what: parts.extend(re.findall(r"part (\d+) of (\d+)", what)))
    assert page.stop_button.isVisible() and page.stop_button.isEnabled()
    qtbot.waitUntil(lambda: bool(parts), timeout=TIMEOUT_MS)  # the first piece is spoken, the second begins
    total = int(parts[0][1])
    assert total >= 6, parts
    started = time.monotonic()
    page.stop_button.click()
    assert time.monotonic() - started < 0.2  # it asks; it does not wait
    assert not page.stop_button.isEnabled() and "Stopping" in page.progress.format()
    qtbot.waitUntil(lambda: not page.is_busy(), timeout=TIMEOUT_MS)
    assert max(int(done) for done, _ in parts) < total  # stopped between pieces, not after the last one
    assert "The take was stopped" in page.message.text() and not page.stop_button.isVisible()
    assert _files(previews) == before  # nothing of it kept
    assert page.generate_button.isEnabled()
