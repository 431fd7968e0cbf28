"""What the front ends used to branch on is each engine's answer now: its tiny test model, base-model description
for the first-run check, download repository, languages, packages, export extras and accelerate config. Every
registered engine gives them, so the GUI and the CLI never import an engine package."""

from __future__ import annotations

import importlib.metadata

import pytest

from alltalk_gui.core.engine_api.engine import BaseModelError, engine_names, get_engine
from alltalk_gui.core.engine_api.languages import CODES
from alltalk_gui.core.training.config import TrainConfig


@pytest.mark.parametrize("name", engine_names())
def test_each_engine_makes_its_test_model_and_describes_it(name, tmp_path):
    engine = get_engine(name)
    folder = engine.make_test_model(tmp_path / "tiny", seed=1)
    assert engine.validate_base_model(folder).parameters > 0
    words = engine.describe_base_model(folder)
    assert "parameters" in words and words.endswith(".")
    with pytest.raises(BaseModelError):
        engine.describe_base_model(tmp_path / "empty")


@pytest.mark.parametrize("name", engine_names())
def test_each_engine_says_what_the_set_up_pages_and_about_need(name):
    engine = get_engine(name)
    assert set(engine.languages) <= set(CODES) and engine.languages
    assert engine.base_model_hint and isinstance(engine.download_repo, str)
    for dist, what in engine.packages:
        assert importlib.metadata.version(dist) and what  # installed, and said what for
    # None: accelerate's default (data parallel); else a config accelerate's launcher reads for that many processes
    # (Orpheus: FSDP for a full fine-tune of its 3.3 B parameters, tests/core/engines/orpheus/test_fsdp.py).
    wanted = engine.accelerate_config(TrainConfig(engine=name), 2)
    assert wanted is None or (wanted["num_processes"] == 2 and wanted["distributed_type"])
    assert set(engine.export_folders) <= set(engine.export_formats)


def test_the_engines_differ_where_the_front_ends_used_to_branch():
    xtts, f5 = get_engine("xtts"), get_engine("f5")
    assert xtts.download_repo == "coqui/XTTS-v2" and f5.download_repo == ""  # F5 reads two repositories
    assert "dvae.pth" in xtts.export_training_files and f5.export_training_files == ""
    assert ("coqui-tts", "XTTS v2 model code") in xtts.packages and ("f5-tts", "F5-TTS model code") in f5.packages
    assert len(xtts.languages) == 17 and f5.languages == ("en", "zh-cn")
    assert xtts.accelerate_config(TrainConfig(), 2) is None and f5.accelerate_config(TrainConfig(engine="f5"), 2) is None
