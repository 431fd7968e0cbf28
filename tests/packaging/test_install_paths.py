"""Issue 18 item 9: install.sh writes a correct menu entry for paths with &, %, spaces, quotes and backslashes
(a sed replacement turned '&' into the matched text and left '%' as a field code)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.packaging.test_desktop_entry import INSTALL, read_entry


def _exec_argument(value: str) -> str:
    """The program path a launcher reads from an Exec value holding one quoted argument (the spec's rules)."""
    unescaped, i = [], 0
    while i < len(value):  # desktop-file string level: \\ -> \ (\s \n \t \r do not occur here)
        if value[i] == "\\" and i + 1 < len(value):
            unescaped.append({"s": " ", "n": "\n", "t": "\t", "r": "\r"}.get(value[i + 1], value[i + 1]))
            i += 2
        else:
            unescaped.append(value[i])
            i += 1
    text = "".join(unescaped)
    assert text.startswith('"') and text.endswith('"'), value
    out, i, body = [], 0, text[1:-1]
    while i < len(body):  # quoted-argument level: \" \` \$ \\ ; then %% -> %
        if body[i] == "\\":
            out.append(body[i + 1])
            i += 2
        elif body[i] == "%":
            assert body[i + 1] == "%", f"a bare % is a field code: {value}"
            out.append("%")
            i += 2
        else:
            out.append(body[i])
            i += 1
    return "".join(out)


@pytest.mark.parametrize("folder", ["Tom & Jerry", "100% voice", "a $HOME `x` \"q\" b\\c", "x|y&z%%"])
def test_the_entry_survives_awkward_folder_names(tmp_path, fresh_home, folder):
    build = tmp_path / folder / "alltalk-gui"
    build.mkdir(parents=True)
    (build / "alltalk-gui").write_text("#!/bin/sh\n")
    (build / "alltalk-gui").chmod(0o755)
    env = {**fresh_home, "XDG_DATA_HOME": str(tmp_path / "data")}
    done = subprocess.run(["bash", str(INSTALL), "--frozen", str(build)], capture_output=True, text=True, env=env,
                          timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    installed = tmp_path / "data" / "applications" / "alltalk-gui.desktop"
    entry = read_entry(installed)
    assert _exec_argument(entry["Exec"]) == str(build / "alltalk-gui")
    assert entry["TryExec"].replace("\\\\", "\\") == str(build / "alltalk-gui")
    if shutil.which("desktop-file-validate"):
        check = subprocess.run(["desktop-file-validate", str(installed)], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
