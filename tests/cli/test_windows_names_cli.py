"""A project holding names Windows cannot hold (an earlier version copied recordings under their own names) is
noted by every command that opens it; ``sources --rename-for-windows`` renames the recordings' copies."""

from __future__ import annotations

import os

import numpy as np
import pytest
import soundfile as sf

from alltalk_gui.cli import main
from alltalk_gui.core.project.folder import VoiceProject

pytestmark = pytest.mark.skipif(os.name == "nt", reason="Windows cannot make the name this test needs")


def test_the_note_names_the_file_and_the_command_that_renames_it(tmp_path, capsys):
    project = tmp_path / "voice"
    sf.write(tmp_path / "take.wav", (0.2 * np.sin(np.arange(44100) / 10)).astype("float32"), 22050)
    assert main(["new", str(project), "--language", "en"]) == 0
    assert main(["import", str(project), str(tmp_path / "take.wav")]) == 0
    opened = VoiceProject.open(project)  # as an earlier version named the copy of a recording called 'aux.wav'
    (project / opened.sources[0].file).rename(project / "sources" / "aux.wav")
    opened.sources[0].file = "sources/aux.wav"
    opened.save()
    capsys.readouterr()

    assert main(["sources", str(project)]) == 0
    err = capsys.readouterr().err
    assert "1 name(s) in the project folder cannot be used on Windows" in err
    assert "sources/aux.wav: aux is a device name on Windows" in err
    assert f"'alltalk-gui sources {project} --rename-for-windows' renames the recordings." in err

    assert main(["sources", str(project), "--rename-for-windows"]) == 0
    out = capsys.readouterr().out
    assert "renamed sources/aux.wav -> aux_.wav" in out and "Renamed 1 recording copy(ies)." in out
    assert VoiceProject.open(project).sources[0].file == "sources/aux_.wav"
    assert main(["sources", str(project)]) == 0
    assert "Windows" not in capsys.readouterr().err
