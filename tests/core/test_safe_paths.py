"""Item 1 of issue 18: clip ids and stored paths from a shared project cannot reach outside the project.

The attack: someone shares a project whose segments.json names a clip ``../../../victim`` or ``/abs/victim``;
the dataset export used to write ``victim.wav`` there, overwriting whatever was in its place.
"""

from __future__ import annotations

import json

import pytest

from alltalk_gui.core import safe_paths
from alltalk_gui.core.dataset.export import DatasetError, export_dataset
from alltalk_gui.core.project.folder import ProjectError, VoiceProject
from alltalk_gui.core.transcript.flags import ClipChecker
from alltalk_gui.core.transcript.segments import SegmentList, SegmentsError
from tests.core.transcript.test_segments_support import add_source, make_project, segment, voice_like


@pytest.mark.parametrize("bad", ["../x", "a/../../x", "/etc/x", "C:\\x", "C:x", "\\\\server\\share\\x",
                                 "..\\..\\x", "", "a\0b"])
def test_inside_refuses_paths_that_leave_the_folder(tmp_path, bad):
    with pytest.raises(safe_paths.UnsafePathError, match="path"):
        safe_paths.inside(tmp_path, bad)


def test_inside_accepts_paths_below_the_folder_with_either_separator(tmp_path):
    assert safe_paths.inside(tmp_path, "audio/a.wav") == tmp_path / "audio" / "a.wav"
    assert safe_paths.inside(tmp_path, "audio\\a.wav") == tmp_path / "audio" / "a.wav"


@pytest.mark.parametrize("bad", ["..", ".hidden", "a/b", "a\\b", "con", "nul.wav", "x\x1b[2J", "", 5])
def test_plain_name_refuses_separators_dots_devices_and_control_characters(bad):
    with pytest.raises(safe_paths.UnsafePathError, match="not a plain name"):
        safe_paths.plain_name(bad)


@pytest.fixture
def project(tmp_path):
    project = make_project(tmp_path)
    add_source(project, "take.wav", voice_like(8.0))
    SegmentList.create(project, [segment("c00001", "s001", 0, 3000, "The first clip of my voice."),
                                 segment("c00002", "s001", 3500, 7000, "And here is the second clip.")])
    return project


@pytest.mark.parametrize("hostile", ["../../../victim", "ABSOLUTE"])
def test_a_hostile_clip_id_in_segments_json_is_refused_and_overwrites_nothing(project, tmp_path, hostile):
    victim = tmp_path / "victim.wav"
    victim.write_bytes(b"precious")
    if hostile == "ABSOLUTE":
        hostile = str(tmp_path / "victim")
    data = json.loads(project.segments_file.read_text(encoding="utf-8"))
    data["segments"][0]["id"] = hostile
    project.segments_file.write_text(json.dumps(data), encoding="utf-8")
    before = project.segments_file.read_bytes()
    # The path the old export built from this id is the victim: the attack is real.
    assert (project.dataset_dir / "wavs" / f"{hostile}.wav").resolve() == victim.resolve()

    with pytest.raises(SegmentsError, match="clip ids are 'c' followed by digits"):
        export_dataset(project)
    assert victim.read_bytes() == b"precious"
    assert project.segments_file.read_bytes() == before
    assert not project.dataset_dir.exists()


def test_an_in_memory_clip_with_a_hostile_id_stops_the_export_before_writing_outside(project, tmp_path):
    victim = tmp_path / "victim.wav"
    victim.write_bytes(b"precious")
    clips = SegmentList([segment("c00001", "s001", 0, 3000, "The first clip of my voice."),
                         segment("../../../victim", "s001", 3500, 7000, "And here is the second clip.")],
                        checker=ClipChecker(project.engine, "en"), source_order=["s001"],
                        source_names={"s001": "take.wav"})
    from alltalk_gui.core.audio.clips import ClipAudio
    clips.audio = ClipAudio(project)
    with pytest.raises(DatasetError, match="not a plain name"):
        export_dataset(project, segments=clips)
    assert victim.read_bytes() == b"precious"
    assert not project.dataset_dir.exists()


@pytest.mark.parametrize("key, value", [("audio_file", "../../victim.wav"), ("file", "/etc/passwd"),
                                        ("id", "../x")])
def test_source_paths_in_project_json_must_stay_inside_the_project(project, key, value):
    data = json.loads(project.project_file.read_text(encoding="utf-8"))
    data["sources"][0][key] = value
    project.project_file.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ProjectError, match="points outside|not a plain name"):
        VoiceProject.open(project.root)


def test_project_path_refuses_a_stored_path_that_climbs_out(project):
    with pytest.raises(safe_paths.UnsafePathError):
        project.path("../outside.wav")


@pytest.mark.parametrize("audio_file", ["../../victim.wav", "/etc/passwd", "C:\\Users\\x.wav"])
def test_a_metadata_csv_cannot_point_outside_its_dataset(tmp_path, audio_file):
    from alltalk_gui.core.dataset.metadata import MetadataError, read_metadata

    csv = tmp_path / "metadata_train.csv"
    csv.write_text(f"audio_file|text|speaker_name\nwavs/c00001.wav|Fine.|me\n{audio_file}|Hostile.|me\n",
                   encoding="utf-8")
    with pytest.raises(MetadataError, match="line 3: audio_file .* points outside"):
        read_metadata(csv)
