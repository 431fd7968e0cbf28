"""Issue 29 item 1: a bring-your-own dataset imports only files inside its own folder.

A dataset someone shares is foreign input: a row naming ``/home/me/private/secret``, ``../outside.wav``, a link to
a file elsewhere, or a Windows path (``C:\\...``, ``\\\\server\\share\\...``) must not pull that file into the project.
Each such row is refused with its file and line ("outside the dataset folder"), the dataset's own rows are
imported, and the outside files are left untouched. Windows paths are refused on Linux too (they would otherwise
become odd relative names such as a file called ``C:\\x.wav`` in the dataset folder).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
import soundfile as sf

from alltalk_gui.core.dataset.byo_import import find_dataset, import_dataset
from alltalk_gui.core.dataset.metadata import TRAIN_CSV
from alltalk_gui.core.project.folder import VoiceProject
from tests.core.transcript.test_segments_support import RATE, voice_like

TEXT = "The quick brown fox jumps over the lazy dog."


def wav(path: Path, seed: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(path, voice_like(2.0, seed=seed), RATE)
    return path


def digest(*paths: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


@pytest.fixture
def outside(tmp_path) -> Path:
    """A private recording outside the dataset folder (the file a hostile row names)."""
    return wav(tmp_path / "private" / "secret.wav", seed=7)


def _imported_names(project: VoiceProject) -> list[str]:
    return sorted(s.name for s in project.sources)


def _lines(problems: list[str], needle: str) -> list[str]:
    return [p for p in problems if needle in p]


def test_ljspeech_rows_that_leave_the_folder_are_refused_with_file_and_line(tmp_path, outside):
    data = tmp_path / "lj"
    wav(data / "wavs" / "own.wav")
    (data / "wavs" / "link.wav").symlink_to(outside)            # a link inside pointing outside
    before = digest(outside)
    secret_id = str(outside.with_suffix(""))                    # /tmp/.../private/secret (absolute)
    rows = [f"own|{TEXT}",
            f"{secret_id}|{TEXT}",                              # line 2: absolute id
            f"../../private/secret|{TEXT}",                     # line 3: climbs out with ..
            f"link|{TEXT}",                                     # line 4: symlink to the outside file
            f"C:\\Users\\me\\secret|{TEXT}",                    # line 5: drive letter
            f"\\\\server\\share\\secret|{TEXT}",                # line 6: UNC
            f"sub/..\\..\\..\\private\\secret|{TEXT}"]          # line 7: mixed separators climbing out
    (data / "metadata.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    project = VoiceProject.create(tmp_path / "p", language="en")

    report = import_dataset(project, data)

    assert _imported_names(project) == ["own.wav"], report.problems
    assert len(report.imported) == 1
    for line in (2, 3, 4, 5, 6, 7):
        hits = _lines(report.problems, f"metadata.csv line {line}:")
        assert len(hits) == 1 and "outside the dataset folder" in hits[0], (line, report.problems)
    assert len(report.problems) == 6
    assert digest(outside) == before
    # Nothing of the outside file reached the project (by content: the copies are byte for byte).
    secret_hash = hashlib.sha256(outside.read_bytes()).hexdigest()
    assert all(s.sha256 != secret_hash for s in project.sources)


def test_coqui_rows_that_leave_the_folder_are_refused_with_file_and_line(tmp_path, outside):
    data = tmp_path / "coqui"
    wav(data / "wavs" / "own.wav")
    wav(tmp_path / "outside.wav", seed=3)
    (data / "wavs" / "link.wav").symlink_to(outside)
    (data / "wavs" / "dirlink").symlink_to(outside.parent, target_is_directory=True)  # a linked folder
    rows = ["audio_file|text|speaker_name",
            f"wavs/own.wav|{TEXT}|me",
            f"{outside}|{TEXT}|me",                              # line 3: absolute
            f"../outside.wav|{TEXT}|me",                         # line 4: ..
            f"wavs/link.wav|{TEXT}|me",                          # line 5: symlinked file
            f"wavs/dirlink/secret.wav|{TEXT}|me",                # line 6: through a symlinked folder
            f"C:\\data\\secret.wav|{TEXT}|me",                   # line 7: drive letter
            f"C:secret.wav|{TEXT}|me",                           # line 8: drive-relative
            f"\\\\server\\share\\secret.wav|{TEXT}|me",          # line 9: UNC
            f"//server/share/secret.wav|{TEXT}|me",              # line 10: UNC written with slashes
            f"wavs\\..\\..\\outside.wav|{TEXT}|me"]              # line 11: backslashes climbing out
    (data / TRAIN_CSV).write_text("\n".join(rows) + "\n", encoding="utf-8")
    project = VoiceProject.create(tmp_path / "p", language="en")

    report = import_dataset(project, data)

    assert _imported_names(project) == ["own.wav"], report.problems
    for line in range(3, 12):
        hits = _lines(report.problems, f"{TRAIN_CSV} line {line}:")
        assert len(hits) == 1 and "outside the dataset folder" in hits[0], (line, report.problems)
    assert len(report.problems) == 9


def test_a_windows_written_dataset_with_backslashes_inside_still_imports(tmp_path):
    """Backslashes are separators on every system: ``wavs\\own.wav`` from Windows is the dataset's own file."""
    data = tmp_path / "win"
    wav(data / "wavs" / "own.wav")
    (data / TRAIN_CSV).write_text(f"audio_file|text|speaker_name\nwavs\\own.wav|{TEXT}|me\n", encoding="utf-8")
    project = VoiceProject.create(tmp_path / "p", language="en")
    report = import_dataset(project, data)
    assert report.problems == [] and _imported_names(project) == ["own.wav"]


