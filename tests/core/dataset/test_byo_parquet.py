"""Hugging Face datasets as parquet (Orpheus, Parler): audio as {bytes, path}, a text column of several usual
names, a speaker/source column to choose from; bad rows refused one by one; the staged audio never stays."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from alltalk_gui.core.dataset.byo_import import DatasetImportError, find_dataset, import_dataset, survey
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.transcript.segments import Segment, SegmentList
from tests.core.dataset.byo_support import TEXT, audio, audio_bytes

AUDIO = pa.struct([("bytes", pa.binary()), ("path", pa.string())])


def parquet(path: Path, audio_cells: list[dict], texts: list[str | None], text_column: str = "text",
            **more: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    columns = {"audio": pa.array(audio_cells, type=AUDIO), text_column: pa.array(texts, type=pa.string())}
    columns.update({name: pa.array(values) for name, values in more.items()})
    pq.write_table(pa.table(columns), path)
    return path


def cells(n: int, first_seed: int = 0, fmt: str = "WAV") -> list[dict]:
    suffix = ".wav" if fmt == "WAV" else ".flac"
    return [{"bytes": audio_bytes(first_seed + i, fmt), "path": f"clip_{first_seed + i}{suffix}"} for i in range(n)]


def staged(project: VoiceProject) -> list[Path]:
    return list(project.root.glob(".dataset-import-*"))


def test_an_orpheus_style_parquet_in_data_is_imported(tmp_path):
    repo = tmp_path / "elise"
    parquet(repo / "data" / "train-00000-of-00002.parquet", cells(2), [TEXT, "Second clip."])
    parquet(repo / "data" / "train-00001-of-00002.parquet", cells(1, 10, "FLAC"), ["Third clip, in flac."])
    project = VoiceProject.create(tmp_path / "p", language="en")

    assert find_dataset(repo) == ("parquet", repo / "data")
    report = import_dataset(project, repo)

    assert report.layout == "parquet" and report.problems == [] and report.speaker is None
    assert [c.text for c in SegmentList.open(project)] == [TEXT, "Second clip.", "Third clip, in flac."]
    assert [s.name for s in project.sources] == ["clip_0.wav", "clip_1.wav", "clip_10.flac"]
    assert project.sources[0].original_path == str(repo / "data" / "train-00000-of-00002.parquet")
    assert staged(project) == []


def test_rows_named_like_windows_devices_are_staged_under_names_windows_takes(tmp_path):
    """A row whose path is ``con.wav`` would be written to the console device on Windows (``nul.wav``: lost)."""
    repo = tmp_path / "devices"
    rows = cells(2)
    rows[0]["path"], rows[1]["path"] = "clips/con.wav", "clips/NUL.wav"
    parquet(repo / "data" / "train.parquet", rows, [TEXT, "Second clip."])
    project = VoiceProject.create(tmp_path / "p", language="en")
    report = import_dataset(project, repo)
    assert report.problems == []
    assert [s.name for s in project.sources] == ["con_.wav", "NUL_.wav"]
    assert staged(project) == []


def test_several_speakers_one_is_chosen_and_nothing_is_lost_without_a_choice(tmp_path):
    file = parquet(tmp_path / "multi.parquet", cells(4), [f"Line {i}." for i in range(4)],
                   source=["tara", "leo", "tara", "tara"])
    project = VoiceProject.create(tmp_path / "p", language="en")
    SegmentList.create(project, [Segment("c00001", "s000", 0, 3000, "Already here.")])
    before = project.segments_file.read_bytes()

    assert survey(file).speakers == {"tara": 3, "leo": 1}
    with pytest.raises(DatasetImportError, match=r"2 speakers.*tara \(3 clips\), leo \(1 clip\)"):
        import_dataset(project, file)
    with pytest.raises(DatasetImportError, match="no speaker 'zoe'"):
        import_dataset(project, file, speaker="zoe")
    assert project.segments_file.read_bytes() == before and VoiceProject.open(project.root).sources == []
    assert staged(project) == []

    report = import_dataset(project, file, speaker="leo")
    assert report.speaker == "leo" and report.problems == []
    assert sorted(c.text for c in SegmentList.open(project)) == ["Already here.", "Line 1."]


def test_bad_rows_are_refused_one_by_one(tmp_path):
    folder = tmp_path / "hf"
    audio(folder / "beside.wav", seed=20)
    audio(tmp_path / "outside.wav", seed=21)
    rows = [{"bytes": audio_bytes(1), "path": "ok.wav"},                    # 1 fine
            {"bytes": None, "path": None},                                   # 2 no audio
            {"bytes": b"RIFF....garbage", "path": "bad.wav"},                # 3 undecodable
            {"bytes": audio_bytes(2), "path": "empty_text.wav"},             # 4 empty text
            {"bytes": audio_bytes(1), "path": "again.wav"},                  # 5 same audio as row 1
            {"bytes": None, "path": "beside.wav"},                           # 6 a file beside the parquet: fine
            {"bytes": None, "path": "../outside.wav"},                       # 7 outside the folder
            {"bytes": None, "path": str(tmp_path / "outside.wav")},          # 8 absolute, outside
            {"bytes": audio_bytes(3), "path": "../../../etc/evil.wav"}]      # 9 bytes: the path is only a name
    texts = [TEXT, "No audio.", "Garbage.", None, "Again.", "Beside.", "Out.", "Out.", "Named oddly."]
    file = parquet(folder / "train.parquet", rows, texts, text_column="transcription")
    project = VoiceProject.create(tmp_path / "p", language="en")

    report = import_dataset(project, folder)

    expected = {2: "holds no audio", 3: "bad.wav", 4: "the text is empty", 5: "already in the project",
                7: "outside the dataset folder", 8: "outside the dataset folder"}
    for row, words in expected.items():
        assert any(p.startswith(f"{file.name} row {row}: ") and words in p for p in report.problems), \
            (row, report.problems)
    assert len(report.problems) == len(expected), report.problems
    assert [c.text for c in SegmentList.open(project)] == [TEXT, "Beside.", "Named oddly."]
    assert sorted(s.name for s in project.sources) == ["beside.wav", "evil.wav", "ok.wav"]
    assert not (tmp_path / "etc").exists() and staged(project) == []


def test_the_normalised_text_column_is_preferred(tmp_path):
    file = tmp_path / "parler.parquet"
    parquet(file, cells(1), ["Chapter 1."], normalized_text=["Chapter one."], speaker_id=[7])
    project = VoiceProject.create(tmp_path / "p", language="en")
    assert survey(file).speakers == {"7": 1}
    import_dataset(project, file)
    assert [c.text for c in SegmentList.open(project)] == ["Chapter one."]


def test_a_parquet_without_text_or_a_damaged_one_says_why(tmp_path):
    bad = tmp_path / "no_text.parquet"
    pq.write_table(pa.table({"audio": pa.array(cells(1), type=AUDIO), "label": pa.array([3])}), bad)
    project = VoiceProject.create(tmp_path / "p", language="en")
    with pytest.raises(DatasetImportError, match=r"no text column .* its columns are: audio, label"):
        import_dataset(project, bad)
    damaged = tmp_path / "damaged.parquet"
    damaged.write_bytes(b"PAR1 this is not a parquet file")
    with pytest.raises(DatasetImportError, match="cannot be read as parquet"):
        import_dataset(project, damaged)
    assert VoiceProject.open(project.root).sources == [] and staged(project) == []


def test_a_full_disk_while_staging_imports_nothing_and_leaves_nothing(tmp_path, monkeypatch):
    import errno

    file = parquet(tmp_path / "hf.parquet", cells(3), ["One.", "Two.", "Three."])
    project = VoiceProject.create(tmp_path / "p", language="en")
    written = []
    original = Path.write_bytes

    def full(self, data):  # the first clip fits, the second finds the disk full
        if written:
            raise OSError(errno.ENOSPC, "No space left on device")
        written.append(self)
        return original(self, data)

    monkeypatch.setattr(Path, "write_bytes", full)
    with pytest.raises(DatasetImportError, match="No space left on device.*nothing was imported"):
        import_dataset(project, file)
    monkeypatch.undo()
    assert VoiceProject.open(project.root).sources == [] and not project.segments_file.exists()
    assert staged(project) == []


@pytest.mark.skipif(os.name == "nt", reason="symlinks need privileges on Windows")
def test_the_hugging_face_cache_is_read_from_its_own_folder_only(tmp_path):
    """load_dataset keeps datasets--owner--name/snapshots/<revision>/data/*.parquet as links into ../blobs/."""
    cache = tmp_path / "datasets--MrDragonFox--Elise"
    blob = parquet(cache / "blobs" / "9f2c1e", cells(2), ["First.", "Second."])
    data = cache / "snapshots" / "0123abcd" / "data"
    data.mkdir(parents=True)
    (data / "train-00000-of-00001.parquet").symlink_to(blob)
    project = VoiceProject.create(tmp_path / "p", language="en")

    with pytest.raises(DatasetImportError, match=r"links to files outside .*\(datasets--owner--name\)"):
        import_dataset(project, cache / "snapshots" / "0123abcd")   # the links lead out of the chosen folder
    assert find_dataset(cache) == ("parquet", data)                  # three levels below the chosen folder
    report = import_dataset(project, cache)
    assert report.problems == [] and len(report.imported) == 2


@pytest.mark.parametrize("stream", [True, False])
def test_arrow_files_of_load_datasets_cache_are_read_and_its_derived_tables_left_out(tmp_path, stream):
    """load_dataset's cache (<name>-train.arrow, stream format) and save_to_disk (data-00000-of-00001.arrow); the
    cache-*.arrow files beside them are .map() results, not the data. The random-access format is read too."""
    table = pa.table({"audio": pa.array(cells(2), type=AUDIO), "text": ["First.", "Second."]})
    folder = tmp_path / "mrdragonfox___elise" / "default" / "0.0.0" / "83c8ee4d1b"
    folder.mkdir(parents=True)
    with pa.OSFile(str(folder / "elise-train.arrow"), "wb") as sink:
        new = pa.ipc.new_stream if stream else pa.ipc.new_file
        with new(sink, table.schema) as writer:
            writer.write_table(table, max_chunksize=1)
    with pa.OSFile(str(folder / "cache-4f1b2c.arrow"), "wb") as sink, pa.ipc.new_stream(
            sink, pa.schema([("input_ids", pa.list_(pa.int64()))])) as writer:
        writer.write_table(pa.table({"input_ids": [[1, 2]]}))
    project = VoiceProject.create(tmp_path / "p", language="en")

    assert find_dataset(tmp_path / "mrdragonfox___elise") == ("parquet", folder)
    assert survey(tmp_path / "mrdragonfox___elise").clips == 2
    report = import_dataset(project, tmp_path / "mrdragonfox___elise")
    assert report.problems == [] and [c.text for c in SegmentList.open(project)] == ["First.", "Second."]
    assert project.sources[0].original_path == str(folder / "elise-train.arrow")
