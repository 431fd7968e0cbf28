"""A project made on Linux (or by a version that copied recordings under their own names) is checked for names
Windows cannot hold when it is opened: each is said with why, and the recordings' copies are renamed on request
with project.json following."""

from __future__ import annotations

import os

import numpy as np
import pytest
import soundfile as sf

from alltalk_gui.core.project.errors import ProjectError
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.project.importer import import_files
from alltalk_gui.core.project.windows_names import rename_recordings, summary, windows_name_problems, worth_saying

pytestmark = pytest.mark.skipif(os.name == "nt", reason="Windows cannot make the names these tests need")


def _tone(path, amplitude):
    t = np.arange(22050 * 2) / 22050
    sf.write(path, (amplitude * np.sin(2 * np.pi * 220 * t)).astype("float32"), 22050)
    return path


@pytest.fixture
def old_project(tmp_path):
    """Three recordings whose copies carry the names an earlier version gave them (the file's own name), as
    project.json records them: 'take:1.wav', 'aux.wav' and 'anna.wav' beside 'Anna.wav'; and a folder 'notes.'
    of the user's with a file inside."""
    project = VoiceProject.create(tmp_path / "voice", name="Voice")
    files = [_tone(tmp_path / f"{n}.wav", a) for n, a in (("a", 0.1), ("b", 0.2), ("c", 0.3), ("d", 0.4))]
    report = import_files(project, files)
    assert not report.rejected
    for source, old_name in zip(project.sources, ["take:1.wav", "aux.wav", "Anna.wav", "anna.wav"]):
        (project.root / source.file).rename(project.sources_dir / old_name)
        source.file = f"sources/{old_name}"
    project.save()
    (project.root / "notes.").mkdir()
    (project.root / "notes." / "why?.txt").write_text("mine", encoding="utf-8")
    return VoiceProject.open(project.root)


def test_every_name_windows_cannot_hold_is_found_saying_why(old_project):
    problems = windows_name_problems(old_project)
    assert [(p.path, p.recording) for p in problems] == [
        ("notes.", False), ("sources/anna.wav", True), ("sources/aux.wav", True), ("sources/take:1.wav", True)]
    why = {p.path: p.why for p in problems}
    assert why["sources/take:1.wav"] == "Windows does not allow : in a name"
    assert why["sources/aux.wav"] == "aux is a device name on Windows"
    assert "differ only by case" in why["sources/anna.wav"] and "Anna.wav" in why["sources/anna.wav"]
    assert why["notes."] == "Windows drops a dot or space at the end of a name"  # its contents are not repeated
    text = summary(problems)
    assert text.startswith("4 name(s) in the project folder cannot be used on Windows")
    assert "  sources/take:1.wav: Windows does not allow : in a name" in text
    assert "let the app rename the 3 recording copy(ies)" in text and "rename the other 1 yourself" in text


def test_a_project_with_portable_names_has_nothing_to_say(tmp_path):
    project = VoiceProject.create(tmp_path / "voice", name="Voice")
    import_files(project, [_tone(tmp_path / "what?.wav", 0.2), _tone(tmp_path / "con.wav", 0.3)])
    assert windows_name_problems(project) == [] and summary([]) == ""


def test_the_recordings_are_renamed_and_project_json_follows(old_project):
    before = {s.id: (old_project.root / s.file).read_bytes() for s in old_project.sources}
    renamed = rename_recordings(old_project)
    assert renamed == ["sources/take:1.wav -> take_1.wav", "sources/aux.wav -> aux_.wav",
                       "sources/anna.wav -> anna-2.wav"]
    reopened = VoiceProject.open(old_project.root)
    assert [s.file for s in reopened.sources] == ["sources/take_1.wav", "sources/aux_.wav", "sources/Anna.wav",
                                                  "sources/anna-2.wav"]
    assert {s.id: (reopened.root / s.file).read_bytes() for s in reopened.sources} == before
    assert [p.path for p in windows_name_problems(reopened)] == ["notes."]  # the user's own folder is theirs


def test_a_failed_save_renames_everything_back(old_project, monkeypatch):
    files = sorted(p.name for p in old_project.sources_dir.iterdir())

    def full_disk():
        raise ProjectError("No space left on the disk.")

    monkeypatch.setattr(old_project, "save", full_disk)
    with pytest.raises(ProjectError, match="could not be renamed: No space left"):
        rename_recordings(old_project)
    assert sorted(p.name for p in old_project.sources_dir.iterdir()) == files
    assert [s.file for s in old_project.sources] == ["sources/take:1.wav", "sources/aux.wav", "sources/Anna.wav",
                                                     "sources/anna.wav"]


def test_recordings_a_copy_to_windows_lost_are_said_with_where_to_rename_them(old_project):
    """What Windows' copy leaves: project.json names 'sources/take:1.wav', the folder lacks it."""
    (old_project.root / "sources" / "take:1.wav").unlink()
    problems = windows_name_problems(old_project)
    lost = [p for p in problems if p.missing]
    assert [(p.path, p.why) for p in lost] == [("sources/take:1.wav", "Windows does not allow : in a name")]
    text = summary(problems)
    assert "the 1 recording(s) named but not in the folder were lost when the project was copied" in text
    assert "let the app rename the 2 recording copy(ies)" in text
    assert rename_recordings(old_project) == ["sources/aux.wav -> aux_.wav", "sources/anna.wav -> anna-2.wav"]


def test_elsewhere_than_windows_only_the_apps_own_copies_make_it_worth_saying(old_project, monkeypatch):
    """On Linux a project whose only such name is the user's own ('notes.') is not nagged about at each opening,
    and its folder is not walked to find that out; on Windows it is said, and wherever the app's own recording
    copies have such names, everything is said."""
    from alltalk_gui.core.project import windows_names

    problems = windows_name_problems(old_project)
    assert worth_saying(old_project, on_windows=False) == problems == worth_saying(old_project, on_windows=True)
    rename_recordings(old_project)
    reopened = VoiceProject.open(old_project.root)
    left = windows_name_problems(reopened)
    assert [p.path for p in left] == ["notes."]
    assert worth_saying(reopened, on_windows=True) == left
    monkeypatch.setattr(windows_names.os, "walk", lambda *a, **k: pytest.fail("walked the project folder"))
    assert worth_saying(reopened, on_windows=False) == []
