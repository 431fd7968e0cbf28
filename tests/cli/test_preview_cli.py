"""``alltalk-gui checkpoints / preview / export`` on a project trained for a few steps on the tiny model."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import soundfile as sf
import torch

from alltalk_gui.cli import main
from alltalk_gui.core.project.folder import VoiceProject
from tests.trained_voice import trained_voice, whisper_tiny_en


@pytest.fixture(scope="module")
def voice(tmp_path_factory):
    return trained_voice(tmp_path_factory)


def _run(*args):
    return subprocess.run([sys.executable, "-m", "alltalk_gui", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


def test_preview_with_ab_writes_both_wavs(voice, tmp_path):
    out = tmp_path / "hello.wav"
    done = _run("preview", voice.project, "--text", "Hello world.", "--checkpoint", "best", "--out", out, "--ab",
                "--max-new-tokens", "8", "--temperature", "0.6", "--device", "cpu",
                "--whisper-model", whisper_tiny_en())
    assert done.returncode == 0, done.stderr
    for path in (out, tmp_path / "hello_base.wav"):
        data, rate = sf.read(path)
        assert rate == 24000 and data.size > 0, path
    info = json.loads(out.with_suffix(".json").read_text())
    assert info["settings"]["options"]["temperature"] == 0.6 and info["label"] == "fine-tuned"
    assert "fine-tuned:" in done.stdout and "base:" in done.stdout
    assert done.stdout.count(", WER ") == 2 and isinstance(info["wer"], float)


def test_export_then_refuse_to_overwrite(voice, tmp_path):
    done = _run("export", voice.project, "--format", "coqui", "--out", tmp_path, "--half")
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "Test_Voice"  # the project's name
    state = torch.load(folder / "model.pth", map_location="cpu", weights_only=True)["model"]
    assert any(k.startswith("gpt.") for k in state) and "README.md" in done.stdout
    before = (folder / "model.pth").stat().st_mtime_ns

    again = _run("export", voice.project, "--format", "coqui", "--out", tmp_path)
    assert again.returncode == 2 and "not empty" in again.stderr and "--overwrite" in again.stderr
    assert (folder / "model.pth").stat().st_mtime_ns == before


def test_export_uses_the_best_checkpoint_by_default(voice, tmp_path, capsys):
    """The earlier checkpoint has the lower eval loss: export takes it unless told --checkpoint latest."""
    from tests.core.voice.test_preview_checkpoints import _with_eval_losses

    project = _with_eval_losses(voice, tmp_path / "copy", {2: 1.0, 4: 2.0})
    assert main(["export", str(project), "--format", "coqui", "--out", str(tmp_path / "best")]) == 0
    assert "Exporting run1 · step 2, eval loss 1.000" in capsys.readouterr().out
    assert main(["export", str(project), "--format", "coqui", "--out", str(tmp_path / "latest"),
                 "--checkpoint", "latest"]) == 0
    assert "Exporting run1 · step 4, eval loss 2.000" in capsys.readouterr().out


def test_checkpoints_are_listed(voice, capsys):
    assert main(["checkpoints", str(voice.project)]) == 0
    out = capsys.readouterr().out
    assert "run1 · step 2" in out and "run1 · step 4" in out and "(best)" in out


@pytest.mark.parametrize("argv, message", [
    (["preview", "{project}", "--text", "  ", "--out", "{tmp}/a.wav"], "--text is empty"),
    (["preview", "{project}", "--text", "hi", "--out", "{tmp}/a.wav", "--top-p", "2"], "top_p must be"),
    (["preview", "{project}", "--text", "hi", "--out", "{tmp}/a.mp3"], "must name a .wav"),
    (["preview", "{project}", "--text", "hi", "--out", "{tmp}/a.wav", "--reference", "{tmp}/none.wav"],
     "does not exist"),
    (["preview", "{project}", "--text", "hi", "--out", "{tmp}/a.wav", "--checkpoint", "{tmp}"],
     "not a complete training checkpoint"),
    (["preview", "{project}", "--text", "hi", "--out", "{tmp}/a.wav", "--base-model", "{tmp}/gone"],
     "not there any more"),
    (["export", "{project}", "--out", "{tmp}", "--name", "..."], "cannot be used as a folder name"),
    (["preview", "{project}", "--text", "hi", "--out", "{tmp}/a.wav", "--whisper-model", "{tmp}/no_model"],
     "Whisper model for the intelligibility check cannot be used"),
])
def test_bad_inputs_exit_2_with_a_message(voice, tmp_path, capsys, argv, message):
    args = [a.format(project=voice.project, tmp=tmp_path) for a in argv]
    assert main(args) == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_no_checkpoint_yet_exit_2(tmp_path, capsys):
    project = VoiceProject.create(tmp_path / "fresh")
    assert main(["preview", str(project.root), "--text", "hi", "--out", str(tmp_path / "a.wav")]) == 2
    assert "no training checkpoint" in capsys.readouterr().err
    assert main(["export", str(project.root), "--out", str(tmp_path / "models")]) == 2
    assert not (tmp_path / "models").exists() and not (tmp_path / "a.wav").exists()


def test_an_option_two_engines_share_shows_each_engines_help_and_default():
    """Orpheus's and Parler's longest take are both --max-seconds, with their own help and defaults (14.6 and 30 s);
    the help once showed the first engine's alone, so a Parler user read Orpheus's default."""
    from alltalk_gui.cli.preview_cmds import _generation_options, _help

    option, engines = next((o, e) for o, e in _generation_options().items() if o.name == "max_seconds")
    text = " ".join(_help(option, engines).split())
    assert "Orpheus-TTS 3B: At most this much speech" in text and "(default 14.6 unless" in text
    assert "Parler-TTS v1: One generation stops" in text and "(default 30.0 unless" in text
    option, engines = next((o, e) for o, e in _generation_options().items() if o.name == "temperature")
    assert _help(option, engines).count("(default") == len({(o.setting.help, o.default) for _, o in engines})


def test_preview_a_model_folder_that_is_no_run_of_the_project(voice, tmp_path, capsys):
    """``preview --model``: an export of this app (or a fine-tune from another tool) speaks without a run; the folder
    is only read; clashing options and another engine's folder are refused before anything is written."""
    assert main(["export", str(voice.project), "--format", "alltalk", "--out", str(tmp_path / "alltalk"),
                 "--name", "mine"]) == 0
    folder = tmp_path / "alltalk" / "mine"
    before = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    capsys.readouterr()
    out = tmp_path / "takes" / "mine.wav"
    assert main(["preview", str(voice.project), "--text", "Hello world.", "--model", str(folder), "--out", str(out),
                 "--max-new-tokens", "8", "--device", "cpu"]) == 0
    said = capsys.readouterr().out
    assert f"Speaking with the model in {folder} (en): GPT with" in said and f"  model: {out}" in said
    info = json.loads(out.with_suffix(".json").read_text())
    assert info["label"] == "model" and info["checkpoint"] is None and info["checkpoint_label"] == str(folder)
    assert sf.read(out)[0].size > 0
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == before

    refused = tmp_path / "refused.wav"
    assert main(["preview", str(voice.project), "--text", "Hi.", "--model", str(folder), "--ab", "--out",
                 str(refused)]) == 2
    assert "--model speaks with a model folder alone: leave out --ab." in capsys.readouterr().err
    (tmp_path / "f5ish").mkdir()
    (tmp_path / "f5ish" / "model_last.pt").write_bytes(b"x")
    assert main(["preview", str(voice.project), "--text", "Hi.", "--model", str(tmp_path / "f5ish"), "--out",
                 str(refused)]) == 2
    said = capsys.readouterr().err
    assert "XTTS v2 cannot speak with this folder. " in said and said.count(str(tmp_path / "f5ish")) == 1
    assert not refused.exists() and not refused.with_suffix(".json").exists()
