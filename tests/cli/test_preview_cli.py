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
    assert "  Fine-tuned · run1 · step " in done.stdout and "  Base model: " in done.stdout
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
     "--base-model: there is no folder"),
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
    assert f"Speaking with the model in {folder} (en): GPT with" in said and f"  Model folder · mine: {out}" in said
    info = json.loads(out.with_suffix(".json").read_text())
    assert info["label"] == "model" and info["checkpoint"] is None and info["checkpoint_label"] == str(folder)
    assert sf.read(out)[0].size > 0
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == before

    refused = tmp_path / "refused.wav"
    assert main(["preview", str(voice.project), "--text", "Hi.", "--model", str(folder), "--run", "run1", "--out",
                 str(refused)]) == 2
    assert "--model speaks with a model folder alone: leave out --run." in capsys.readouterr().err
    assert main(["preview", str(voice.project), "--text", "Hi.", "--model", str(folder), "--ab", "--out",
                 str(refused)]) == 2
    assert "--ab with --model compares the folder with the base model: name the base model's folder with " \
           "--base-model DIR." in capsys.readouterr().err
    (tmp_path / "f5ish").mkdir()
    (tmp_path / "f5ish" / "model_last.pt").write_bytes(b"x")
    assert main(["preview", str(voice.project), "--text", "Hi.", "--model", str(tmp_path / "f5ish"), "--out",
                 str(refused)]) == 2
    said = capsys.readouterr().err
    assert "XTTS v2 cannot speak with this folder. " in said and said.count(str(tmp_path / "f5ish")) == 1
    assert not refused.exists() and not refused.with_suffix(".json").exists()


@pytest.fixture(scope="module")
def exports(voice, tmp_path_factory):
    """Two AllTalk exports of the trained voice, as last week's and today's would be."""
    root = tmp_path_factory.mktemp("exports")
    for name in ("last_week", "today"):
        assert main(["export", str(voice.project), "--format", "alltalk", "--out", str(root), "--name", name]) == 0
    return root / "last_week", root / "today"


def test_compare_model_speaks_both_sides_with_their_names_and_wer(voice, exports, tmp_path, capsys):
    """``--compare-model``: the checkpoint beside a model folder, and one model folder beside another (``--model``),
    or beside the base model (``--model --ab --base-model``), the same seed; each take named by the voice that spoke
    it, each with its WER; the folders are only read."""
    last_week, today = exports
    before = {p: p.stat().st_mtime_ns for folder in exports for p in folder.iterdir()}
    capsys.readouterr()
    out = tmp_path / "ab.wav"
    assert main(["preview", str(voice.project), "--text", "Hello world.", "--compare-model", str(last_week),
                 "--out", str(out), "--max-new-tokens", "8", "--device", "cpu",
                 "--whisper-model", whisper_tiny_en()]) == 0
    said = capsys.readouterr().out
    assert f"Comparing with the model in {last_week}: GPT with" in said
    assert f"  Model folder · last_week: {tmp_path / 'ab_compare.wav'}" in said
    assert "  Fine-tuned · run1 · step " in said and said.count(", WER ") == 2
    left, right = (json.loads((tmp_path / name).read_text()) for name in ("ab_compare.json", "ab.json"))
    assert (left["label"], left["checkpoint_label"], left["position"]) == ("model", str(last_week), 0)
    assert (right["label"], right["position"]) == ("fine-tuned", 1) and left["pair"] == right["pair"] == "ab"
    assert left["settings"] == right["settings"] and isinstance(left["wer"], float) and isinstance(right["wer"], float)

    out = tmp_path / "folders.wav"
    assert main(["preview", str(voice.project), "--text", "Hello world.", "--model", str(today),
                 "--compare-model", str(last_week), "--out", str(out), "--max-new-tokens", "8", "--device", "cpu"]) == 0
    said = capsys.readouterr().out
    assert f"  Model folder · last_week: {tmp_path / 'folders_compare.wav'}" in said
    assert f"  Model folder · today: {out}" in said
    assert sf.read(out)[0].size > 0 and sf.read(tmp_path / "folders_compare.wav")[0].size > 0

    out = tmp_path / "against_base.wav"  # a folder beside the base model it was fine-tuned from
    assert main(["preview", str(voice.project), "--text", "Hello world.", "--model", str(today), "--ab",
                 "--base-model", str(voice.base_model), "--out", str(out), "--max-new-tokens", "8",
                 "--device", "cpu"]) == 0
    said = capsys.readouterr().out
    assert f"Comparing with the base model in {voice.base_model}: GPT with" in said
    assert f"  Base model: {tmp_path / 'against_base_base.wav'}" in said and f"  Model folder · today: {out}" in said
    assert {p: p.stat().st_mtime_ns for folder in exports for p in folder.iterdir()} == before


def _incomplete(tmp_path, exports):
    folder = tmp_path / "inputs" / "incomplete"
    folder.mkdir(parents=True)
    for name in ("config.json", "vocab.json"):  # no model.pth
        (folder / name).write_bytes((exports[0] / name).read_bytes())
    return folder


