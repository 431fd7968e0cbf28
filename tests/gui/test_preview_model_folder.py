"""The Preview page speaks with any model folder of the project's engine (here an AllTalk export of the tiny trained
voice, as a user's earlier fine-tune would be): chosen with a folder picker, checked by the engine in a worker, compared
with the project's checkpoint or with another model folder (the compare side's own), remembered for the project; bad
and vanished folders are explained, never written."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from PySide6.QtWidgets import QFileDialog

from alltalk_gui.cli import main
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.gui.preview.preview_inputs import CHOOSE_ITEM, FOLDER_ITEM
from alltalk_gui.gui.preview.preview_page import COMPARE_FOLDER_ITEM
from tests.gui.test_preview_page import GENERATION_TIMEOUT_MS, open_page
from tests.trained_voice import trained_voice

CHECK_TIMEOUT_MS = 120_000


@pytest.fixture(scope="module")
def voice(tmp_path_factory):
    return trained_voice(tmp_path_factory)


@pytest.fixture(scope="module")
def exported(voice, tmp_path_factory):
    """An AllTalk model folder made from the trained voice (what a user brings from an earlier fine-tune)."""
    out = tmp_path_factory.mktemp("alltalk")
    assert main(["export", str(voice.project), "--format", "alltalk", "--out", str(out), "--name", "mine"]) == 0
    return out / "models" / "xtts" / "mine" if (out / "models").is_dir() else out / "mine"


@pytest.fixture
def project(voice, tmp_path):
    """A copy of the trained project: these tests write its project.json and previews/."""
    return shutil.copytree(voice.project, tmp_path / "voice")


def _page(qtbot, project):
    yield from open_page(qtbot, project, max_new_tokens=8)


@pytest.fixture
def page(qtbot, project):
    yield from _page(qtbot, project)


def choose_folder(page, qtbot, monkeypatch, folder, compare: bool = False) -> None:
    """What the user does: "A model folder…" in the Speak-with list (``compare``: the Compare-with list), a folder in
    the picker; then the check ends."""
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *args: str(folder))
    box, choice = (page.compare_box, page.compare_folder) if compare else (page.checkpoint_box, page.inputs.model_folder)
    index = box.findData(CHOOSE_ITEM)
    box.setCurrentIndex(index)
    box.activated.emit(index)
    qtbot.waitUntil(lambda: not choice.is_checking(), timeout=CHECK_TIMEOUT_MS)


def compare_items(page) -> list[str]:
    """The compare list as the user reads it (separators left out)."""
    box = page.compare_box
    return [box.itemText(i) for i in range(box.count()) if box.itemText(i)]


def snapshot(folder):
    return {p.relative_to(folder): p.stat().st_mtime_ns for p in folder.rglob("*")}


def saved_folder(project):
    return json.loads((project / "project.json").read_text()).get("settings", {}).get("preview", {}).get(
        "model_folder", {})


@pytest.mark.timeout(900)
def test_a_model_folder_speaks_beside_the_checkpoint_and_is_remembered(page, qtbot, monkeypatch, project, exported):
    before = snapshot(exported)
    choose_folder(page, qtbot, monkeypatch, exported)
    assert page.inputs.speaks_with_folder() and page.checkpoint_box.currentText() == f"Model folder · {exported.name}"
    assert "GPT with" in page.inputs.checkpoint_note.text() and page.generate_button.isEnabled()
    assert saved_folder(project) == {"xtts": str(exported)}
    # Compared with the project's checkpoints, the base model, or another folder ("A model folder…").
    best = page.inputs.chosen_checkpoint()
    assert compare_items(page) == ["the base model", *(page.inputs.checkpoint_title(c) for c in page.inputs.checkpoints),
                                   "A model folder…"]
    assert "Export this project's " + best.label in page.export_panel.title()  # the folder is only heard

    page.text_box.setCurrentText("Hello world.")
    page.compare_box.setCurrentIndex(page.compare_box.findData(str(best.path)))
    page.compare_button.click()
    qtbot.waitUntil(lambda: not page.is_busy(), timeout=GENERATION_TIMEOUT_MS)
    row = page.rows[0]
    assert page.message.text() == "" and [t.result.label for t in row.takes] == ["fine-tuned", "model"]
    assert row.takes[0].title.text() == f"<b>Fine-tuned · {best.label}</b>"
    assert row.takes[1].title.text() == f"<b>Model folder · {exported.name}</b>"
    assert all(t.result.wav.parent == project / "previews" and t.result.wav.is_file() for t in row.takes)
    assert snapshot(exported) == before  # nothing written into the user's folder

    # Opened again: the folder is offered (checked again), the checkpoint speaks, the pair keeps its order.
    again = next(_page(qtbot, project))
    qtbot.waitUntil(lambda: not again.inputs.model_folder.is_checking(), timeout=CHECK_TIMEOUT_MS)
    assert again.checkpoint_box.findData(FOLDER_ITEM) >= 0 and not again.inputs.speaks_with_folder()
    assert [t.result.label for t in again.rows[0].takes] == ["fine-tuned", "model"]
    other = next(c for c in again.inputs.checkpoints if c != again.selected_checkpoint())  # never what speaks
    assert compare_items(again) == ["the base model", again.inputs.checkpoint_title(other),
                                    f"model folder · {exported.name}", "A model folder…"]
    again.checkpoint_box.setCurrentIndex(again.checkpoint_box.findData(FOLDER_ITEM))
    assert again.inputs.speaks_with_folder() and again.generate_button.isEnabled()


def _empty(tmp_path, exported):
    (tmp_path / "empty").mkdir()
    return tmp_path / "empty"


def _f5_folder(tmp_path, exported):
    (tmp_path / "f5ish").mkdir()
    (tmp_path / "f5ish" / "model_last.pt").write_bytes(b"not XTTS")
    return tmp_path / "f5ish"


def _broken_weights(tmp_path, exported):
    folder = shutil.copytree(exported, tmp_path / "broken")
    (folder / "model.pth").write_bytes(b"not a checkpoint")
    return folder


@pytest.mark.parametrize("make", [_empty, _f5_folder, _broken_weights])
def test_a_folder_the_engine_refuses_is_explained_and_the_choice_stays(page, qtbot, monkeypatch, project, tmp_path,
                                                                        exported, make):
    folder = make(tmp_path, exported)
    before = snapshot(folder)
    chosen = page.checkpoint_box.currentData()
    choose_folder(page, qtbot, monkeypatch, folder)
    note = page.inputs.checkpoint_note.text()
    assert "XTTS v2 cannot speak with this folder. " in note and str(folder) in note
    assert note.count(str(folder)) == 1 and "Traceback" not in note
    assert page.checkpoint_box.currentData() == chosen and not page.inputs.speaks_with_folder()
    assert page.checkpoint_box.findData(FOLDER_ITEM) == -1 and page.generate_button.isEnabled()
    assert saved_folder(project) == {} and snapshot(folder) == before


def test_cancelling_the_folder_picker_changes_nothing(page, qtbot, monkeypatch, project):
    chosen = page.checkpoint_box.currentData()
    choose_folder(page, qtbot, monkeypatch, "")
    assert page.checkpoint_box.currentData() == chosen and "#c62828" not in page.inputs.checkpoint_note.text()
    assert saved_folder(project) == {}


@pytest.mark.timeout(600)
def test_a_folder_that_vanished_is_said_so(page, qtbot, monkeypatch, project, tmp_path, exported):
    folder = shutil.copytree(exported, tmp_path / "on_a_usb_stick")
    choose_folder(page, qtbot, monkeypatch, folder)
    assert page.inputs.speaks_with_folder()
    shutil.rmtree(folder)  # gone while the page shows it
    page.text_box.setCurrentText("Hello world.")
    rows = len(page.rows)
    page.generate_button.click()
    qtbot.waitUntil(lambda: not page.is_busy(), timeout=GENERATION_TIMEOUT_MS)
    assert f"The model folder {folder} is not there any more." in page.message.text() and len(page.rows) == rows
    assert page.checkpoint_box.findData(FOLDER_ITEM) == -1 and page.selected_checkpoint() is not None

    again = next(_page(qtbot, project))  # opened later: said so, not offered, the best checkpoint speaks
    assert "is not there any more" in again.inputs.checkpoint_note.text()
    assert again.checkpoint_box.findData(FOLDER_ITEM) == -1 and again.selected_checkpoint() is not None
    assert saved_folder(project) == {"xtts": str(folder)}  # kept: a drive plugged in again brings it back


# -- the compare side: any model folder too ----------------------------------------------------------------------

def saved_preview(project, key):
    return json.loads((project / "project.json").read_text()).get("settings", {}).get("preview", {}).get(key, {})


@pytest.fixture
def last_week(exported, tmp_path):
    """An earlier export of the same voice, elsewhere and under the same name (linked files: no copy's cost)."""
    return shutil.copytree(exported, tmp_path / "last_week" / exported.name, copy_function=os.link)


@pytest.mark.timeout(900)
def test_two_model_folders_are_compared_each_named_with_its_wer(page, qtbot, monkeypatch, project, exported,
                                                                last_week):
    """Last week's export beside today's: both chosen with the folder picker and checked by the engine, the takes
    saved in previews/ and named by their folders (the folder above when both have one name), each with its WER;
    the comparison is remembered for the project."""
    before = snapshot(last_week.parent) | snapshot(exported)
    choose_folder(page, qtbot, monkeypatch, exported)
    choose_folder(page, qtbot, monkeypatch, last_week, compare=True)
    assert page.compare_box.currentData() == COMPARE_FOLDER_ITEM and page.compare_box.currentText() == \
        f"model folder · last_week/{last_week.name}"  # both are "mine": the folder above tells them apart
    assert f"Compared with {last_week}: GPT with" in page.compare_note.text() and page.compare_button.isEnabled()
    assert saved_preview(project, "compare_folder") == {"xtts": str(last_week)}
    assert saved_preview(project, "compare_with") == {"xtts": COMPARE_FOLDER_ITEM}

    page.text_box.setCurrentText("Hello world.")
    page.compare_button.click()
    qtbot.waitUntil(lambda: not page.is_busy(), timeout=GENERATION_TIMEOUT_MS)
    row = page.rows[0]
    assert page.message.text() == "" and [t.result.checkpoint_label for t in row.takes] == [str(last_week),
                                                                                             str(exported)]
    assert [t.title.text() for t in row.takes] == [f"<b>Model folder · last_week/{last_week.name}</b>",
                                                   f"<b>Model folder · {exported.parent.name}/{exported.name}</b>"]
    assert all(t.wer_label.text().startswith("WER ") for t in row.takes)  # Whisper heard each
    assert all(t.result.wav.parent == project / "previews" and t.result.wav.is_file() for t in row.takes)
    assert row.takes[0].colour != row.takes[1].colour
    assert snapshot(last_week.parent) | snapshot(exported) == before  # only read

    # Opened again: both folders checked again, the comparison chosen again, the pair one row in its order.
    again = next(_page(qtbot, project))
    qtbot.waitUntil(lambda: not (again.compare_folder.is_checking() or again.inputs.model_folder.is_checking()),
                    timeout=CHECK_TIMEOUT_MS)
    assert again.compare_box.currentData() == COMPARE_FOLDER_ITEM
    assert [t.result.checkpoint_label for t in again.rows[0].takes] == [str(last_week), str(exported)]
    # A checkpoint speaks now: it is compared with last week's folder, and today's is offered too.
    assert not again.inputs.speaks_with_folder() and again.compare_button.isEnabled()
    assert f"model folder · {exported.parent.name}/{exported.name}" in compare_items(again)


def test_a_compare_folder_is_refused_in_words_and_never_loaded_twice(page, qtbot, monkeypatch, project, exported,
                                                                     tmp_path):
    """The folder that speaks is not loaded again to compare with itself; another engine's model, an incomplete
    folder are refused by the same check as the speaking side's, in words; nothing is remembered or written."""
    choose_folder(page, qtbot, monkeypatch, exported)
    chosen = page.compare_box.currentData()
    choose_folder(page, qtbot, monkeypatch, exported, compare=True)
    assert not page.compare_folder.is_checking() and page.compare_folder.check is None  # no check, no load
    assert f"{exported} is the model folder that speaks already" in page.compare_note.text()
    assert page.compare_box.currentData() == chosen and saved_preview(project, "compare_folder") == {}

    from alltalk_gui.core.engine_api.engine import get_engine

    f5 = get_engine("f5").make_test_model(tmp_path / "f5_voice")
    incomplete = tmp_path / "incomplete"
    incomplete.mkdir()
    (incomplete / "config.json").write_bytes((exported / "config.json").read_bytes())
    for folder, said in ((f5, f"{f5} holds a model of another engine, F5-TTS v1"),
                         (incomplete, "XTTS v2 cannot speak with this folder. ")):
        before = snapshot(folder)
        choose_folder(page, qtbot, monkeypatch, folder, compare=True)
        assert said in page.compare_note.text() and "Traceback" not in page.compare_note.text()
        assert page.compare_box.currentData() == chosen and page.compare_box.findData(COMPARE_FOLDER_ITEM) == -1
        assert saved_preview(project, "compare_folder") == {} and snapshot(folder) == before
    assert page.compare_button.isEnabled()  # the comparison chosen before still works
    page.compare_box.activated.emit(page.compare_box.currentIndex())  # the user moves on: the note goes
    assert page.compare_note.isHidden()


def test_a_remembered_compare_folder_that_went_is_said_so(qtbot, project, exported, tmp_path):
    project_file = project / "project.json"
    data = json.loads(project_file.read_text())
    data.setdefault("settings", {})["preview"] = {"compare_folder": {"xtts": str(tmp_path / "unplugged")},
                                                  "compare_with": {"xtts": COMPARE_FOLDER_ITEM}}
    project_file.write_text(json.dumps(data))
    page = next(_page(qtbot, project))
    assert f"The model folder {tmp_path / 'unplugged'} chosen for this project is not there any more" in \
        page.compare_note.text()
    assert page.compare_box.currentData() == "base" and page.compare_button.isEnabled()


def test_two_folders_compare_without_any_checkpoint_or_base_model(qtbot, monkeypatch, project, exported, last_week):
    """Someone who trained nothing here (no checkpoint, no base model chosen) still compares two fine-tunes."""
    shutil.rmtree(project / "runs")
    page = next(_page(qtbot, project))
    assert page.inputs.checkpoints == [] and page._base_model_dir() is None
    choose_folder(page, qtbot, monkeypatch, exported)
    assert page.inputs.speaks_with_folder() and compare_items(page) == ["A model folder…"]
    assert page.compare_box.currentIndex() == -1 and not page.compare_button.isEnabled()
    choose_folder(page, qtbot, monkeypatch, "", compare=True)  # cancelled: still nothing chosen
    assert page.compare_box.currentIndex() == -1
    choose_folder(page, qtbot, monkeypatch, last_week, compare=True)
    assert page.compare_with().model_dir == last_week and page.compare_button.isEnabled()
