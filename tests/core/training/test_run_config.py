"""build_train_config: project, then profile (adapted to the device), then the user's values, for CLI and GUI."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from alltalk_gui.core.machine.gpu import DeviceInfo
from alltalk_gui.core.training.config import ConfigError, TrainConfig
from alltalk_gui.core.training.profiles import load_profile
from alltalk_gui.core.training.run_config import build_train_config, training_device

CPU = DeviceInfo(kind="cpu", index=0, name="Test CPU", total_gib=24.0, free_gib=20.0, bf16=True, cores=2)
SMALL = DeviceInfo(kind="cuda", index=0, name="Small GPU", total_gib=8.0, free_gib=5.0, bf16=True, capability="8.6")
BIG = DeviceInfo(kind="cuda", index=1, name="Big GPU", total_gib=80.0, free_gib=78.0, bf16=True, capability="9.0")
PROJECT = SimpleNamespace(root=Path("/voices/anna"), language="de")


def test_without_a_profile_it_is_the_defaults_with_the_project_and_the_user_values():
    built = build_train_config(PROJECT, "/models/xtts", overrides={"epochs": 3}, pairs=["lr=1e-5"])
    assert built.profile is None and built.notes == [] and built.estimate_gib is None
    expected = TrainConfig(project_dir="/voices/anna", base_model_dir="/models/xtts", language="de", epochs=3,
                           lr=1e-5)
    assert built.config == expected


def test_the_user_values_win_over_the_profile_which_is_adapted_to_the_cpu():
    built = build_train_config(PROJECT, "/models/xtts", profile="medium", devices=[CPU],
                               overrides={"batch_size": 1}, pairs=["epochs=2"])
    medium = load_profile("medium").settings
    assert built.profile == "medium" and built.device == CPU
    assert built.config.profile == "medium" and built.config.batch_size == 1 and built.config.epochs == 2
    assert built.config.grad_accum_steps == medium["grad_accum_steps"]
    assert built.config.optimizer == "adamw" and built.config.mixed_precision == "no"  # no 8-bit, no bf16 on a CPU
    assert any("8-bit" in note for note in built.notes)
    assert built.estimate_gib is None  # the GPU estimate is given for CUDA devices only


def test_auto_picks_for_the_gpu_with_the_most_free_memory_and_sizes_its_micro_batch():
    built = build_train_config(PROJECT, "/models/xtts", profile="auto", devices=[SMALL, BIG, CPU])
    assert training_device([SMALL, BIG, CPU]) == BIG and built.device == BIG
    assert built.profile == "high" and built.auto_reason and "Big GPU" in built.auto_reason
    assert built.config.profile == "high" and built.config.auto_micro_batch
    assert 0 < built.estimate_gib < BIG.free_gib


def test_a_pick_made_elsewhere_counts_as_auto():
    built = build_train_config(None, "", profile="low", devices=[SMALL], auto=True)
    assert built.config.auto_micro_batch and built.auto_reason is None
    assert built.config.project_dir == "" and built.config.language == ""


def test_a_bad_key_value_pair_is_refused():
    with pytest.raises(ConfigError, match="Unknown training setting 'batch_sise'"):
        build_train_config(PROJECT, "/models/xtts", pairs=["batch_sise=2"])


# CPU twins of the CUDA-only branches of build_train_config and choose_auto: both run only for a CUDA device, so
# these pass DeviceInfo records of cards. The first GPU run on an H200 (2026-11-27) found both crashing.
FOUR_GIB = DeviceInfo(kind="cuda", index=0, name="4 GB card", total_gib=4.0, free_gib=3.6, bf16=True, capability="8.6")


@pytest.mark.parametrize("engine", ["xtts", "f5", "orpheus", "parler"])
def test_low_on_a_card_under_8_gb_starts_with_the_judge_off_and_says_so(engine):
    built = build_train_config(PROJECT, "", profile="low", devices=[FOUR_GIB, CPU], engine=engine)
    assert built.profile == "low" and built.device == FOUR_GIB
    assert built.config.judge is False
    assert any("judge is off under Low on this 4 GB card" in note for note in built.notes)
    assert built.estimate_gib is not None and built.estimate_gib > 0
    roomy = build_train_config(PROJECT, "", profile="low", devices=[BIG], engine=engine)
    assert roomy.config.judge is True and not any("judge is off" in note for note in roomy.notes)


@pytest.fixture
def unsized_parler(tmp_path) -> Path:
    """A Parler-TTS folder whose decoder is of no published size (as the tests' tiny model): no memory figures."""
    import json

    folder = tmp_path / "parler_small"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"decoder": {"hidden_size": 64, "num_hidden_layers": 2}}))
    return folder


@pytest.mark.parametrize("profile", ["low", "medium", "high"])
def test_a_base_model_without_memory_figures_builds_every_profile_on_a_card(unsized_parler, profile):
    from alltalk_gui.core.engine_api.engine import get_engine

    assert get_engine("parler").estimate_memory(TrainConfig(engine="parler", base_model_dir=str(unsized_parler))) \
        is None
    built = build_train_config(PROJECT, unsized_parler, profile=profile, devices=[BIG], engine="parler")
    assert built.profile == profile and built.estimate_gib is None and built.config.profile == profile


def test_auto_without_memory_figures_picks_medium_and_probes_the_micro_batch(unsized_parler):
    built = build_train_config(PROJECT, unsized_parler, profile="auto", devices=[SMALL, CPU], engine="parler")
    assert built.profile == "medium" and built.config.auto_micro_batch and built.estimate_gib is None
    assert "no memory figures" in built.auto_reason and "Small GPU" in built.auto_reason
    sized = build_train_config(PROJECT, "", profile="auto", devices=[SMALL, CPU], engine="parler")  # Mini's figures
    assert sized.estimate_gib is not None and "needs about" in sized.auto_reason


def test_a_dataset_of_short_clips_fills_the_micro_batch_and_lowers_the_estimate(tmp_path):
    """The project's dataset is read for its longest training clip: F5's High, sized for 30 s clips (2 x 4), runs
    8 x 1 on clips of 3 s, and the estimate shown is for 3 s clips; a caller that has read the length passes it."""
    import numpy as np
    import soundfile

    from alltalk_gui.core.dataset.metadata import TRAIN_CSV, MetadataRow, write_metadata

    dataset = tmp_path / "dataset"
    (dataset / "wavs").mkdir(parents=True)
    soundfile.write(dataset / "wavs" / "a.wav", np.zeros(3 * 24000, dtype=np.float32), 24000)
    write_metadata(dataset / TRAIN_CSV, [MetadataRow("wavs/a.wav", "Words.", "anna")])
    project = SimpleNamespace(root=tmp_path, language="en", dataset_dir=dataset)
    unread = SimpleNamespace(root=tmp_path, language="en", dataset_dir=tmp_path / "no dataset")
    short = build_train_config(project, "/models/f5", profile="high", devices=[BIG], engine="f5")
    long = build_train_config(unread, "/models/f5", profile="high", devices=[BIG], engine="f5")
    assert (short.config.batch_size, short.config.grad_accum_steps) == (8, 1)
    assert (long.config.batch_size, long.config.grad_accum_steps) == (2, 4)
    assert short.config.max_audio_seconds == long.config.max_audio_seconds == 30.0  # the run keeps its limit
    assert short.estimate_gib < long.estimate_gib
    assert any("on clips up to 3 s" in note for note in short.notes)
    given = build_train_config(unread, "/models/f5", profile="high", devices=[BIG], engine="f5", longest_clip_s=3.0)
    assert given.config == short.config and given.estimate_gib == short.estimate_gib
