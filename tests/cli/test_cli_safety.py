"""Issue 18 items 3 and 9 from the command line: a project held by another program is refused with the holder's
name and left unchanged; file names with control characters are printed escaped, never obeyed."""

from __future__ import annotations

import numpy as np
import soundfile as sf

from alltalk_gui.cli import main
from alltalk_gui.cli.printable import EscapingWriter, escape
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.project.lock import LOCK_FILE, ProjectLock


def _tone(path):
    t = np.arange(22050) / 22050
    sf.write(path, (0.3 * np.sin(2 * np.pi * 200 * t)).astype(np.float32), 22050)
    return path


def test_import_into_a_project_held_by_the_app_is_refused_and_changes_nothing(tmp_path, capsys):
    project = VoiceProject.create(tmp_path / "voice")
    before = project.project_file.read_bytes()
    with ProjectLock.acquire(project.root, "AllTalk GUI app"):
        assert main(["import", str(project.root), str(_tone(tmp_path / "a.wav"))]) == 2
    err = capsys.readouterr().err
    assert "is open in AllTalk GUI app (user" in err and "Only one program may change a project" in err
    assert project.project_file.read_bytes() == before and list(project.sources_dir.iterdir()) == []
    # Reading is not writing: listing the sources works while the app holds the project.
    with ProjectLock.acquire(project.root, "AllTalk GUI app"):
        assert main(["sources", str(project.root)]) == 0


def test_a_command_holds_the_lock_while_it_runs_and_gives_it_back(tmp_path, monkeypatch):
    project = VoiceProject.create(tmp_path / "voice")
    seen = []
    from alltalk_gui.core.project import importer  # the command imports it when it runs (fast listing commands)

    real = importer.import_files
    monkeypatch.setattr(importer, "import_files",
                        lambda *a, **k: (seen.append((project.root / LOCK_FILE).read_text()), real(*a, **k))[1])
    assert main(["import", str(project.root), str(_tone(tmp_path / "a.wav"))]) == 0
    assert '"program": "alltalk-gui import"' in seen[0]
    assert not (project.root / LOCK_FILE).exists()


def test_control_characters_in_file_names_are_printed_escaped(tmp_path, capsys):
    project = VoiceProject.create(tmp_path / "voice")
    hostile = _tone(tmp_path / "evil\x1b]0;pwned\x07\x1b[2Jname\u202e.wav")
    assert main(["import", str(project.root), str(hostile)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "evil\\x1b]0;pwned\\x07\\x1b[2Jname\\u202e.wav" in out
    assert main(["sources", str(project.root)]) == 0
    assert "\x1b" not in capsys.readouterr().out


def test_escape_keeps_text_newlines_tabs_and_progress_redraws():
    assert escape("Café — ok\n\tnext") == "Café — ok\n\tnext"
    assert escape("a\rb\x00c\x9b\udcff") == "a\\x0db\\x00c\\x9b\\udcff"

    class Sink:
        text = ""

        def write(self, s):
            Sink.text += s

    writer = EscapingWriter(Sink())
    writer.write("\r  downloading: 50%\x1b[K")
    assert Sink.text == "\r  downloading: 50%\\x1b[K"
