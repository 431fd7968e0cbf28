"""The commands the CLI suggests can be pasted back into a shell as they are, also for a project folder whose name
has spaces or quotes (a "Review them with: alltalk-gui segments /home/me/My Voice --flagged" split the folder in
two)."""

from __future__ import annotations

import shlex

from alltalk_gui.cli import main

AWKWARD = "My Voice (Anne's) ä"


def _suggested(output: str, marker: str) -> list[str]:
    line = next(line for line in output.splitlines() if marker in line)
    return shlex.split(line[line.index("alltalk-gui"):])


def test_suggested_commands_keep_the_project_folder_whole(tmp_path, capsys):
    root = str(tmp_path / AWKWARD)
    assert main(["new", root]) == 0
    capsys.readouterr()
    assert main(["segments", root]) == 0
    assert _suggested(capsys.readouterr().out, "Make them with:") == ["alltalk-gui", "transcribe", root]
    assert main(["engine", root]) == 0
    words = _suggested(capsys.readouterr().out, "Switch with:")
    assert words[:3] == ["alltalk-gui", "engine", root] and len(words) == 4
