"""The CPU training-time estimate: calibrated from the committed CPU step measurement, scaled by audio, epochs,
steps and cores, read from a real dataset folder, and stated in plain words."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import soundfile

from alltalk_gui.core.training import cpu_estimate
from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.cpu_estimate import (
    DatasetSize,
    dataset_size,
    duration_words,
    estimate_cpu,
    estimate_for_config,
    seconds_per_audio_second,
    typical_run,
)

MEASUREMENT = Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "xtts_cpu_step_2026-11-22.json"


@pytest.fixture(scope="module")
def measured() -> dict:
    """The fp32 and bf16 rows of the committed benchmark, by precision."""
    data = json.loads(MEASUREMENT.read_text(encoding="utf-8"))
    return {row["precision"]: row | {"cores": data["machine"]["cores"]} for row in data["results"]}


def per_audio_second(row: dict) -> float:
    return row["mean_step_s"] / (row["batch"] * row["clip_seconds"])


def test_the_calibration_is_the_committed_measurement(measured):
    cal = cpu_estimate._calibration()
    for precision, row in measured.items():
        assert cal["mean_step_s"][precision] == row["mean_step_s"]
        assert (cal["batch"], cal["clip_seconds"], cal["cores"]) == (row["batch"], row["clip_seconds"], row["cores"])
        assert row["threads"] == row["cores"]  # measured with one thread per core


def test_seconds_of_work_per_second_of_audio_follow_the_measurement(measured):
    fp32 = per_audio_second(measured["no"])
    assert fp32 == pytest.approx(145.39 / 12)
    assert seconds_per_audio_second(2) == pytest.approx(fp32)
    assert seconds_per_audio_second(1) == pytest.approx(2 * fp32)
    assert seconds_per_audio_second(4) == pytest.approx(fp32 / 2)
    assert seconds_per_audio_second(64) == seconds_per_audio_second(8)  # no faster beyond the scaling limit
    assert seconds_per_audio_second(2, "bf16") == pytest.approx(per_audio_second(measured["bf16"]))
    assert seconds_per_audio_second(2, "fp16") == seconds_per_audio_second(2, "bf16")
    assert seconds_per_audio_second(2, gradient_checkpointing=True) == pytest.approx(1.33 * fp32)


def test_ten_epochs_of_six_minutes_on_two_cores(measured):
    hours = 10 * 360 * per_audio_second(measured["no"]) / 3600
    estimate = typical_run(2)
    assert estimate.hours == pytest.approx(hours)  # about 12.1
    assert estimate.sentence() == "about 12 hours for 10 epochs of 6 minutes of audio on 2 cores"


def test_eval_clips_add_a_forward_pass_each_epoch(measured):
    size = DatasetSize(train_clips=60, train_seconds=360, eval_clips=6, eval_seconds=36)
    config = TrainConfig(epochs=4)
    with_eval = estimate_cpu(config, size, 2).hours
    without = estimate_cpu(replace(config, eval_each_epoch=False), size, 2).hours
    assert with_eval - without == pytest.approx(4 * 36 * 0.33 * per_audio_second(measured["no"]) / 3600)


def test_max_steps_cuts_the_run_short_and_says_so():
    size = DatasetSize(train_clips=60, train_seconds=360)
    config = TrainConfig(epochs=10, batch_size=2, grad_accum_steps=3, max_steps=5)  # 10 steps per epoch
    estimate = estimate_cpu(config, size, 2)
    assert estimate.hours == pytest.approx(estimate_cpu(replace(config, max_steps=0), size, 2).hours / 20)
    assert estimate.sentence().endswith("for 5 steps on 6 minutes of audio on 2 cores")
    assert estimate_cpu(replace(config, max_steps=1000), size, 2).steps == 0  # the epochs end first


def write_clips(folder: Path, csv: str, seconds: list[float]) -> None:
    (folder / "wavs").mkdir(parents=True, exist_ok=True)
    lines = ["audio_file|text|speaker_name"]
    for i, s in enumerate(seconds):
        name = f"wavs/{csv}_{i}.wav"
        soundfile.write(folder / name, np.zeros(int(s * 22050), dtype=np.float32), 22050)
        lines.append(f"{name}|Clip {i}.|speaker")
    (folder / f"metadata_{csv}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_the_dataset_is_measured_from_its_clips(tmp_path):
    write_clips(tmp_path, "train", [6.0, 4.5, 9.5])
    write_clips(tmp_path, "eval", [3.0])
    (tmp_path / "wavs" / "train_1.wav").unlink()  # a missing clip is training's to report
    size = dataset_size(tmp_path)
    assert (size.train_clips, size.eval_clips) == (3, 1)
    assert size.train_seconds == pytest.approx(15.5, abs=1e-3) and size.eval_seconds == pytest.approx(3.0, abs=1e-3)
    assert dataset_size(tmp_path / "nothing") is None


def test_a_config_uses_its_dataset_or_the_reference_minutes(tmp_path):
    write_clips(tmp_path / "dataset", "train", [60.0] * 3)
    here = estimate_for_config(TrainConfig(project_dir=str(tmp_path), epochs=1, eval_each_epoch=False), 2)
    assert here.train_minutes == pytest.approx(3.0) and here.sentence().startswith("about 35 minutes for 1 epoch of 3")
    empty = estimate_for_config(TrainConfig(project_dir=str(tmp_path / "new")), 2)
    assert empty.train_minutes == cpu_estimate.REFERENCE_MINUTES


@pytest.mark.parametrize("hours, words", [
    (0.01, "5 minutes"), (0.5, "30 minutes"), (1.0, "1 hour"), (1.3, "1.5 hours"), (9.6, "9.5 hours"),
    (12.1, "12 hours"), (70, "3 days (70 hours)"),
])
def test_durations_in_words(hours, words):
    assert duration_words(hours) == words


F5_MEASUREMENT = MEASUREMENT.with_name("f5_cpu_step_2026-11-26.json")


def test_f5_is_calibrated_by_its_own_measurement_with_bf16_by_the_stated_factor():
    row = json.loads(F5_MEASUREMENT.read_text(encoding="utf-8"))["results"][0]
    cal = cpu_estimate._calibration("f5")
    assert row["precision"] == "no" and cal["mean_step_s"] == {"no": row["mean_step_s"]}
    fp32 = row["mean_step_s"] / (row["batch"] * row["clip_seconds"])
    assert seconds_per_audio_second(2, engine="f5") == pytest.approx(fp32)
    assert seconds_per_audio_second(2, "bf16", engine="f5") == pytest.approx(fp32 * 1463.98 / 145.39, rel=1e-3)


def test_evals_are_counted_only_where_the_run_makes_them():
    size = DatasetSize(train_clips=60, train_seconds=360, eval_clips=6, eval_seconds=36)
    config = TrainConfig(engine="f5", epochs=100, checkpoint_every_epochs=10)
    with_eval = estimate_cpu(config, size, 2).hours
    without = estimate_cpu(replace(config, eval_each_epoch=False), size, 2).hours
    per_eval = 36 * 1.33 * seconds_per_audio_second(2, engine="f5") / 3600
    assert with_eval - without == pytest.approx(10 * per_eval)  # epochs 10, 20, ... 100
    assert estimate_cpu(replace(config, epochs=95), size, 2).hours - estimate_cpu(
        replace(config, epochs=95, eval_each_epoch=False), size, 2).hours == pytest.approx(10 * per_eval)  # + the last