def _a_file(tmp_path, exports):
    (tmp_path / "inputs").mkdir()
    (tmp_path / "inputs" / "model.pth").write_bytes(b"x")
    return tmp_path / "inputs" / "model.pth"


def _f5_model(tmp_path, exports):
    from alltalk_gui.core.engine_api.engine import get_engine

    return get_engine("f5").make_test_model(tmp_path / "inputs" / "f5_voice")


BAD_FOLDERS = [
    (lambda tmp_path, exports: tmp_path / "inputs" / "typo", "There is no folder {folder}: check the path."),
    (_a_file, "{folder} is a file, not a model folder."),
    (_incomplete, "XTTS v2 cannot speak with this folder. "),
    (_f5_model, "{folder} holds a model of another engine, F5-TTS v1 (DiT with 2 layers"),
]
SAME_FOLDER = (lambda tmp_path, exports: exports[0], "names {folder}, the folder --model speaks with")
OTHER_SIDE = {"--compare-model": ["--model", "{0}"], "--model": ["--compare-model", "{1}"],
              "--base-model": ["--model", "{0}", "--ab"], "beside the checkpoint": []}  # the side compared with


def _files(folder):
    return {p: p.stat().st_mtime_ns for p in folder.rglob("*")} if folder.exists() else {}


@pytest.mark.parametrize("side, make, message", [(side, *case) for side in ("--compare-model", "--base-model")
                                                  for case in [*BAD_FOLDERS, SAME_FOLDER]]
                         + [(side, *case) for side in ("--model", "beside the checkpoint") for case in BAD_FOLDERS])
def test_bad_model_folders_are_refused_in_words_and_nothing_is_written(voice, exports, tmp_path, capsys, side, make,
                                                                      message):
    """Each side's folder is checked as typed, before anything loads: a typo is said not to exist (not to have
    gone), a file, an incomplete folder and another engine's model are refused in words; nothing is written."""
    folder = make(tmp_path, exports)
    inputs = _files(tmp_path / "inputs")
    out = tmp_path / "takes" / "a.wav"
    other = [arg.format(*exports) for arg in OTHER_SIDE[side]]
    flag = "--compare-model" if side == "beside the checkpoint" else side
    assert main(["preview", str(voice.project), "--text", "Hi.", flag, str(folder), *other, "--out", str(out),
                 "--max-new-tokens", "8", "--device", "cpu"]) == 2
    said = capsys.readouterr().err
    assert message.format(folder=folder) in said and "Traceback" not in said and "not there any more" not in said
    if make is SAME_FOLDER[0]:
        assert said.startswith(f"alltalk-gui: {side} names")
    assert not (tmp_path / "takes").exists() and _files(tmp_path / "inputs") == inputs


def test_ab_and_compare_model_are_one_choice(voice, exports, tmp_path, capsys):
    assert main(["preview", str(voice.project), "--text", "Hi.", "--ab", "--compare-model", str(exports[0]),
                 "--out", str(tmp_path / "a.wav")]) == 2
    assert "--ab and --compare-model each choose what the take is compared with: give one." in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def two_checkpoints(voice, tmp_path_factory):
    """A copy of the trained project whose earlier checkpoint (step 2) has the lower eval loss: best is step 2,
    latest step 4."""
    from tests.core.voice.test_preview_checkpoints import _with_eval_losses

    return _with_eval_losses(voice, tmp_path_factory.mktemp("two_checkpoints"), {2: 1.0, 4: 2.0})


def test_compare_checkpoint_speaks_two_checkpoints_of_the_run_with_their_wer(two_checkpoints, tmp_path, capsys):
    """``--checkpoint latest --compare-checkpoint best``: the latest checkpoint into FILE.wav, the best beside it into
    FILE_compare.wav (the left of the pair, as with --compare-model), the same settings and seed, each with its WER;
    ``--compare-run RUN`` alone compares with that run's best."""
    out = tmp_path / "a.wav"
    assert main(["preview", str(two_checkpoints), "--text", "Hello world.", "--checkpoint", "latest",
                 "--compare-checkpoint", "best", "--out", str(out), "--max-new-tokens", "8", "--device", "cpu",
                 "--whisper-model", whisper_tiny_en()]) == 0
    said = capsys.readouterr().out
    assert "Compared checkpoint: step 2: the lowest eval loss (1.000)" in said
    assert "Comparing with run1 · step 2, eval loss 1.000" in said
    assert f"  Fine-tuned · run1 · step 2, eval loss 1.000: {tmp_path / 'a_compare.wav'}" in said
    assert f"  Fine-tuned · run1 · step 4, eval loss 2.000: {out}" in said and said.count(", WER ") == 2
    left, right = (json.loads((tmp_path / name).read_text()) for name in ("a_compare.json", "a.json"))
    assert (left["label"], left["checkpoint"].endswith("step_0000002"), left["position"]) == ("fine-tuned", True, 0)
    assert (right["label"], right["checkpoint"].endswith("step_0000004"), right["position"]) == ("fine-tuned", True, 1)
    assert left["pair"] == right["pair"] == "a" and left["settings"] == right["settings"]
    assert isinstance(left["wer"], float) and isinstance(right["wer"], float)
    assert sf.read(out)[0].size > 0 and sf.read(tmp_path / "a_compare.wav")[0].size > 0

    out = tmp_path / "run.wav"
    assert main(["preview", str(two_checkpoints), "--text", "Hello world.", "--checkpoint", "latest",
                 "--compare-run", "run1", "--out", str(out), "--max-new-tokens", "8", "--device", "cpu"]) == 0
    said = capsys.readouterr().out
    assert f"  Fine-tuned · run1 · step 2, eval loss 1.000: {tmp_path / 'run_compare.wav'}" in said
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "a.wav", "a_compare.json", "a_compare.wav",
                                                          "run.json", "run.wav", "run_compare.json",
                                                          "run_compare.wav"]


