"""The transcribe, segments and dataset commands, run through the real CLI on real (espeak) speech."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
import soundfile as sf

from alltalk_gui.cli import main
from alltalk_gui.core.transcription.wer import word_error_rate
from alltalk_gui.testing.speech import espeak_available
from alltalk_gui.testing.tiny_whisper import faster_tiny_en
from tests.core.transcript.test_segments_support import SENTENCES, make_vocab, spoken_sentences

pytestmark = pytest.mark.skipif(not espeak_available(), reason="espeak-ng is not installed")


@pytest.fixture(autouse=True)
def empty_model_caches(tmp_path, monkeypatch):
    """Named models must look missing and no base model chosen, whatever this machine has."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache" / "hf"))
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))


@pytest.fixture(scope="module")
def speech_wavs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("speech")
    samples, _ = spoken_sentences(folder / "parts", SENTENCES[:4])
    sf.write(folder / "reading.wav", samples, 22050)
    sf.write(folder / "second take.wav", samples[: 22050 * 7], 22050)
    return folder


@pytest.fixture
def project_dir(tmp_path, speech_wavs):
    folder = tmp_path / "voice"
    assert main(["new", str(folder), "--name", "My Voice"]) == 0
    assert main(["import", str(folder), str(speech_wavs / "reading.wav"), str(speech_wavs / "second take.wav")]) == 0
    return folder


def tiny(*extra):
    return ["--backend", "faster-whisper", "--model", str(faster_tiny_en()), "--device", "cpu", *extra]


def test_transcribe_list_and_export(project_dir, capsys):
    capsys.readouterr()
    assert main(["transcribe", str(project_dir), *tiny("--language", "en")]) == 0
    out = capsys.readouterr().out
    assert "[1/2] reading.wav" in out and "[2/2] second take.wav: 100%" in out and "overall" in out
    assert "Transcribed 2 file(s)" in out and "(en)" in out
    # One espeak-ng voice throughout: the speaker check finds no other (or says why it is off).
    assert "Speaker check: all clips sound like one voice" in out or "Speaker check off:" in out, out

    assert main(["segments", str(project_dir), "--json"]) == 0
    clips = json.loads(capsys.readouterr().out)
    assert len(clips) >= 5
    for clip in clips:
        assert {"id", "source", "start_s", "end_s", "text", "flags"} <= set(clip)
        assert clip["source"] in ("reading.wav", "second take.wav") and clip["start_s"] < clip["end_s"]
    # What a model hears differs by CPU (AVX-512 and AVX2 round differently): a tolerance, not exact words.
    first = [c["text"] for c in clips if c["source"] == "reading.wav"][0]
    assert word_error_rate(SENTENCES[0], first) <= 0.5, first

    assert main(["segments", str(project_dir), "--json", "--flagged"]) == 0
    flagged = json.loads(capsys.readouterr().out)
    assert all(c["flags"] for c in flagged)
    assert {c["id"] for c in flagged} <= {c["id"] for c in clips}
    assert main(["segments", str(project_dir)]) == 0
    assert "kept clips" in capsys.readouterr().out

    status = main(["dataset", str(project_dir), "--eval-split", "0.2", "--seed", "3", "--skip-refused"])
    out = capsys.readouterr().out
    assert status in (0, 1) and "training and" in out
    train = (project_dir / "dataset" / "metadata_train.csv").read_text().splitlines()
    evaluation = (project_dir / "dataset" / "metadata_eval.csv").read_text().splitlines()
    assert train[0] == evaluation[0] == "audio_file|text|speaker_name"
    assert len(evaluation) >= 2 and train[1].endswith("|My_Voice")


