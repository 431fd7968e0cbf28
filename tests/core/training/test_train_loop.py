"""The training loop on the tiny model and espeak-ng speech: it learns, it resumes exactly, it stops cleanly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.events import Checkpoint, Done, Eval, Log, Memory, Started, Step
from alltalk_gui.core.training.loop import CHECKPOINTS, STATE_FILE, latest_checkpoint, train
from alltalk_gui.testing.speech import make_speech_dataset
from tests.core.training.tiny_training import fast_config


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("project")
    make_speech_dataset(root / "dataset", n_train=4, n_eval=1)
    return root


_config = fast_config


def _run(config: TrainConfig, **kw) -> list:
    return list(train(config, **kw))


def test_it_learns(project, tiny):
    """Loss on the same few clips falls by at least 30 % within 12 steps (CPU, fp32)."""
    events = _run(_config(project, tiny, "learn", batch_size=2, epochs=6, lr_schedule="constant"))
    steps = [e for e in events if isinstance(e, Step)]
    assert len(steps) == 12 and isinstance(events[-1], Done) and events[-1].reason == "finished"
    first = sum(s.loss for s in steps[:2]) / 2
    last = sum(s.loss for s in steps[-2:]) / 2
    assert last < 0.7 * first, (first, last)
    # The set-up, which may compute features for minutes, is announced before it starts (not after, with Started).
    setting_up = next(i for i, e in enumerate(events) if isinstance(e, Log) and e.message.startswith("Setting up"))
    assert setting_up < next(i for i, e in enumerate(events) if isinstance(e, Started))
    assert "the 5 clips' features" in events[setting_up].message
    evals = [e for e in events if isinstance(e, Eval)]
    # The base model at step 0 (the baseline, never "best": it has no checkpoint), then one per epoch.
    assert len(evals) == 7 and evals[0].step == 0 and not evals[0].best and evals[-1].loss < evals[0].loss
    assert events.index(evals[0]) < events.index(steps[0])
    assert events[-1].base_eval_loss == evals[0].loss
    assert any(isinstance(e, Memory) and e.stats["rss"] > 0 for e in events)
    assert all(s.samples_per_s > 0 and s.lr == pytest.approx(1e-3) and s.grad_norm > 0 for s in steps)


def _weights(checkpoint: Path) -> dict[str, torch.Tensor]:
    return load_file(str(checkpoint / "model.safetensors"))


def test_resume_is_exact(project, tiny):
    """4 straight steps == 2 steps, a resume from the checkpoint, 2 more steps (fp32, CPU, dropout on)."""
    kw = dict(batch_size=1, epochs=3, lr_schedule="cosine", warmup_steps=1, grad_accum_steps=1)
    straight = _run(_config(project, tiny, "straight", max_steps=4, **kw))
    assert straight[-1].reason == "max_steps" and straight[-1].step == 4

    first = _run(_config(project, tiny, "split", max_steps=2, **kw))
    assert first[-1].step == 2
    second = _run(_config(project, tiny, "split", max_steps=4, **kw), resume=True)
    started = next(e for e in second if isinstance(e, Started))
    assert started.start_step == 2
    assert [e.step for e in second if isinstance(e, Step)] == [3, 4]

    a = _weights(latest_checkpoint(project / "runs" / "straight"))
    b = _weights(latest_checkpoint(project / "runs" / "split"))
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=1e-6, msg=name)
    losses_a = [e.loss for e in straight if isinstance(e, Step)]
    losses_b = [e.loss for e in first + second if isinstance(e, Step)]
    assert losses_a == pytest.approx(losses_b, rel=1e-6)
    # The weights really moved: the comparison above is not between two untouched copies.
    base = _weights(latest_checkpoint(project / "runs" / "split").parent / "step_0000002")
    assert any(not torch.equal(a[n], base[n]) for n in a)


def test_resume_with_gradient_accumulation_across_an_epoch_end(project, tiny):
    kw = dict(batch_size=1, grad_accum_steps=2, epochs=2, warmup_steps=0)
    straight = _run(_config(project, tiny, "acc_straight", **kw))
    assert [e.step for e in straight if isinstance(e, Step)] == [1, 2, 3, 4]
    _run(_config(project, tiny, "acc_split", max_steps=2, **kw))  # stops exactly at the epoch end
    second = _run(_config(project, tiny, "acc_split", **kw), resume=True)
    assert [e.step for e in second if isinstance(e, Step)] == [3, 4]
    a = _weights(latest_checkpoint(project / "runs" / "acc_straight"))
    b = _weights(latest_checkpoint(project / "runs" / "acc_split"))
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=1e-6, msg=name)


def test_stop_finishes_the_step_saves_and_keeps_going_later(project, tiny):
    calls = {"n": 0}

    def stop() -> bool:
        calls["n"] += 1
        return calls["n"] >= 3  # asked during step 3

    config = _config(project, tiny, "stopped", batch_size=1, epochs=2, save_every_steps=100)
    events = _run(config, stop=stop)
    assert events[-1].reason == "stopped" and events[-1].step == 3
    ckpt = [e for e in events if isinstance(e, Checkpoint)]
    assert ckpt[-1].reason == "stopped" and Path(ckpt[-1].path).name == "step_0000003"
    state = json.loads((Path(ckpt[-1].path) / STATE_FILE).read_text())
    assert state["global_step"] == 3 and state["batches_done"] == 3
    saved = TrainConfig.load(Path(ckpt[-1].path) / "train_config.json")
    assert saved.run_name == "stopped" and saved.lr == config.lr  # the resolved config goes with the checkpoint

    # A STOP file works the same way for a process that cannot be called (the GUI's child process).
    rest = _run(_config(project, tiny, "stopped", batch_size=1, epochs=2, save_every_steps=100), resume=True)
    assert [e.step for e in rest if isinstance(e, Step)] == [4, 5, 6, 7, 8]
    assert rest[-1].reason == "finished"


def test_a_stop_during_the_last_step_then_resume_trains_no_step_beyond_max_steps(project, tiny):
    """Stop asked during step 2 of max_steps=2 (the race the Train page loses when Stop comes late): the stop is
    honoured at step 2; the resume has no step left, so it trains none and ends the run there, as max_steps."""
    calls = {"n": 0}

    def stop() -> bool:
        calls["n"] += 1
        return calls["n"] >= 2  # polled once per step: asked during step 2

    kw = dict(batch_size=1, epochs=3, max_steps=2, save_every_steps=100)
    events = _run(_config(project, tiny, "stop_at_end", **kw), stop=stop)
    assert [e.step for e in events if isinstance(e, Step)] == [1, 2]
    assert events[-1].reason == "stopped" and events[-1].step == 2

    rest = _run(_config(project, tiny, "stop_at_end", **kw), resume=True)
    assert next(e for e in rest if isinstance(e, Started)).start_step == 2
    assert [e.step for e in rest if isinstance(e, Step)] == []  # not a step 3, beyond the limit
    assert rest[-1].reason == "max_steps" and rest[-1].step == 2
    # The stop's checkpoint is the run's final one now (the judge, which leaves a stopped one, scores it).
    assert [(e.step, e.reason) for e in rest if isinstance(e, Checkpoint)] == [(2, "final")]
    assert rest[-1].last_checkpoint.endswith("step_0000002")
    assert latest_checkpoint(project / "runs" / "stop_at_end").name == "step_0000002"


def test_stop_file(project, tiny):
    config = _config(project, tiny, "stopfile", batch_size=1, epochs=2)
    config.run_dir.mkdir(parents=True)
    (config.run_dir / "STOP").touch()
    events = _run(config)
    assert events[-1].reason == "stopped" and events[-1].step == 1
    assert (config.run_dir / CHECKPOINTS / "step_0000001" / STATE_FILE).is_file()


def test_keeps_last_k_and_the_best(project, tiny):
    events = _run(_config(project, tiny, "keep", batch_size=2, epochs=3, keep_last=1, save_every_steps=1,
                          lr=5e-2))  # a learning rate this high makes the eval loss jump around
    evals = {e.step: e.loss for e in events if isinstance(e, Eval) and e.step > 0}  # step 0: the base model
    best_step = min(evals, key=evals.get)
    kept = sorted(p.name for p in (project / "runs" / "keep" / CHECKPOINTS).iterdir())
    expected = {f"step_{max(evals):07d}", f"step_{best_step:07d}"}
    assert set(kept) == expected
    assert events[-1].best_checkpoint.endswith(f"step_{best_step:07d}")


def test_a_checkpoint_that_cannot_be_deleted_is_reported(project, tiny, monkeypatch):
    """Pruning that fails (a file held open on Windows) leaves the folder and says so, instead of ignoring it."""
    from alltalk_gui.core import folders
    from alltalk_gui.core.training.events import Log

    def locked(path):
        raise PermissionError(13, "Access is denied", str(path))

    monkeypatch.setattr(folders, "_rmtree", locked)
    monkeypatch.setattr(folders, "RETRY_DELAYS_S", ())
    events = _run(_config(project, tiny, "locked", batch_size=2, epochs=1, keep_last=1, save_every_steps=1,
                          eval_each_epoch=False))
    assert events[-1].reason == "finished"
    root = project / "runs" / "locked" / CHECKPOINTS
    assert (root / "step_0000001").is_dir()  # could not be pruned, so it is still there ...
    warnings = [e.message for e in events if isinstance(e, Log) and e.level == "warning"]
    assert warnings == [f"Could not delete {root / 'step_0000001'}: Access is denied. Delete it by hand to free "
                        "its space."]  # ... and the run said so, once
