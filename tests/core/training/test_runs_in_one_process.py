"""Several trainings in one process, each with its own settings: accelerate keeps its state per process
(AcceleratorState, GradientState, PartialState), and a second run with another precision was refused with
"AcceleratorState has already been initialized and cannot be changed" (the GPU suite's F5 preview fixture, after an
fp16 test, 2026-11-26). Each run now starts from a clean state: fp32 stopped in the middle of an epoch, then bf16
with accumulation, then fp32 again, all in this process, each training as it was asked to."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from alltalk_gui.core.engines.xtts import model as xtts_model
from alltalk_gui.core.training.events import Done, Error, Started, Step
from alltalk_gui.core.training.loop import train
from alltalk_gui.testing.speech import make_speech_dataset
from tests.core.training.tiny_training import fast_config


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("project")
    make_speech_dataset(root / "dataset", n_train=4, n_eval=1)
    return root


class AutocastInsideTheModel:
    """Wraps ``gpt_loss``: records, for each training pass, whether autocast is on inside the GPT's forward (where
    the prepared model switches the run's mixed precision on) and in which dtype."""

    def __init__(self, monkeypatch) -> None:
        self.real, self.seen = xtts_model.gpt_loss, []
        monkeypatch.setattr(xtts_model, "gpt_loss", self)

    def __call__(self, gpt, inputs, weights, **kw):
        def look(module, args):
            on = torch.is_autocast_enabled("cpu")
            self.seen.append(str(torch.get_autocast_dtype("cpu")) if on else "off")

        hook = getattr(gpt, "module", gpt).text_embedding.register_forward_pre_hook(look)
        try:
            return self.real(gpt, inputs, weights, **kw)
        finally:
            hook.remove()


def test_three_trainings_in_one_process_each_with_its_own_precision_and_accumulation(project, tiny, monkeypatch):
    runs = [("fp32_first", dict(mixed_precision="no", batch_size=1, grad_accum_steps=1, max_steps=1)),
            ("bf16_second", dict(mixed_precision="bf16", batch_size=1, grad_accum_steps=2, max_steps=2)),
            ("fp32_third", dict(mixed_precision="no", batch_size=2, grad_accum_steps=1, max_steps=1))]
    expected = {"fp32_first": ["off"], "bf16_second": ["torch.bfloat16"] * 4, "fp32_third": ["off"]}
    for name, settings in runs:
        seen = AutocastInsideTheModel(monkeypatch)
        events = list(train(fast_config(project, tiny, name, epochs=2, eval_each_epoch=False, **settings)))
        errors = [e.message for e in events if isinstance(e, Error)]
        assert not errors, errors[0][-2000:]
        assert isinstance(events[-1], Done) and events[-1].reason == "max_steps", (name, events[-2:])
        started = next(e for e in events if isinstance(e, Started))
        assert started.config["mixed_precision"] == settings["mixed_precision"]
        assert [e.step for e in events if isinstance(e, Step)] == list(range(1, settings["max_steps"] + 1))
        # Each optimizer step ran grad_accum_steps passes, each in the run's own precision.
        assert seen.seen == expected[name], (name, seen.seen)
        monkeypatch.undo()