def test_a_model_folder_beside_a_checkpoint(voice, exports, tmp_path, capsys):
    """``--model FOLDER --compare-checkpoint latest``: an export (or another tool's fine-tune) beside the project's
    checkpoint, the checkpoint on the left."""
    out = tmp_path / "m.wav"
    assert main(["preview", str(voice.project), "--text", "Hello world.", "--model", str(exports[1]),
                 "--compare-checkpoint", "latest", "--out", str(out), "--max-new-tokens", "8", "--device", "cpu"]) == 0
    said = capsys.readouterr().out
    assert "Comparing with run1 · step 4" in said and f"  Model folder · today: {out}" in said
    assert "  Fine-tuned · run1 · step 4, eval loss " in said and str(tmp_path / "m_compare.wav") in said


@pytest.fixture(scope="module")
def with_an_f5_run(voice, tmp_path_factory):
    """A copy of the trained project holding an F5-TTS run too (a run folder as training leaves it)."""
    import shutil

    from tests.gui.walked_project import fake_run

    root = tmp_path_factory.mktemp("two_engines") / "voice"
    shutil.copytree(voice.project, root)
    fake_run(VoiceProject.open(root), "f5run", "f5", 2, finished=True, eval_losses=(3.9,))
    return root


@pytest.mark.parametrize("argv, message", [
    (["--run", "run1", "--checkpoint", "latest", "--compare-checkpoint", "latest"],
     "--checkpoint latest and --compare-checkpoint latest are both run1 · step 4, eval loss "),
    (["--checkpoint", "{project}/runs/run1/checkpoints/step_0000004", "--compare-checkpoint", "latest"],  # XTTS's
     "--checkpoint {project}/runs/run1/checkpoints/step_0000004 and --compare-checkpoint latest are both run1 · "
     "step 4"),
    (["--run", "run1", "--compare-checkpoint", "latest", "--compare-run", "f5run"],
     "--compare-checkpoint: f5run · step 2, eval loss 3.900 was trained with F5-TTS v1, not XTTS v2 like the take it "
     "is compared with: choose a checkpoint of XTTS v2."),
    (["--run", "run1", "--compare-checkpoint", "{project}/runs/f5run/checkpoints/step_0000002"],
     "--compare-checkpoint: f5run · step 2, eval loss 3.900 was trained with F5-TTS v1, not XTTS v2"),
    (["--run", "run1", "--compare-run", "nope"], "--compare-checkpoint: There is no run 'nope' in "),
    (["--run", "run1", "--compare-checkpoint", "{tmp}/gone"],
     "--compare-checkpoint: {tmp}/gone is not a checkpoint folder (it does not exist)."),
    (["--run", "run1", "--compare-checkpoint", "{project}/runs/run1/checkpoints/step_0000002", "--compare-run", "run1"],
     "--compare-run chooses the run of --compare-checkpoint best or latest; "),
    (["--run", "run1", "--ab", "--compare-checkpoint", "best"],
     "--ab and --compare-checkpoint each choose what the take is compared with: give one."),
    (["--run", "run1", "--compare-model", "{project}", "--compare-run", "run1"],
     "--compare-model and --compare-run each choose what the take is compared with: give one."),
    (["--run", "run1", "--ab", "--compare-model", "{project}", "--compare-checkpoint", "latest"],
     "--ab, --compare-model and --compare-checkpoint each choose what the take is compared with: give one."),
    (["--model", "{project}", "--checkpoint", "latest", "--compare-checkpoint", "best"],
     "--model speaks with a model folder alone: leave out --checkpoint."),
])
def test_bad_compare_checkpoints_are_refused_in_words_and_nothing_is_written(with_an_f5_run, tmp_path, capsys, argv,
                                                                           message):
    """The same checkpoint twice, another engine's checkpoint, a missing run or checkpoint and the comparisons that
    exclude each other are refused before any model loads; nothing is written."""
    args = [a.format(project=with_an_f5_run, tmp=tmp_path) for a in argv]
    before = _files(with_an_f5_run)
    assert main(["preview", str(with_an_f5_run), "--text", "Hi.", *args, "--out", str(tmp_path / "a.wav"),
                 "--max-new-tokens", "8", "--device", "cpu"]) == 2
    said = capsys.readouterr().err
    assert message.format(project=with_an_f5_run, tmp=tmp_path) in said and "Traceback" not in said
    assert list(tmp_path.iterdir()) == [] and _files(with_an_f5_run) == before
