"""XTTS's frozen front end runs once per clip: the first run computes and caches every clip's DVAE codes and
conditioning mel, a later run reads them (the DVAE is never built), and training learns exactly the same: the
losses, the learning rates, the effective batch and the schedule of a run from the cache equal those of a run that
computed everything and kept nothing (fp32, CPU). A damaged entry is computed again, never trusted."""

from __future__ import annotations

from pathlib import Path

import pytest
from safetensors.torch import load_file

from alltalk_gui.core.engines.xtts import front_end
from alltalk_gui.core.engines.xtts.front_end import FrontEnd
from alltalk_gui.core.training.events import Eval, Log, MicroBatch, Started, Step
from alltalk_gui.core.training.feature_cache import CACHE_DIR, file_digest
from alltalk_gui.core.training.loop import latest_checkpoint, train
from alltalk_gui.testing.speech import make_speech_dataset
from tests.core.training.tiny_training import fast_config

TRAIN, EVAL = 4, 1


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("project")
    make_speech_dataset(root / "dataset", n_train=TRAIN, n_eval=EVAL)
    return root


class Counted:
    """Counts the clips the DVAE encodes and the front ends built during a run."""

    def __init__(self, monkeypatch) -> None:
        self.built = 0
        real_init = FrontEnd.__init__

        def init(front, *args, **kw):
            self.built += 1
            real_init(front, *args, **kw)

        monkeypatch.setattr(FrontEnd, "__init__", init)
        monkeypatch.setattr(FrontEnd, "calls", 0)

    @property
    def encoded(self) -> int:
        return FrontEnd.calls


def _run(project: Path, tiny: Path, name: str, **kw) -> list:
    config = fast_config(project, tiny, name, **{"batch_size": 2, "grad_accum_steps": 2, "epochs": 2,
                                                 "lr_schedule": "cosine", "warmup_steps": 1, **kw})
    return list(train(config))


def _summary(events: list) -> dict:
    steps = [e for e in events if isinstance(e, Step)]
    started = next(e for e in events if isinstance(e, Started))
    return {"losses": [s.loss for s in steps], "parts": [(s.parts["loss_text_ce"], s.parts["loss_mel_ce"]) for s in steps],
            "lr": [s.lr for s in steps], "evals": [e.loss for e in events if isinstance(e, Eval)],
            "schedule": (started.steps_per_epoch, started.total_steps, started.config["batch_size"],
                         started.config["grad_accum_steps"]),
            "resized": [e for e in events if isinstance(e, MicroBatch)]}


def test_the_cached_front_end_trains_exactly_as_the_one_computed_each_time(project, tiny, monkeypatch):
    # 1. Nothing kept (no cache folder): every clip computed, as a run whose cache cannot be written.
    counted = Counted(monkeypatch)
    monkeypatch.setattr(front_end, "cache_root", lambda config: None)
    uncached = _run(project, tiny, "uncached")
    assert counted.encoded == TRAIN + EVAL and not (project / CACHE_DIR).exists()
    monkeypatch.undo()

    # 2. A first run with the cache: computes and keeps every clip.
    counted = Counted(monkeypatch)
    first = _run(project, tiny, "first")
    assert counted.encoded == TRAIN + EVAL and counted.built == 1
    [folder] = (project / CACHE_DIR).iterdir()
    assert len(list(folder.glob("*.npz"))) == TRAIN + EVAL
    notes = [e.message for e in first if isinstance(e, Log) and "Frozen front end" in e.message]
    assert notes and f"0 clip(s) read from the cache, {TRAIN + EVAL} computed" in notes[0]

    # 3. A second run reads them all: the DVAE is never built.
    counted = Counted(monkeypatch)
    second = _run(project, tiny, "second")
    assert counted.encoded == 0 and counted.built == 0
    assert any(f"{TRAIN + EVAL} clip(s) read from the cache, 0 computed" in e.message
               for e in second if isinstance(e, Log))

    a, b, c = _summary(uncached), _summary(first), _summary(second)
    assert len(a["losses"]) == 2 and not a["resized"] and not b["resized"] and not c["resized"]
    assert a["schedule"] == b["schedule"] == c["schedule"] == (1, 2, 2, 2)  # effective batch 4, 1 step an epoch
    assert a["lr"] == b["lr"] == c["lr"]
    for other in (b, c):
        assert other["losses"] == pytest.approx(a["losses"], rel=1e-5, abs=1e-5)
        assert other["evals"] == pytest.approx(a["evals"], rel=1e-5, abs=1e-5)
        for ours, theirs in zip(other["parts"], a["parts"]):
            assert ours == pytest.approx(theirs, rel=1e-5, abs=1e-5)
    weights = [load_file(str(latest_checkpoint(project / "runs" / run) / "model.safetensors"))
               for run in ("uncached", "second")]
    for name, tensor in weights[0].items():
        assert (tensor - weights[1][name]).abs().max() <= 1e-5, name


