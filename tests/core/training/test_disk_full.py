"""Issue 29 item 2: a disk that fills up during training is survivable.

The acceptance run: checkpoints after every step, two kept; the third checkpoint hits a full disk. The run stops
with an Error that says where, about how much is needed and how much is free; the partial checkpoint is removed;
the first two checkpoints are untouched; and once space is freed, a resume continues from the second and ends
with exactly the weights of a run that never stopped.

Where this machine may mount a tmpfs (root), the full disk is a real one: the run's folder is a tmpfs, and after
the second checkpoint its limits are lowered, so the kernel itself refuses the third: by its number of files
(the write fails midway: the pre-save space check sees free bytes) or by its bytes (the pre-save check refuses
before anything is written). Elsewhere the weights write of the third checkpoint fails halfway with ENOSPC
(:func:`tests.small_filesystem.failing_weights_write`). An I/O error that is not a full disk stops the run the
same way.
"""

from __future__ import annotations

import errno
import hashlib
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from alltalk_gui.core.training.events import Checkpoint, Done, Error, Started, Step
from alltalk_gui.core.training.loop import CHECKPOINTS, latest_checkpoint, train
from alltalk_gui.testing.speech import make_speech_dataset
from tests.core.training.tiny_training import fast_config
from tests.small_filesystem import failing_weights_write, tmpfs, tmpfs_available

STEPS = 4
needs_tmpfs = pytest.mark.skipif(not tmpfs_available(), reason="mounting a tmpfs needs root (CAP_SYS_ADMIN)")


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("project")
    make_speech_dataset(root / "dataset", n_train=4, n_eval=1)
    return root


def _config(project: Path, tiny: Path, run: str):
    # A checkpoint after every step, the two newest kept (no evals: no "best" besides them).
    return fast_config(project, tiny, run, batch_size=1, epochs=3, max_steps=STEPS, save_every_steps=1,
                       keep_last=2, eval_each_epoch=False, lr_schedule="cosine", warmup_steps=1)


def _weights(checkpoint: Path) -> dict[str, torch.Tensor]:
    return load_file(str(checkpoint / "model.safetensors"))


def _digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def straight(project, tiny) -> dict[str, torch.Tensor]:
    """The weights of a run that never stopped."""
    events = list(train(_config(project, tiny, "straight")))
    assert events[-1].reason == "max_steps" and events[-1].step == STEPS
    return _weights(latest_checkpoint(project / "runs" / "straight"))


def _run_until_full(config, on_second_checkpoint) -> tuple[list, dict[str, str]]:
    """Train; when the second checkpoint is written, call ``on_second_checkpoint`` (which fills the disk) and
    remember the first two checkpoints' bytes."""
    events, kept = [], {}
    for event in train(config):
        events.append(event)
        if isinstance(event, Checkpoint) and event.step == 2:
            kept = _digests(config.run_dir / CHECKPOINTS)
            on_second_checkpoint()
    return events, kept


def _assert_stopped_cleanly(config, events, kept, kind: str = "disk_full") -> Error:
    error = next(e for e in events if isinstance(e, Error))
    assert error.kind == kind, error.message
    checkpoints = config.run_dir / CHECKPOINTS
    # Where, how much is needed and how much is free: in the message and as the event's numbers.
    assert str(checkpoints) in error.message and error.folder == str(checkpoints), error.message
    assert "needed" in error.message and "free" in error.message, error.message
    assert error.needed_bytes and error.needed_bytes > 0 and error.free_bytes is not None
    assert "The last checkpoint (step_0000002) is kept" in error.message and "--resume" in error.message
    done = events[-1]
    assert isinstance(done, Done) and done.reason == "error" and done.last_checkpoint.endswith("step_0000002")
    assert not any(isinstance(e, Checkpoint) and e.step == 3 for e in events)
    # The first two untouched, no partial third (no .tmp-* folder), nothing else.
    assert sorted(p.name for p in checkpoints.iterdir()) == ["step_0000001", "step_0000002"]
    assert _digests(checkpoints) == kept
    return error


