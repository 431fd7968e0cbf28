"""Dataset export: byte-exact coqui CSVs, wavs, coqui's own reader, seeded split, refusals that name the clips."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from alltalk_gui.core.dataset.export import (ClipsRefused, DatasetError, export_dataset, refusals,
                                             split_train_eval)
from alltalk_gui.core.transcript.segments import SegmentList
from tests.core.transcript.test_segments_support import add_source, make_project, segment, voice_like

EXPECTED_TRAIN = (
    "audio_file|text|speaker_name\n"
    "wavs/c00001.wav|The first clip of my voice.|voice\n"
    "wavs/c00002.wav|He said hello, then left.|voice\n"
    "wavs/c00004.wav|Another file, another clip.|voice\n"
    "wavs/c00005.wav|Café crème is encodable in French.|voice\n"
)
EXPECTED_EVAL = (
    "audio_file|text|speaker_name\n"
    "wavs/c00003.wav|Third clip after a pause.|voice\n"
)


@pytest.fixture
def project(tmp_path):
    project = make_project(tmp_path)
    add_source(project, "take one.wav", voice_like(20.0))
    add_source(project, "take two.flac", voice_like(10.0, seed=3))
    SegmentList.create(project, [
        segment("c00001", "s001", 0, 3000, "The first clip of my voice."),
        segment("c00002", "s001", 3000, 6500, 'He said "hello", then left.'),
        segment("c00003", "s001", 7000, 10000, "Third clip after a pause."),
        segment("c00004", "s002", 500, 4000, "Another file, another clip."),
        segment("c00005", "s002", 4500, 8000, "Café crème is encodable in French."),
    ])
    return project


def test_csvs_are_byte_exact_and_wavs_are_mono_22050_pcm16(project):
    report = export_dataset(project, eval_split=0.15, seed=0)
    dataset = project.dataset_dir
    assert (dataset / "metadata_train.csv").read_bytes() == EXPECTED_TRAIN.encode("utf-8")
    assert (dataset / "metadata_eval.csv").read_bytes() == EXPECTED_EVAL.encode("utf-8")
    assert (report.train, report.eval, report.refused, report.deleted) == (4, 1, [], 0)
    assert report.seconds_of_audio == pytest.approx(3 + 3.5 + 3 + 3.5 + 3.5, abs=0.01)
    assert sorted(p.name for p in (dataset / "wavs").iterdir()) == [f"c0000{i}.wav" for i in range(1, 6)]
    info = sf.info(dataset / "wavs" / "c00002.wav")
    assert (info.samplerate, info.channels, info.subtype, info.frames) == (22050, 1, "PCM_16", int(3.5 * 22050))
    # the clip is the working copy's samples at that span
    working, _ = sf.read(project.path("audio/s001.wav"), dtype="int16")
    clip, _ = sf.read(dataset / "wavs" / "c00002.wav", dtype="int16")
    assert np.array_equal(clip, working[3 * 22050:int(6.5 * 22050)])


def test_coqui_formatter_reads_the_dataset(project):
    from TTS.tts.datasets.formatters import coqui

    export_dataset(project)
    train = coqui(str(project.dataset_dir), "metadata_train.csv")
    evaluation = coqui(str(project.dataset_dir), "metadata_eval.csv")
    assert [item["text"] for item in train] == ["The first clip of my voice.", "He said hello, then left.",
                                                "Another file, another clip.", "Café crème is encodable in French."]
    assert [item["text"] for item in evaluation] == ["Third clip after a pause."]
    assert {item["speaker_name"] for item in train + evaluation} == {"voice"}
    assert all(sf.info(item["audio_file"]).samplerate == 22050 for item in train + evaluation)


def test_split_is_seeded_and_keeps_one_clip_each_side():
    ids = [f"c{i:05d}" for i in range(1, 41)]
    first = split_train_eval(ids, 0.15, seed=7)
    assert first == split_train_eval(list(reversed(ids)), 0.15, seed=7)
    assert first != split_train_eval(ids, 0.15, seed=8)
    assert len(first[1]) == 6 and sorted(first[0] + first[1]) == ids
    assert [len(x) for x in split_train_eval(ids[:2], 0.01, 0)] == [1, 1]
    assert [len(x) for x in split_train_eval(ids[:3], 0.99, 0)] == [1, 2]
    with pytest.raises(DatasetError, match="between 0 and 1"):
        split_train_eval(ids, 1.5, 0)
    with pytest.raises(DatasetError, match="at least 2 usable clips"):
        split_train_eval(ids[:1], 0.15, 0)


def test_unusable_clips_are_refused_by_name_and_nothing_is_written(project):
    add_source(project, "long.wav", voice_like(15.0))
    clips = SegmentList.open(project)
    clips.set_text("c00003", "")
    clips.set_text("c00004", "Prices in ₹ are not speakable.")
    clips.delete("c00001")
    clips = SegmentList.create(project, list(clips) + [segment("c00006", "s003", 0, 12500, "A far too long clip.")])
    refused = {r.clip_id: r for r in refusals(clips)}
    assert set(refused) == {"c00003", "c00004", "c00006"}
    assert "no text" in refused["c00003"].reasons[0]
    assert "'₹'" in refused["c00004"].reasons[0]
    assert refused["c00006"].describe().startswith("c00006 (long.wav at 0.0 s): 12.5 s is longer than")

    with pytest.raises(ClipsRefused) as caught:
        export_dataset(project)
    assert "3 clip(s) cannot be used" in str(caught.value)
    assert "c00004 (take two.flac at 0.5 s)" in str(caught.value)
    assert not project.dataset_dir.exists()

    report = export_dataset(project, skip_refused=True)
    assert [r.clip_id for r in report.refused] == ["c00003", "c00004", "c00006"]
    assert (report.deleted, report.train, report.eval) == (1, 1, 1)
    rows = (project.dataset_dir / "metadata_train.csv").read_text() + \
        (project.dataset_dir / "metadata_eval.csv").read_text()
    assert sorted(p.name for p in (project.dataset_dir / "wavs").iterdir()) == ["c00002.wav", "c00005.wav"]
    assert "c00002" in rows and "c00005" in rows and "c00001" not in rows


def test_failed_export_keeps_the_previous_dataset(project):
    export_dataset(project)
    before = {p.name: p.read_bytes() for p in project.dataset_dir.rglob("*") if p.is_file()}
    project.path("audio/s002.wav").unlink()
    with pytest.raises(DatasetError, match="working audio of 'take two.flac'"):
        export_dataset(project, seed=3)
    after = {p.name: p.read_bytes() for p in project.dataset_dir.rglob("*") if p.is_file()}
    assert after == before
    assert [p.name for p in project.root.iterdir() if p.name.startswith(".dataset")] == []


def test_export_needs_a_transcript_and_two_clips(tmp_path):
    project = make_project(tmp_path)
    with pytest.raises(DatasetError, match="no transcript yet"):
        export_dataset(project)
    add_source(project, "a.wav", voice_like(5.0))
    SegmentList.create(project, [segment("c00001", "s001", 0, 3000, "Only one clip here.")])
    with pytest.raises(DatasetError, match="at least 2 usable clips"):
        export_dataset(project)
    assert not project.dataset_dir.exists()


def test_a_killed_export_is_recovered_by_the_next_one(project):
    from alltalk_gui.core.dataset.export import recover_interrupted_export

    export_dataset(project)
    before = {p.relative_to(project.dataset_dir): p.read_bytes() for p in project.dataset_dir.rglob("*")
              if p.is_file()}
    # killed between the swap's two renames: the old dataset set aside, the new one still staged
    project.dataset_dir.rename(project.root / ".dataset-old-12345678")
    (project.root / ".dataset-staged1").mkdir()
    (project.root / ".dataset-staged1" / "metadata_train.csv").write_text("half")
    recover_interrupted_export(project)
    after = {p.relative_to(project.dataset_dir): p.read_bytes() for p in project.dataset_dir.rglob("*")
             if p.is_file()}
    assert after == before
    assert [p.name for p in project.root.iterdir() if p.name.startswith(".dataset")] == []

    (project.root / ".dataset-killed").mkdir()  # killed while writing wavs: the next export cleans up
    export_dataset(project, seed=5)
    assert [p.name for p in project.root.iterdir() if p.name.startswith(".dataset")] == []


def test_the_swap_waits_while_an_antivirus_scans_the_new_wavs(project, monkeypatch, caplog):
    """Windows refuses a folder rename (WinError 5) while a scanner holds a file in it: retried, not failed; an
    old dataset that cannot be deleted is logged, and the next export removes it."""
    import os
    from pathlib import Path

    from alltalk_gui.core import folders

    export_dataset(project)
    real_rename, refused = os.rename, []

    def scanned(source, target):
        if Path(source).name.startswith(".dataset-") and not refused:
            refused.append(source)
            raise PermissionError(13, "Access is denied")
        real_rename(source, target)

    monkeypatch.setattr(folders.os, "rename", scanned)
    monkeypatch.setattr(folders, "_rmtree", lambda path: (_ for _ in ()).throw(PermissionError(13, "Access is denied")))
    monkeypatch.setattr(folders, "RETRY_DELAYS_S", (0.0,))
    export_dataset(project, seed=3)
    assert refused and (project.dataset_dir / "metadata_train.csv").is_file()
    assert "Could not delete" in caplog.text and ".dataset-old-" in caplog.text
    monkeypatch.undo()
    export_dataset(project, seed=4)
    assert [p.name for p in project.root.iterdir() if p.name.startswith(".dataset")] == []


def test_a_dataset_held_open_elsewhere_is_named_and_kept(project, monkeypatch):
    """Windows: metadata_train.csv open in Excel (or a wav in a player) holds dataset/, whose swap is refused: the
    export says which folder is in use and the previous dataset stays as it was."""
    from alltalk_gui.core import folders
    from alltalk_gui.core.dataset.export import DatasetError
    from tests.held_file import holdable

    export_dataset(project)
    before = (project.dataset_dir / "metadata_train.csv").read_bytes()
    monkeypatch.setattr(folders, "RETRY_DELAYS_S", (0.0,))
    hold = holdable(project.dataset_dir)
    hold.hold()
    try:
        with pytest.raises(DatasetError, match=r"dataset \(or a file in it\) is open in another program") as caught:
            export_dataset(project, seed=3)
    finally:
        hold.release()
    assert "the previous dataset is as it was" in str(caught.value), str(caught.value)
    assert (project.dataset_dir / "metadata_train.csv").read_bytes() == before
    assert [p.name for p in project.root.iterdir() if p.name.startswith(".dataset")] == []
