"""``alltalk-gui import-dataset``: the help names every layout; a dataset of several speakers asks for
``--speaker`` (listing each one's clips) and imports the one named."""

from __future__ import annotations

import pytest

from alltalk_gui.cli import main
from alltalk_gui.core.dataset.byo_layouts import SUPPORTED_LAYOUTS
from alltalk_gui.core.project.folder import VoiceProject
from tests.core.dataset.test_byo_parquet import cells, parquet


def test_the_help_names_every_layout(capsys):
    with pytest.raises(SystemExit):
        main(["import-dataset", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    for layout in SUPPORTED_LAYOUTS:
        assert " ".join(layout.split()) in shown
    assert "--speaker" in shown


def test_several_speakers_ask_for_one(tmp_path, capsys):
    data = parquet(tmp_path / "hf" / "train.parquet", cells(3), ["One.", "Two.", "Three."],
                   speaker=["tara", "leo", "tara"])
    assert main(["new", str(tmp_path / "p"), "--language", "en"]) == 0
    capsys.readouterr()
    assert main(["import-dataset", str(tmp_path / "p"), str(data)]) == 2
    err = capsys.readouterr().err
    assert "tara (2 clips), leo (1 clip)" in err and "--speaker NAME" in err
    assert main(["import-dataset", str(tmp_path / "p"), str(tmp_path / "hf"), "--speaker", "tara"]) == 0
    out = capsys.readouterr().out
    assert "Hugging Face dataset (parquet or arrow)" in out and "speaker tara" in out and "2 clip(s) imported" in out
    assert len(VoiceProject.open(tmp_path / "p").sources) == 2