def test_entry_point_runs_in_a_subprocess(project_dir):
    result = subprocess.run([sys.executable, "-m", "alltalk_gui", "transcribe", str(project_dir),
                             *tiny("--language", "en")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "Transcribed 2 file(s)" in result.stdout


def test_a_vanished_working_copy_is_reported_and_the_rest_transcribed(project_dir, capsys):
    project = json.loads((project_dir / "project.json").read_text())
    (project_dir / project["sources"][1]["audio_file"]).unlink()
    assert main(["transcribe", str(project_dir), *tiny("--language", "en")]) == 1
    err = capsys.readouterr().err
    assert "failed second take.wav" in err and "missing" in err
    main(["segments", str(project_dir), "--json"])
    assert {c["source"] for c in json.loads(capsys.readouterr().out)} == {"reading.wav"}


def test_bad_models_and_backends_get_clear_errors(project_dir, capsys):
    assert main(["transcribe", str(project_dir), "--backend", "faster-whisper", "--model",
                 str(project_dir / "nope")]) == 2
    assert "neither a model name known to faster-whisper" in capsys.readouterr().err
    assert main(["transcribe", str(project_dir), "--backend", "openai-whisper", "--model",
                 str(faster_tiny_en())]) == 2
    assert "needs a checkpoint file (.pt)" in capsys.readouterr().err
    with pytest.raises(SystemExit) as caught:
        main(["transcribe", str(project_dir), "--backend", "whisper-cpp"])
    assert caught.value.code == 2
    assert not (project_dir / "segments.json").exists()


def test_missing_named_model_says_what_it_would_download(project_dir, capsys):
    assert main(["transcribe", str(project_dir), "--backend", "faster-whisper", "--model", "tiny", "--device", "cpu",
                 "--no-download"]) == 2
    err = capsys.readouterr().err
    assert "'tiny' is not on this computer" in err and "about 75 MB" in err and "huggingface.co" in err


def test_no_network_is_said_plainly(project_dir, capsys, monkeypatch):
    def offline(*_args, **_kwargs):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    assert main(["transcribe", str(project_dir), "--backend", "openai-whisper", "--model", "base",
                 "--device", "cpu"]) == 2
    captured = capsys.readouterr()
    assert "about 145 MB" in captured.out
    assert "cannot be reached" in captured.err and "choose a model you already have on disk" in captured.err
    assert not (project_dir / "segments.json").exists()


def test_empty_project_and_missing_transcript(tmp_path, capsys):
    folder = tmp_path / "empty"
    main(["new", str(folder)])
    capsys.readouterr()
    assert main(["transcribe", str(folder), *tiny()]) == 2
    assert "no recordings yet" in capsys.readouterr().err
    assert main(["segments", str(folder)]) == 0
    assert "No clips yet" in capsys.readouterr().out
    assert main(["dataset", str(folder)]) == 2
    assert "no transcript yet" in capsys.readouterr().err


def test_corrupt_segments_file_is_reported_and_kept(project_dir, capsys):
    (project_dir / "segments.json").write_text("{ half a file", encoding="utf-8")
    assert main(["segments", str(project_dir)]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert main(["dataset", str(project_dir)]) == 2
    assert (project_dir / "segments.json").read_text(encoding="utf-8") == "{ half a file"


def test_the_chosen_base_models_vocabulary_checks_the_text(project_dir, tmp_path, capsys):
    from alltalk_gui.core import app_settings

    assert main(["transcribe", str(project_dir), *tiny("--language", "en")]) == 0
    capsys.readouterr()
    main(["segments", str(project_dir), "--json"])
    clips = json.loads(capsys.readouterr().out)
    assert not any(f["code"] == "unencodable" for c in clips for f in c["flags"])
    # a base model whose vocabulary lacks 'z' and 'y' (used in "lazy" and "your")
    vocab = make_vocab(tmp_path / "base" / "vocab.json")
    data = json.loads(vocab.read_text())
    data["model"]["vocab"] = {k: v for k, v in data["model"]["vocab"].items() if "z" not in k and "y" not in k}
    data["model"]["merges"] = [m for m in data["model"]["merges"]
                               if "z" not in "".join(m) and "y" not in "".join(m)]
    vocab.write_text(json.dumps(data))
    app_settings.set_value("base_model_dir", str(vocab.parent))
    assert main(["segments", str(project_dir), "--json", "--flagged"]) == 0, capsys.readouterr().err
    reasons = [f["reason"] for c in json.loads(capsys.readouterr().out) for f in c["flags"]
               if f["code"] == "unencodable"]
    assert reasons and all("vocab.json" in r for r in reasons) and any("'z'" in r for r in reasons)
    assert main(["dataset", str(project_dir)]) == 2
    assert "cannot be used for training" in capsys.readouterr().err


def test_a_request_that_cannot_run_is_refused_before_any_model_download(project_dir, tmp_path, capsys, monkeypatch):
    """No recordings, an unknown language or a clip length the engine cannot use fail at once: the default
    openai-whisper model (484 MB) was downloaded first, and only then was the user told to import audio."""
    def no_download(*_args, **_kwargs):
        raise AssertionError("a model download was started")

    monkeypatch.setattr(urllib.request, "urlopen", no_download)
    empty = tmp_path / "empty"
    main(["new", str(empty)])
    capsys.readouterr()
    cases = [([str(empty)], "no recordings yet"),
             ([str(project_dir), "--language", "xx"], "Unknown language 'xx'"),
             ([str(project_dir), "--min-s", "9", "--max-s", "3"], "Clip length range 9.0-3.0 s is invalid")]
    for args, said in cases:
        assert main(["transcribe", *args, "--backend", "openai-whisper", "--model", "base", "--device", "cpu"]) == 2
        captured = capsys.readouterr()
        assert said in captured.err and "not on this computer" not in captured.out + captured.err, captured
    assert not (project_dir / "segments.json").exists()
