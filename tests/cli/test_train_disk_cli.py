"""Issue 29 item 2: ``alltalk-gui train`` warns before it starts when the run's checkpoints and an export will not
fit on the disk, says which ``--keep-last`` would, and ``--keep-last`` lowers the number kept.

On a real small file system (a tmpfs holding the project) where this machine allows one; elsewhere the CLI runs
in this process with the OS's free-space call answering the same small figure.
"""

from __future__ import annotations

import shutil
from collections import namedtuple
from pathlib import Path

import pytest

from alltalk_gui.cli import main
from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.disk_plan import plan_disk
from alltalk_gui.testing.speech import make_speech_dataset
from tests.cli.test_train_cli import FAST, cli
from tests.small_filesystem import tmpfs, tmpfs_available

Usage = namedtuple("Usage", "total used free")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    from alltalk_gui.core.engines.xtts.tiny_model import build_tiny_xtts

    return build_tiny_xtts(tmp_path_factory.mktemp("tiny"))


def _free_for_one_checkpoint_kept(tiny: Path, project: Path) -> int:
    """Free bytes between what keeping one checkpoint and keeping two need (with an export)."""
    plan = plan_disk(TrainConfig(base_model_dir=str(tiny), project_dir=str(project), run_name="r"))
    low, high = plan.needed_bytes(1), plan.needed_bytes(2)
    assert high - low > 4 << 20
    return low + (3 << 20)


def _train_args(project: Path, tiny: Path, *more: str) -> list[str]:
    return ["train", str(project), "--base-model", str(tiny), "--run", "r", "--set", "max_steps=1",
            "--set", "batch_size=1", *FAST, *more]


def _check(out: str, err: str, code: int) -> None:
    assert code == 0, err + out
    warning = next((line for line in err.splitlines() if line.startswith("Warning: ")), "")
    assert warning.startswith("Warning: Not enough free disk space for this run."), err
    assert "4 checkpoints of about" in warning and "(2 kept + the best + one being written)" in warning
    assert "Keeping 1 checkpoint instead of 2 would fit" in warning and warning.endswith("(--keep-last 1)")
    assert "Done (max_steps)" in out  # a warning, not a refusal: the run went ahead


@pytest.mark.skipif(not tmpfs_available(), reason="mounting a tmpfs needs root (CAP_SYS_ADMIN)")
def test_train_warns_on_a_small_real_disk_and_keep_last_lowers_it(tmp_path, tiny):
    with tmpfs(tmp_path / "disk", size=64 << 20) as fs:
        project = tmp_path / "disk" / "voice"
        assert cli("new", str(project)).returncode == 0
        make_speech_dataset(project / "dataset", n_train=3, n_eval=1)
        used, _ = fs.used()
        fs.remount(size=used + _free_for_one_checkpoint_kept(tiny, project))

        result = cli(*_train_args(project, tiny))
        _check(result.stdout, result.stderr, result.returncode)

        shutil.rmtree(project / "runs" / "r")  # the space it took freed again
        result = cli(*_train_args(project, tiny, "--keep-last", "1", "--run", "r2"))
        assert result.returncode == 0 and "Warning" not in result.stderr, result.stderr
        assert "Disk: About" in result.stdout and "(1 kept + the best + one being written" in result.stdout


@pytest.mark.skipif(tmpfs_available(), reason="the test on a real small file system runs instead")
def test_train_warns_when_the_free_space_is_too_small(tmp_path, tiny, monkeypatch, capsys):
    project = tmp_path / "voice"
    assert main(["new", str(project)]) == 0
    make_speech_dataset(project / "dataset", n_train=3, n_eval=1)
    free = _free_for_one_checkpoint_kept(tiny, project)
    real = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(real(path).total, real(path).used, free))
    capsys.readouterr()
    code = main(_train_args(project, tiny))
    out, err = capsys.readouterr()
    _check(out, err, code)
