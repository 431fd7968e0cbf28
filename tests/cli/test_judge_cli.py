"""``alltalk-gui judge-audio`` on real recordings: one JSON object per candidate on stdout (nothing else there),
a candidate that cannot be read reported and the others still judged, bad references and languages refused, and
the command saying why when the judge's extra is missing."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import soundfile as sf

from alltalk_gui.cli import main
from alltalk_gui.testing import judge_corpus as corpus
from tests.trained_voice import whisper_tiny_en


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("judge_cli")
    reference, held_out = corpus.sonnet_clips()
    refs = []
    for i, clip in enumerate(reference[:4]):
        refs.append(folder / f"reference_{i}.wav")
        sf.write(refs[-1], clip.samples, clip.rate)
    line = held_out[5]  # "Pity the world, or else this glutton be,"
    same, tailed, other = folder / "same.wav", folder / "tailed.wav", folder / "other.wav"
    sf.write(same, line.samples, line.rate)
    sf.write(tailed, corpus.trailing_noise(line).samples, line.rate)
    arctic = corpus.arctic_clips()[1]
    sf.write(other, arctic.samples, arctic.rate)
    (folder / "broken.wav").write_bytes(b"RIFF nonsense")
    return folder, refs, line.text


def test_one_json_object_per_candidate(files):
    folder, refs, text = files
    done = subprocess.run(
        [sys.executable, "-m", "alltalk_gui", "judge-audio", folder / "same.wav", folder / "tailed.wav",
         folder / "other.wav", folder / "broken.wav", "--reference", *refs, "--text", text, "--language", "en",
         "--whisper-model", whisper_tiny_en(), "--device", "cpu", "--json"],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr  # one candidate rejected, the rest judged
    assert "broken.wav" in done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["candidate"].rsplit("/", 1)[-1] for r in rows] == ["same.wav", "tailed.wav", "other.wav"]
    same, tailed, other = rows
    assert {"likeness", "mos", "wer", "transcript", "length", "readings"} <= same.keys()
    assert same["likeness"] - other["likeness"] > 0.1, (same["likeness"], other["likeness"])
    assert same["length"]["ok"], same["length"]
    assert any("after the last word" in p for p in tailed["length"]["problems"])
    assert same["wer"] <= 0.5, same["transcript"]
    assert other["readings"]["likeness"] != "sounds like the speaker"


def test_without_text_there_is_no_error_rate_and_a_note(files, capsys):
    folder, refs, _text = files
    assert main(["judge-audio", str(folder / "same.wav"), "--reference", *map(str, refs), "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "likeness" in out and "MOS" in out and "WER" not in out and "(no intelligibility: no text was given)" in out


def test_bad_references_and_languages_are_refused(files, capsys):
    folder, refs, _text = files
    assert main(["judge-audio", str(folder / "same.wav"), "--reference", str(folder / "broken.wav")]) == 2
    assert "reference" in capsys.readouterr().err
    assert main(["judge-audio", str(folder / "same.wav"), "--reference", str(refs[0]), "--language", "xx"]) == 2
    assert "Unknown language 'xx'" in capsys.readouterr().err


def test_without_the_extra_the_command_says_why(files, capsys, monkeypatch):
    from alltalk_gui.core.voice.judge import available

    monkeypatch.setattr(available, "missing_packages", lambda: ["distillmos"])
    folder, refs, _text = files
    assert main(["judge-audio", str(folder / "same.wav"), "--reference", str(refs[0])]) == 2
    assert "needs distillmos, which is not installed" in capsys.readouterr().err
