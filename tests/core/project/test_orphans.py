"""Issue 29 item 4, the core: which files no recording owns, and what importing or removing them does.

(The real kill mid-import that leaves them is in tests/cli/test_orphans_cli.py and tests/gui/test_orphans_gui.py.)
"""

from __future__ import annotations

import shutil

import soundfile as sf

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.project.orphans import adopt_orphans, find_orphans, remove_orphans
from tests.core.transcript.test_segments_support import RATE, add_source, make_project, voice_like


def _project_with_leftovers(tmp_path):
    project = make_project(tmp_path)
    kept = add_source(project, "kept.wav", voice_like(2.0))
    sf.write(project.sources_dir / "lost.wav", voice_like(2.0, seed=5), RATE)        # copied, never recorded
    shutil.copy(project.sources_dir / "kept.wav", project.sources_dir / "twin.wav")  # the same as a recording
    sf.write(project.audio_dir / "0123456789ab.wav", voice_like(1.0, seed=6), RATE)  # a working copy of nothing
    (project.sources_dir / ".lost2.wav.abc123.wav.tmp").write_bytes(b"RIFF")         # a copy cut off
    project.known_text_dir.mkdir()
    (project.known_text_dir / "0123456789ab.txt").write_text("Nobody's words.\n", encoding="utf-8")
    outside = tmp_path / "elsewhere.wav"
    sf.write(outside, voice_like(1.0, seed=7), RATE)
    (project.sources_dir / "link.wav").symlink_to(outside)  # not the project's own: never touched
    return project, kept, outside


def test_find_lists_what_no_recording_owns(tmp_path):
    project, kept, _outside = _project_with_leftovers(tmp_path)
    found = find_orphans(VoiceProject.open(project.root))
    assert [p.name for p in found.originals] == ["lost.wav", "twin.wav"]
    assert [p.name for p in found.working] == ["0123456789ab.wav"]
    assert [p.name for p in found.scripts] == ["0123456789ab.txt"]
    assert [p.name for p in found.partial] == [".lost2.wav.abc123.wav.tmp"]
    assert "2 recordings (lost.wav, twin.wav)" in found.summary() and "an import was interrupted" in found.summary()
    assert not find_orphans(VoiceProject.open(make_project(tmp_path / "clean").root))


def test_adopt_imports_the_originals_and_clears_the_rest(tmp_path):
    project, kept, outside = _project_with_leftovers(tmp_path)
    report = adopt_orphans(project, find_orphans(project))
    assert [s.name for s in report.imported] == ["lost.wav"] and report.imported[0].original_path == ""
    assert len(report.rejected) == 1 and "already in the project" in report.rejected[0].reason  # the twin
    reopened = VoiceProject.open(project.root)
    assert sorted(s.name for s in reopened.sources) == ["kept.wav", "lost.wav"]
    left = find_orphans(reopened)
    assert [p.name for p in left.originals] == ["twin.wav"]  # back where it was: the user may remove it
    assert not left.working and not left.scripts and not left.partial
    assert outside.is_file() and (project.sources_dir / "link.wav").is_symlink()
    assert not list(project.root.glob(".adopting-*"))


def test_remove_deletes_only_the_leftovers(tmp_path):
    project, kept, outside = _project_with_leftovers(tmp_path)
    before = project.project_file.read_bytes()
    assert remove_orphans(project, find_orphans(project)) == []
    assert not find_orphans(project) and project.project_file.read_bytes() == before
    assert (project.root / kept.file).is_file() and (project.root / kept.audio_file).is_file()
    assert outside.is_file()


def test_originals_waiting_in_an_adopting_folder_after_a_kill_are_found(tmp_path):
    project = make_project(tmp_path)
    waiting = project.root / ".adopting-1a2b3c4d"
    waiting.mkdir()
    sf.write(waiting / "lost.wav", voice_like(2.0, seed=5), RATE)
    found = find_orphans(project)
    assert [p.name for p in found.originals] == ["lost.wav"]
    adopt_orphans(project, found)
    assert [s.name for s in VoiceProject.open(project.root).sources] == ["lost.wav"] and not waiting.exists()