def test_a_damaged_or_stale_entry_is_computed_again(project, tiny, monkeypatch):
    short = dict(epochs=1, eval_each_epoch=False)
    _run(project, tiny, "fill", **short)  # every clip cached (or already was)
    [folder] = (project / CACHE_DIR).iterdir()
    clips = sorted((project / "dataset" / "wavs").glob("*.wav"))
    damaged, swapped, other = (folder / f"{file_digest(c)}.npz" for c in clips[:3])
    damaged.write_bytes(damaged.read_bytes()[:100])          # a torn write
    swapped.write_bytes(other.read_bytes())                  # another clip's entry under this clip's name
    counted = Counted(monkeypatch)
    events = _run(project, tiny, "repaired", **short)
    assert counted.encoded == 2 and counted.built == 1
    assert any("2 cached entries were damaged or stale and computed again" in e.message
               for e in events if isinstance(e, Log))
    counted = Counted(monkeypatch)
    _run(project, tiny, "after", **short)
    assert counted.encoded == 0  # both entries were replaced by good ones


def test_the_set_up_reports_the_clips_it_computes_into_the_events_file(tmp_path, tiny, monkeypatch):
    """The first run computes every clip's features before its first step: the set-up says how far it got while it
    works (Preparing events, written to events.jsonl at once and given to the caller, as the CLI shows them),
    between 'Setting up' and Started; a run that reads them all says nothing of the kind."""
    import json

    from alltalk_gui.core.training import feature_cache
    from alltalk_gui.core.training.event_text import event_text
    from alltalk_gui.core.training.events import Preparing
    from alltalk_gui.core.training.runner import run_to_sink

    monkeypatch.setattr(feature_cache, "REPORT_EVERY_S", 0.0)
    make_speech_dataset(tmp_path / "dataset", n_train=2, n_eval=1)
    announced: list = []
    for name, computed in (("first", True), ("second", False)):
        config = fast_config(tmp_path, tiny, name, max_steps=1, judge=False)
        events = list(run_to_sink(config, resume=False, events_path=None, observers=[], announce=announced.append))
        assert [(e.what, e.computed, e.read) for e in announced] == (
            [(front_end.KIND, n, 0) for n in (1, 2, 3)] if computed else [])
        if computed:
            assert event_text(announced[-1]) == ("Computing the clips' features (xtts-front-end): 3 clip(s) "
                                                 "computed, 0 read from the cache so far.")
        written = [json.loads(line) for line in (config.run_dir / "events.jsonl").read_text().splitlines()]
        types = [e["type"] for e in written]
        setting_up = next(i for i, e in enumerate(written) if e.get("message", "").startswith("Setting up"))
        started = types.index("started")
        if computed:
            assert setting_up < types.index("preparing") and types.count("preparing") == 3
            assert max(i for i, t in enumerate(types) if t == "preparing") < started
        else:
            assert "preparing" not in types and setting_up < started
        assert not any(isinstance(e, Preparing) for e in events)  # announced, never yielded twice
        announced.clear()


def test_a_stop_during_the_set_up_ends_the_run_before_its_first_step_keeping_what_was_computed(tmp_path, tiny,
                                                                                               monkeypatch):
    """Stop (the Stop button's STOP file, Ctrl+C, SIGTERM) while the first run computes the clips' features: the
    run ends before the next clip, without a step or a checkpoint, saying so; the clips computed are kept, and the
    next run computes only the rest. Before, a stop waited for the whole set-up (minutes on a CPU) and one step."""
    from alltalk_gui.core.training.events import Done

    counted = Counted(monkeypatch)
    make_speech_dataset(tmp_path / "dataset", n_train=2, n_eval=1)
    events = list(train(fast_config(tmp_path, tiny, "stopped", max_steps=1, judge=False),
                        stop=lambda: counted.encoded >= 1))
    assert not any(isinstance(e, (Started, Step)) for e in events)
    assert isinstance(events[-1], Done) and events[-1].reason == "stopped" and events[-1].last_checkpoint is None
    said = [e.message for e in events if isinstance(e, Log)]
    assert any(m.startswith("Stopped before the first step") and "1 clip(s) computed and kept" in m for m in said)
    assert counted.encoded == 1 and latest_checkpoint(tmp_path / "runs" / "stopped") is None
    events = list(train(fast_config(tmp_path, tiny, "again", max_steps=1, judge=False)))
    assert events[-1].reason == "max_steps" and counted.encoded == 3  # the other two clips only