def test_a_link_that_stays_inside_the_dataset_folder_is_its_own_file(tmp_path):
    data = tmp_path / "lj"
    wav(data / "takes" / "own.wav")
    (data / "wavs").mkdir()
    (data / "wavs" / "own.wav").symlink_to(data / "takes" / "own.wav")
    (data / "metadata.csv").write_text(f"own|{TEXT}\n", encoding="utf-8")
    project = VoiceProject.create(tmp_path / "p", language="en")
    report = import_dataset(project, data)
    assert report.problems == [] and len(report.imported) == 1


def test_the_search_does_not_follow_a_linked_folder_out_of_the_chosen_folder(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    wav(elsewhere / "wavs" / "x.wav")
    (elsewhere / "metadata.csv").write_text(f"x|{TEXT}\n", encoding="utf-8")
    chosen = tmp_path / "chosen"
    chosen.mkdir()
    (chosen / "data").symlink_to(elsewhere, target_is_directory=True)
    from alltalk_gui.core.dataset.byo_import import DatasetImportError

    with pytest.raises(DatasetImportError, match="holds no dataset"):
        find_dataset(chosen)


def test_lang_txt_outside_the_chosen_folder_is_not_read_and_a_bad_one_is_ignored(tmp_path):
    data = tmp_path / "parent" / "lj"
    wav(data / "wavs" / "own.wav")
    (data / "metadata.csv").write_text(f"own|{TEXT}\n", encoding="utf-8")
    (tmp_path / "parent" / "lang.txt").write_text("de\n", encoding="utf-8")  # above the chosen folder
    project = VoiceProject.create(tmp_path / "p", language="en")
    assert import_dataset(project, data).language is None
    (data / "lang.txt").write_text("\x1b[2J" + "x" * 5000, encoding="utf-8")  # not a language
    report = import_dataset(VoiceProject.create(tmp_path / "p2", language="en"), data)
    assert report.language is None and any("lang.txt" in p for p in report.problems)
    (data / "lang.txt").write_text("DE\n", encoding="utf-8")
    assert import_dataset(VoiceProject.create(tmp_path / "p3", language="en"), data).language == "de"


@pytest.mark.skipif(os.name == "nt", reason="symlinks need privileges on Windows")
def test_the_file_imported_is_the_checked_one(tmp_path, outside):
    """The row's path is resolved once, and that real file is what gets copied (no second lookup through the link)."""
    data = tmp_path / "lj"
    own = wav(data / "wavs" / "own.wav")
    (data / "metadata.csv").write_text(f"own|{TEXT}\n", encoding="utf-8")
    project = VoiceProject.create(tmp_path / "p", language="en")
    report = import_dataset(project, data)
    assert len(report.imported) == 1
    assert project.sources[0].sha256 == hashlib.sha256(own.read_bytes()).hexdigest()
