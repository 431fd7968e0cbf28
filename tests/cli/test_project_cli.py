"""The project commands, run as a user runs them: a real ``alltalk-gui`` process."""

import json
import subprocess
import sys

import numpy as np
import soundfile as sf

from alltalk_gui.cli import main


def _run(*args):
    return subprocess.run([sys.executable, "-m", "alltalk_gui", *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def _tone(path, seconds=2.5):
    t = np.arange(int(seconds * 22050)) / 22050
    sf.write(path, (0.3 * np.sin(2 * np.pi * 200 * t)).astype("float32"), 22050)
    return path


def test_new_import_sources_round_trip(tmp_path):
    project = tmp_path / "voice"
    done = _run("new", project, "--name", "My voice", "--language", "de")
    assert done.returncode == 0, done.stderr
    assert "My voice" in done.stdout
    a = _tone(tmp_path / "a.wav")
    b = _tone(tmp_path / "b.flac", seconds=3.0)
    done = _run("import", project, a, b)
    assert done.returncode == 0, done.stderr
    assert "2 imported, 0 rejected" in done.stdout
    assert "record about" in done.stdout  # 5.5 s is under the 3-minute guidance

    listed = _run("sources", project, "--json")
    assert listed.returncode == 0
    rows = json.loads(listed.stdout)
    assert [r["name"] for r in rows] == ["a.wav", "b.flac"]
    for row in rows:
        assert {"name", "duration_s", "sample_rate", "channels", "verdict", "reasons"} <= set(row)
    assert rows[1]["duration_s"] == 3.0 and rows[1]["sample_rate"] == 22050 and rows[1]["channels"] == 1

    table = _run("sources", project)
    assert table.returncode == 0 and "a.wav" in table.stdout and "verdict" in table.stdout


def test_some_rejected_exits_1_and_keeps_the_rest(tmp_path, capsys):
    project = tmp_path / "voice"
    assert main(["new", str(project)]) == 0
    good = _tone(tmp_path / "good.wav")
    bad = tmp_path / "bad.wav"
    bad.write_text("hello")
    assert main(["import", str(project), str(good), str(bad)]) == 1
    err = capsys.readouterr().err
    # The app's plain words first (the walk found the CLI in decoder jargon), the decoders' own on a line below.
    assert "rejected bad.wav could not be read as a recording: the file is damaged" in err
    assert "\n    (" in err and "libsndfile" in err
    assert main(["sources", str(project), "--json"]) == 0
    assert [r["name"] for r in json.loads(capsys.readouterr().out)] == ["good.wav"]


def test_usage_and_project_errors_exit_2(tmp_path):
    assert _run("import", tmp_path / "no project here", tmp_path).returncode == 2
    broken = tmp_path / "broken"
    assert _run("new", broken).returncode == 0
    (broken / "project.json").write_text("{ nope", encoding="utf-8")
    done = _run("sources", broken)
    assert done.returncode == 2 and "not valid JSON" in done.stderr
    assert (broken / "project.json").read_text(encoding="utf-8") == "{ nope"
    assert _run("new", broken).returncode == 2  # refuses to create over an existing project
    assert _run("no-such-command").returncode == 2
    assert _run("new").returncode == 2


def test_console_script_and_module_are_the_same_entry():
    from importlib.metadata import entry_points

    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "alltalk-gui"]
    assert script.value == "alltalk_gui.__main__:main"
