"""Issue 18 item 3: one writer per project. Two handles on one project lost an import; with the lock the second
opener is told who holds the project, may open it read-only, and nothing is lost."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import numpy as np
import psutil
import pytest
import soundfile as sf

from alltalk_gui.core.project.folder import ProjectError, VoiceProject
from alltalk_gui.core.project.importer import import_files
from alltalk_gui.core.project.lock import (LOCK_FILE, ProjectLock, ProjectLockedError, break_lock, read_holder)


def _tone(path, hz):
    t = np.arange(22050) / 22050
    sf.write(path, (0.3 * np.sin(2 * np.pi * hz * t)).astype(np.float32), 22050)
    return path


@pytest.fixture
def root(tmp_path):
    return VoiceProject.create(tmp_path / "voice").root


def test_two_unlocked_handles_lose_an_import_and_the_lock_prevents_it(root, tmp_path):
    a, b = _tone(tmp_path / "a.wav", 200), _tone(tmp_path / "b.wav", 300)
    # The accident, as reported: two handles, each saving its own in-memory list of sources.
    first, second = VoiceProject.open(root), VoiceProject.open(root)
    import_files(first, [a])
    import_files(second, [b])
    assert [s.name for s in VoiceProject.open(root).sources] == ["b.wav"]
    assert sorted(p.name for p in (root / "sources").iterdir()) == ["a.wav", "b.wav"]

    fresh = VoiceProject.create(tmp_path / "fresh").root
    first, second = VoiceProject.open(fresh), VoiceProject.open(fresh)
    first.take_lock("AllTalk GUI app")
    with pytest.raises(ProjectLockedError) as caught:
        second.take_lock("alltalk-gui import")
    message = str(caught.value)
    assert f"is open in AllTalk GUI app (user " in message and f"on {socket.gethostname()}, process {os.getpid()}" \
        in message and "open the project read-only" in message
    second.read_only = True
    import_files(first, [a])
    with pytest.raises(ProjectError, match="open read-only .* nothing was changed"):
        import_files(second, [b])
    assert [s.name for s in VoiceProject.open(fresh).sources] == ["a.wav"]
    assert sorted(p.name for p in (fresh / "sources").iterdir()) == ["a.wav"]
    first.release_lock()
    second.take_lock("alltalk-gui import")  # free again once the first closed
    assert read_holder(fresh).program == "alltalk-gui import"
    second.release_lock()
    assert not (fresh / LOCK_FILE).exists()


def test_a_lock_held_by_another_process_names_it_and_is_broken_once_that_process_is_killed(root):
    code = ("import sys, time; from alltalk_gui.core.project.lock import ProjectLock; "
            f"ProjectLock.acquire({str(root)!r}, 'alltalk-gui train'); print('held', flush=True); time.sleep(60)")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": os.getcwd()})
    try:
        assert child.stdout.readline().strip() == "held"
        with pytest.raises(ProjectLockedError, match=f"alltalk-gui train .*process {child.pid}"):
            ProjectLock.acquire(root, "AllTalk GUI app")
    finally:
        child.kill()
        child.wait()
    with ProjectLock.acquire(root, "AllTalk GUI app") as lock:  # a crashed holder never blocks the project
        assert read_holder(root).pid == os.getpid() and lock.holder.program == "AllTalk GUI app"
    assert not (root / LOCK_FILE).exists()


def _write_lock(root, **changes):
    me = psutil.Process()
    data = {"program": "AllTalk GUI app", "pid": me.pid, "host": socket.gethostname(), "user": "someone",
            "since": "2026-11-23T00:00:00+00:00", "started": me.create_time(), "token": "x", **changes}
    (root / LOCK_FILE).write_text(json.dumps(data), encoding="utf-8")


def test_a_reused_pid_is_a_stale_lock(root):
    _write_lock(root, started=psutil.Process().create_time() - 3600)  # our pid, but a process from an hour ago
    ProjectLock.acquire(root, "alltalk-gui import").release()


def test_a_lock_from_another_computer_is_never_broken_automatically(root):
    _write_lock(root, host="other-machine", pid=1)
    with pytest.raises(ProjectLockedError, match="on other-machine"):
        ProjectLock.acquire(root, "alltalk-gui import")
    break_lock(root)  # on the user's word
    ProjectLock.acquire(root, "alltalk-gui import").release()


def test_an_empty_lock_file_is_in_progress_when_new_and_stale_when_old(root):
    (root / LOCK_FILE).write_text("", encoding="utf-8")
    with pytest.raises(ProjectLockedError, match="its lock file cannot be read"):
        ProjectLock.acquire(root, "alltalk-gui import")
    old = time.time() - 60
    os.utime(root / LOCK_FILE, (old, old))
    ProjectLock.acquire(root, "alltalk-gui import").release()


def test_release_leaves_a_lock_that_somebody_else_holds_now(root):
    lock = ProjectLock.acquire(root, "AllTalk GUI app")
    _write_lock(root, program="alltalk-gui train")  # ours was broken and taken over
    lock.release()
    assert read_holder(root).program == "alltalk-gui train"


def test_a_read_only_project_refuses_to_save(root):
    project = VoiceProject.open(root)
    project.read_only = True
    with pytest.raises(ProjectError, match="open read-only"):
        project.save()


def test_a_read_only_project_refuses_transcript_edits_and_dataset_exports(tmp_path):
    from alltalk_gui.core.dataset.export import export_dataset
    from alltalk_gui.core.transcript.segments import SegmentEditError, SegmentList
    from tests.core.transcript.test_segments_support import add_source, make_project, segment, voice_like

    project = make_project(tmp_path)
    add_source(project, "take.wav", voice_like(4.0))
    SegmentList.create(project, [segment("c00001", "s001", 0, 3000, "The first clip of my voice.")])
    before = project.segments_file.read_bytes()
    viewer = VoiceProject.open(project.root)
    viewer.read_only = True
    clips = SegmentList.open(viewer)
    assert clips["c00001"].text == "The first clip of my voice."  # reading works
    with pytest.raises(SegmentEditError, match="open read-only"):
        clips.set_text("c00001", "Changed.")
    assert clips["c00001"].text == "The first clip of my voice." and project.segments_file.read_bytes() == before
    with pytest.raises(ProjectError, match="open read-only"):
        export_dataset(viewer)
    assert not viewer.dataset_dir.exists()
