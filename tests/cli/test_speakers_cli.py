"""The speaker check from the command line: ``segments --flagged`` lists the clips of another voice with the
likeness in their reason, ``--speaker-check`` measures clips made since (a split), ``--main-voice`` answers the
"two voices of equal share" question, and a bad clip id is refused in words."""

from __future__ import annotations

import json

import pytest

from alltalk_gui.cli import main
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.transcript.segments import SegmentList
from tests.core.transcript.test_speakers import interview, make_list, measured, two_voices  # noqa: F401 (a fixture)


@pytest.fixture(scope="module")
def encoder():
    pytest.importorskip("resemblyzer")
    from alltalk_gui.core.audio.speaker import SpeakerEncoder

    return SpeakerEncoder("cpu")


def test_segments_lists_the_other_voices_clips_and_measures_a_split(tmp_path, interview, encoder, capsys):
    clips = measured(make_list(tmp_path, interview, which={"reader", "arctic"}), encoder)
    arctic = sorted(s.id for s in clips.view("other_voice"))
    old = clips[arctic[0]]
    clips.split(arctic[0], (old.start_ms + old.end_ms) // 2, len(old.text) // 2)  # a new span: not measured yet
    clips.close()
    folder = str(tmp_path / "voice")
    capsys.readouterr()
    assert main(["segments", folder, "--flagged", "--json"]) == 0
    flagged = {c["id"]: c for c in json.loads(capsys.readouterr().out)}
    assert arctic[1] in flagged and arctic[0] not in flagged  # the split parts wait for their measurement
    reason = next(f["reason"] for f in flagged[arctic[1]]["flags"] if f["code"] == "other_speaker")
    assert reason.startswith("Another voice? Likeness 0.")
    assert main(["segments", folder, "--speaker-check"]) == 0
    out = capsys.readouterr().out
    assert "Measuring the voice of 2 clip(s)" in out and "may hold another voice (other_speaker)" in out
    assert "Speaker check:" in out and "[other_speaker]" in out


def test_main_voice_answers_two_voices_of_equal_share(tmp_path, interview, capsys):
    kept = two_voices(tmp_path, interview)
    folder = str(tmp_path / "voice")
    capsys.readouterr()
    assert main(["segments", folder]) == 0
    assert "which one is yours?" in capsys.readouterr().out
    assert main(["segments", folder, "--main-voice", "c99999"]) == 2
    assert "There is no clip c99999" in capsys.readouterr().err
    assert main(["segments", folder, "--main-voice", kept[7], "--flagged", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert {c["id"] for c in listed if "other_speaker" in [f["code"] for f in c["flags"]]} == set(kept[:5])
    again = SegmentList.open(VoiceProject.open(folder))
    assert again.main_voice == kept[7]
    again.close()