def _resume_equals_straight(config, straight) -> None:
    rest = list(train(config, resume=True))
    started = next(e for e in rest if isinstance(e, Started))
    assert started.start_step == 2, "the resume starts from the last good checkpoint"
    assert [e.step for e in rest if isinstance(e, Step)] == [3, 4]
    assert rest[-1].reason == "max_steps"
    resumed = _weights(latest_checkpoint(config.run_dir))
    assert resumed.keys() == straight.keys()
    for name in straight:
        torch.testing.assert_close(resumed[name], straight[name], rtol=0, atol=1e-6, msg=name)


@needs_tmpfs
def test_a_real_disk_that_fills_during_the_third_checkpoint(project, tiny, straight):
    """The kernel refuses a file of the third checkpoint midway through writing it (the file system has no
    inodes left, while the pre-save check sees enough free bytes): the run stops, the partial checkpoint goes."""
    config = _config(project, tiny, "full_midway")
    with tmpfs(project / "runs" / "full_midway", size=512 << 20) as fs:
        def fill() -> None:
            _bytes, inodes = fs.used()
            fs.remount(inodes=inodes + 2)  # the third checkpoint's folder and its weights file, then nothing

        events, kept = _run_until_full(config, fill)
        error = _assert_stopped_cleanly(config, events, kept)
        assert "The checkpoint at step 3 could not be written" in error.message and "disk is full" in error.message
        assert "The partial checkpoint was removed" in error.message

        fs.remount(inodes=100_000)  # space freed
        _resume_equals_straight(config, straight)


@needs_tmpfs
def test_a_real_disk_without_room_for_the_third_checkpoint(project, tiny, straight):
    """The third checkpoint does not fit in the free bytes: the check before writing it stops the run, with the
    same message and nothing written."""
    config = _config(project, tiny, "full_before")
    with tmpfs(project / "runs" / "full_before", size=512 << 20) as fs:
        def fill() -> None:
            used, _inodes = fs.used()
            fs.remount(size=used + (8 << 20))  # less than one more checkpoint and its headroom

        events, kept = _run_until_full(config, fill)
        error = _assert_stopped_cleanly(config, events, kept)
        assert "Not enough free disk space for a checkpoint" in error.message

        fs.remount(size=512 << 20)
        _resume_equals_straight(config, straight)


@pytest.mark.skipif(tmpfs_available(), reason="the tests on a real small file system run instead")
def test_a_weights_write_that_fails_midway_with_enospc(project, tiny, straight, monkeypatch):
    """The same on any machine: the weights file of the third checkpoint stops halfway with ENOSPC."""
    config = _config(project, tiny, "enospc")
    written = failing_weights_write(monkeypatch, fail_call=3)
    events, kept = _run_until_full(config, lambda: None)
    assert len(written) == 3 and ".tmp-step_0000003" in written[2]
    error = _assert_stopped_cleanly(config, events, kept)
    assert "The checkpoint at step 3 could not be written" in error.message and "disk is full" in error.message
    monkeypatch.undo()
    _resume_equals_straight(config, straight)


def test_any_other_write_error_while_saving_also_stops_the_run_cleanly(project, tiny, monkeypatch):
    config = _config(project, tiny, "io_error")
    failing_weights_write(monkeypatch, fail_call=3, error=errno.EIO)
    events, kept = _run_until_full(config, lambda: None)
    error = _assert_stopped_cleanly(config, events, kept, kind="save_failed")
    assert "could not be written" in error.message and "Input/output error" in error.message


def test_the_engines_checkpoint_size_is_a_little_over_a_real_checkpoint(project, tiny, straight):
    """What the checks before the run and before the first checkpoint go by, against what the run really wrote."""
    from alltalk_gui.core.engine_api.engine import get_engine

    config = _config(project, tiny, "straight")
    real = sum(f.stat().st_size for f in latest_checkpoint(config.run_dir).iterdir() if f.is_file())
    estimate = get_engine("xtts").disk_needs(config).checkpoint_bytes
    assert real <= estimate <= 1.3 * real, (real, estimate)
