"""Issue 29 item 4: what a killed import leaves is found on the next open and, with consent, imported or removed.

A real ``alltalk-gui import`` of a folder of recordings is killed (SIGKILL) while it has copied files into the
project that project.json does not list yet. The next command says so (and how to clean up);
``alltalk-gui sources DIR --clean import`` adds them as recordings under their own names, ``--clean remove``
deletes them; without ``--clean`` nothing is touched.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import soundfile as sf

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.project.orphans import find_orphans
from tests.core.transcript.test_segments_support import RATE, voice_like

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL of a process mid-import (POSIX)")


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "alltalk_gui", *args], capture_output=True, text=True, timeout=300)


def recordings(folder: Path, count: int = 40) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        sf.write(folder / f"take_{i:02d}.wav", voice_like(1.5, seed=i), RATE)
    return folder


def _listed(root: Path) -> int:
    try:
        return len(json.loads((root / "project.json").read_text(encoding="utf-8"))["sources"])
    except (OSError, ValueError, KeyError):
        return -1  # being replaced at this moment


def killed_import(root: Path, folder: Path) -> None:
    """Run ``alltalk-gui import`` and SIGKILL it at a moment when it has copied files that project.json does not
    list (it saves every 100 files or 2 s); tries again if the kill came just after a save."""
    for _attempt in range(5):
        process = subprocess.Popen([sys.executable, "-m", "alltalk_gui", "import", str(root), str(folder)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.time() + 240
            while process.poll() is None and time.time() < deadline:
                copies = [p for p in (root / "sources").iterdir() if not p.name.startswith(".")]
                if len(copies) >= 3 and len(copies) > _listed(root) >= 0:
                    os.kill(process.pid, signal.SIGKILL)
                    break
                time.sleep(0.01)
        finally:
            process.kill()
            process.wait()
        if find_orphans(VoiceProject.open(root)).originals:
            return
    pytest.fail("the import could not be caught between two saves of project.json")


@pytest.fixture
def killed(tmp_path):
    root = VoiceProject.create(tmp_path / "voice").root
    folder = recordings(tmp_path / "takes")
    killed_import(root, folder)
    project = VoiceProject.open(root)
    orphans = find_orphans(project)
    listed = {s.name for s in project.sources}
    return root, folder, orphans, listed


def test_the_next_command_lists_them_and_touches_nothing(killed):
    root, _folder, orphans, listed = killed
    before = sorted(p.name for p in (root / "sources").iterdir())
    assert orphans.originals and not ({p.name for p in orphans.originals} & listed)
    assert all(p.parent == root / "sources" for p in orphans.originals)

    result = cli("sources", str(root))
    assert result.returncode == 0
    assert f"{len(orphans.originals)} recording" in result.stderr and "an import was interrupted" in result.stderr
    assert "--clean import" in result.stderr and "--clean remove" in result.stderr
    assert sorted(p.name for p in (root / "sources").iterdir()) == before  # listed, not touched


def test_clean_import_adds_them_as_recordings_under_their_own_names(killed):
    root, folder, orphans, listed = killed
    names = {p.name for p in orphans.originals}
    result = cli("sources", str(root), "--clean", "import")
    assert result.returncode == 0, result.stderr
    project = VoiceProject.open(root)
    assert {s.name for s in project.sources} == listed | names
    assert {Path(s.file).name for s in project.sources if s.name in names} == names  # no "-2" copies
    assert not find_orphans(project)
    assert all((root / s.audio_file).is_file() for s in project.sources)
    # Dropping the folder again: every file that got in is refused as already there, the rest come in.
    again = cli("import", str(root), str(folder))
    assert again.returncode in (0, 1)
    assert len(VoiceProject.open(root).sources) == len(list(folder.iterdir()))
    assert "note:" not in again.stderr


def test_clean_remove_deletes_them_and_the_project_is_as_it_was(killed):
    root, _folder, orphans, listed = killed
    project_json = (root / "project.json").read_bytes()
    result = cli("sources", str(root), "--clean", "remove")
    assert result.returncode == 0, result.stderr
    assert f"Removed {len(orphans.files)} file(s)." in result.stdout
    assert (root / "project.json").read_bytes() == project_json
    assert not find_orphans(VoiceProject.open(root))
    assert all(not p.exists() for p in orphans.files)


def test_a_clean_project_has_nothing_to_clean(tmp_path):
    root = VoiceProject.create(tmp_path / "voice").root
    result = cli("sources", str(root), "--clean", "remove")
    assert result.returncode == 0 and "Nothing to clean" in result.stdout
