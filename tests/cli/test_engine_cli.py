"""``alltalk-gui new --engine``, ``alltalk-gui engine DIR [NAME]``: a project's engine is chosen, shown and switched,
and a switch judges the clips anew, writes the dataset again at the new engine's rate and says what changed."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import soundfile as sf

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.project.importer import import_files
from alltalk_gui.core.transcript.segments import SegmentList
from tests.core.transcript.test_segments_support import segment, voice_like


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "alltalk_gui", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


def test_new_with_an_engine_and_show_it(tmp_path):
    made = cli("new", tmp_path / "v", "--engine", "f5-tts", "--language", "de")
    assert made.returncode == 0, made.stderr
    assert "(de, F5-TTS v1)" in made.stdout and "English and Chinese only" in made.stdout  # the engine's caveat
    assert json.loads((tmp_path / "v" / "project.json").read_text())["engine"] == "f5"
    shown = cli("engine", tmp_path / "v")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[:2] == ["f5: F5-TTS v1, clips up to 30 s, datasets at 24 kHz", "No dataset yet."]
    refused = cli("new", tmp_path / "w", "--engine", "tortoise")
    assert refused.returncode == 2 and "Unknown engine 'tortoise'" in refused.stderr
    assert not (tmp_path / "w").exists()


def _project(tmp_path) -> VoiceProject:
    """An F5 project with a 48 kHz recording, a 20 s clip F5 takes and XTTS cannot, and two short clips."""
    rate = 48_000
    recording = tmp_path / "reading.wav"
    sf.write(recording, voice_like(40.0, rate), rate)
    project = VoiceProject.create(tmp_path / "voice", engine="f5")
    assert import_files(project, [recording]).rejected == []
    source = project.sources[0].id
    clips = SegmentList.create(project, [
        segment("c00001", source, 0, 20_000, "A long clip that goes on and on, as long as a breath allows."),
        segment("c00002", source, 21_000, 25_000, "A short clip."),
        segment("c00003", source, 26_000, 30_000, "Another short clip."),
    ])
    clips.set_text("c00002", "A short clip, corrected by hand.")  # an edit, which no switch may lose
    clips.close()
    assert cli("dataset", project.root).returncode == 0
    assert sf.info(project.dataset_dir / "wavs" / "c00001.wav").samplerate == 24_000
    return project


def test_switching_rechecks_rewrites_the_dataset_and_says_what_changed(tmp_path):
    project = _project(tmp_path)
    to_xtts = cli("engine", project.root, "xtts")
    assert to_xtts.returncode == 1, to_xtts.stderr  # 1: a clip was left out of the dataset
    out = to_xtts.stdout
    assert "The project now trains with XTTS v2 instead of F5-TTS v1." in out
    assert "1 clip is now too long for XTTS v2 (over 11.6 s): c00001." in out
    assert "The dataset will be written again at 22,050 Hz (it was 24 kHz), from the recordings." in out
    assert "Writing the dataset at 22,050 Hz: 2/2" in out and "left out c00001" in to_xtts.stderr
    assert sorted(p.name for p in (project.dataset_dir / "wavs").iterdir()) == ["c00002.wav", "c00003.wav"]
    assert sf.info(project.dataset_dir / "wavs" / "c00002.wav").samplerate == 22_050
    shown = cli("engine", project.root).stdout
    assert shown.startswith("xtts: XTTS v2, clips up to 11.6 s") and "The dataset fits it (22,050 Hz)." in shown

    back = cli("engine", project.root, "f5")
    assert back.returncode == 0, back.stderr
    assert "1 clip that was too long for XTTS v2 fits F5-TTS v1: c00001." in back.stdout
    assert "written again at 24 kHz (it was 22,050 Hz)" in back.stdout
    assert sorted(p.name for p in (project.dataset_dir / "wavs").iterdir()) == [f"c0000{i}.wav" for i in (1, 2, 3)]
    clips = SegmentList.open(VoiceProject.open(project.root))
    assert clips["c00002"].text == "A short clip, corrected by hand."  # the edit survived two switches
    assert [s.flag_codes for s in clips if "too_long" in s.flag_codes] == []

    same = cli("engine", project.root, "f5-tts")
    assert same.returncode == 0 and same.stdout.strip() == "The project already trains with F5-TTS v1."


def test_a_switch_is_refused_while_another_program_has_the_project(tmp_path):
    from alltalk_gui.core.project.lock import ProjectLock

    project = VoiceProject.create(tmp_path / "voice")
    before = project.project_file.read_bytes()
    with ProjectLock.acquire(project.root, "AllTalk GUI app"):
        refused = cli("engine", project.root, "f5")
        shown = cli("engine", project.root)  # showing needs no lock
    assert refused.returncode == 2 and "is open in AllTalk GUI app" in refused.stderr
    assert shown.returncode == 0 and shown.stdout.startswith("xtts:")
    assert project.project_file.read_bytes() == before


def test_switching_to_an_engine_that_cannot_speak_the_language_says_so(tmp_path, capsys):
    """As 'new --engine' does: a German project switched to Orpheus or Parler hears the engine's caveat then,
    not only when its training starts."""
    from alltalk_gui.cli import main

    root = str(tmp_path / "de")
    assert main(["new", root, "--language", "de"]) == 0
    for name, caveat in (("orpheus", "trained on English speech"), ("parler", "trained on English only")):
        capsys.readouterr()
        assert main(["engine", root, name]) == 0
        assert caveat in capsys.readouterr().out
    capsys.readouterr()
    assert main(["engine", root, "xtts"]) == 0
    assert "trained on English" not in capsys.readouterr().out  # XTTS v2 speaks German: nothing to say
