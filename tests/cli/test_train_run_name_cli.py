"""``alltalk-gui train --run NAME`` takes plain run names only: a path could write outside the project's runs/."""

from __future__ import annotations

import pytest

from alltalk_gui.cli import main


@pytest.mark.parametrize("name", ["../outside", "a/b", "..\\x", "/tmp/abs"])
def test_a_run_name_with_path_separators_is_refused_before_anything_is_written(tmp_path, capsys, name):
    project = tmp_path / "voice"
    assert main(["new", str(project), "--language", "en"]) == 0
    code = main(["train", str(project), "--base-model", str(tmp_path / "base"), "--run", name])
    assert code == 2
    assert "not a plain folder name" in capsys.readouterr().err
    assert not (project / "runs").exists() and not (tmp_path / "outside").exists()


def test_resume_without_any_run_says_so(tmp_path, capsys):
    project = tmp_path / "voice"
    assert main(["new", str(project)]) == 0
    assert main(["train", str(project), "--base-model", str(tmp_path / "base"), "--resume"]) == 2
    assert "holds no run with checkpoints" in capsys.readouterr().err


@pytest.mark.parametrize("name, said", [("CON", "CON is a device name on Windows"),
                                        ("take?", "Windows does not allow ? in a name"),
                                        ("r" * 60, "has 60 characters; at most 59")])
def test_a_run_name_windows_cannot_hold_is_refused_saying_why(tmp_path, capsys, name, said):
    project = tmp_path / "voice"
    assert main(["new", str(project), "--language", "en"]) == 0
    assert main(["train", str(project), "--base-model", str(tmp_path / "base"), "--run", name]) == 2
    assert said in capsys.readouterr().err
    assert not (project / "runs").exists()


def test_an_existing_run_with_a_name_over_the_new_limit_still_resumes_by_name(tmp_path, capsys):
    """A run named under the older limit (100 characters) is not refused when --run names it again: only a name for
    a new run is held to the shorter one (the message a refused name would give is not said)."""
    project = tmp_path / "voice"
    assert main(["new", str(project), "--language", "en"]) == 0
    (project / "runs" / ("r" * 80)).mkdir(parents=True)
    assert main(["train", str(project), "--base-model", str(tmp_path / "base"), "--run", "r" * 80]) == 2
    said = "".join(capsys.readouterr())
    assert "base-model folder" in said and "characters; at most" not in said  # past the name, at the next check
