"""F5-TTS through the app's own training loop (``train(TrainConfig(engine="f5"))``) on the tiny model and espeak-ng
speech, on the CPU: it learns, LoRA trains only the adapters, a resume (EMA included) is exact, bad datasets are
refused with every problem listed, and missing characters are added only with consent."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from alltalk_gui.core.dataset.metadata import EVAL_CSV, TRAIN_CSV, MetadataRow, read_metadata, write_metadata
from alltalk_gui.core.engine_api.engine import get_engine
from alltalk_gui.core.engines.f5.files import read_vocab
from alltalk_gui.core.engines.f5.memory_estimate import lora_parameters
from alltalk_gui.core.engines.f5.tuned import RUN_VOCAB, tuned_cfm
from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.events import Done, Error, ErrorKind, Eval, Log, Started, Step
from alltalk_gui.core.training.loop import latest_checkpoint, train
from alltalk_gui.testing.speech import make_speech_dataset


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("f5_project")
    make_speech_dataset(root / "dataset", n_train=4, n_eval=1)
    return root


def f5_config(project: Path, tiny_f5: Path, run: str, **settings) -> TrainConfig:
    """The tiny F5 model on the CPU, quickly: a rate far above F5's 1e-5 makes a few steps visible."""
    defaults = dict(engine="f5", project_dir=str(project), base_model_dir=str(tiny_f5), run_name=run, device="cpu",
                    language="en", lr=3e-3, lr_batch=0, warmup_steps=0, memory_interval_s=0.0, batch_size=2,
                    max_audio_seconds=30.0, min_audio_seconds=1.0)
    return TrainConfig().with_values({**defaults, **settings})  # F5's options (ema_decay...) by name too


def run(config: TrainConfig, **kw) -> list:
    return list(train(config, **kw))


def checkpoint_weights(project: Path, run_name: str) -> dict[str, torch.Tensor]:
    return load_file(str(latest_checkpoint(project / "runs" / run_name) / "model.safetensors"))


def test_a_full_fine_tune_lowers_the_eval_loss(project, tiny_f5):
    events = run(f5_config(project, tiny_f5, "full", epochs=5, lr_schedule="cosine", warmup_steps=1))
    assert isinstance(events[-1], Done) and events[-1].reason == "finished", events[-3:]
    steps = [e for e in events if isinstance(e, Step)]
    evals = [e for e in events if isinstance(e, Eval)]
    assert len(steps) == 10 and len(evals) == 6 and evals[0].step == 0
    assert evals[-1].loss < 0.85 * evals[0].loss, [e.loss for e in evals]
    assert all(s.parts == {} for s in steps)  # F5 has one loss
    assert steps[-1].lr < steps[1].lr  # warm-up, then the cosine decay
    started = next(e for e in events if isinstance(e, Started))
    assert started.trainable_parameters == sum(p.numel() for p in tuned_cfm(tiny_f5, None).cfm.parameters())


def test_eval_loss_is_the_same_for_the_same_weights(project, tiny_f5):
    """Eval draws fixed times, noise and masks: two evals of the base model agree, and do not move the
    training's generators (the resume test shows that part)."""
    first = [e for e in run(f5_config(project, tiny_f5, "eval-a", max_steps=1)) if isinstance(e, Eval)]
    second = [e for e in run(f5_config(project, tiny_f5, "eval-b", max_steps=1, seed=7)) if isinstance(e, Eval)]
    assert first[0].step == second[0].step == 0 and first[0].loss == second[0].loss


def test_lora_trains_only_the_adapters(project, tiny_f5):
    events = run(f5_config(project, tiny_f5, "lora", epochs=2, lora_rank=4, lora_alpha=8.0, lr=1e-2))
    assert events[-1].reason == "finished"
    started = next(e for e in events if isinstance(e, Started))
    assert started.trainable_parameters == 2 * 6 * 4 * (64 + 64) + 2 * 2 * 4 * (128 - 64)  # 2 blocks, 6 targets
    saved = checkpoint_weights(project, "lora")
    base_state = tuned_cfm(tiny_f5, None).cfm.state_dict()
    adapters = [k for k in saved if "lora_" in k]
    assert adapters and any(saved[k].abs().sum() > 0 for k in adapters if "lora_B" in k)  # B starts at zero
    for key, value in saved.items():
        if "lora_" in key:
            continue
        plain = key.replace(".base_layer.", ".")
        assert torch.equal(value, base_state[plain]), key  # every base weight as it was
    merged = tuned_cfm(tiny_f5, latest_checkpoint(project / "runs" / "lora")).cfm.state_dict()
    assert set(merged) == set(base_state) and not all(torch.equal(merged[k], base_state[k]) for k in merged)


def test_resume_with_ema_is_exact(project, tiny_f5):
    """4 straight steps == 2 steps, a resume, 2 more: the weights, the EMA and the losses (CFM draws its times,
    noise and dropped conditions at random; the checkpoint keeps the generators' states)."""
    kw = dict(batch_size=1, epochs=3, lr_schedule="cosine", warmup_steps=1, ema_decay=0.5)
    straight = run(f5_config(project, tiny_f5, "straight", max_steps=4, **kw))
    first = run(f5_config(project, tiny_f5, "split", max_steps=2, **kw))
    second = run(f5_config(project, tiny_f5, "split", max_steps=4, **kw), resume=True)
    assert straight[-1].reason == second[-1].reason == "max_steps"
    assert [e.step for e in second if isinstance(e, Step)] == [3, 4]
    losses = lambda events: [e.loss for e in events if isinstance(e, Step)]  # noqa: E731
    assert losses(straight) == pytest.approx(losses(first + second), rel=1e-6)
    a, b = checkpoint_weights(project, "straight"), checkpoint_weights(project, "split")
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=1e-6, msg=name)
    ema_a = torch.load(latest_checkpoint(project / "runs" / "straight") / "custom_checkpoint_0.pkl", weights_only=True)
    ema_b = torch.load(latest_checkpoint(project / "runs" / "split") / "custom_checkpoint_0.pkl", weights_only=True)
    assert ema_a["step"] == ema_b["step"] == 4
    for name in ema_a["model"]:
        torch.testing.assert_close(ema_a["model"][name], ema_b["model"][name], rtol=0, atol=1e-6, msg=name)
    # Preview and export take the EMA, which after 4 updates (decay min(0.5, 5/14)) differs from the weights.
    tuned = tuned_cfm(tiny_f5, latest_checkpoint(project / "runs" / "straight"))
    assert tuned.ema and tuned.step == 4
    key = "transformer.proj_out.weight"
    assert torch.equal(tuned.cfm.state_dict()[key], ema_a["model"][key])
    assert not torch.equal(ema_a["model"][key], a[key])


def _dataset_with(tmp_path: Path, texts: list[str] | None = None, extra_rows: list[MetadataRow] = ()) -> Path:
    root = tmp_path / "project"
    make_speech_dataset(root / "dataset", n_train=2, n_eval=1)
    rows = read_metadata(root / "dataset" / TRAIN_CSV)
    if texts:
        rows = [MetadataRow(r.audio_file, t, r.speaker_name) for r, t in zip(rows, texts)]
    write_metadata(root / "dataset" / TRAIN_CSV, [*rows, *extra_rows])
    return root


def test_missing_characters_stop_the_run_unless_the_user_agrees(tiny_f5, tmp_path):
    project = _dataset_with(tmp_path, ["The price is 5 € today.", "Ø marks the spot."])
    refused = run(f5_config(project, tiny_f5, "refused", max_steps=1))
    error = next(e for e in refused if isinstance(e, Error))
    assert error.kind == ErrorKind.DATASET and "€" in error.message and "Ø" in error.message
    assert "add_missing_characters=true" in error.message
    assert not (project / "runs" / "refused").exists()  # refused before anything was written

    grown = run(f5_config(project, tiny_f5, "grown", max_steps=2, add_missing_characters=True))
    assert grown[-1].reason == "max_steps"
    note = next(e for e in grown if isinstance(e, Log) and "Added 2 character(s)" in e.message)
    assert "€" in note.message
    base_vocab = read_vocab(tiny_f5 / "vocab.txt")
    vocab = read_vocab(project / "runs" / "grown" / RUN_VOCAB)
    assert vocab[:len(base_vocab)] == base_vocab and set(vocab[len(base_vocab):]) == {"€", "Ø"}
    weights = checkpoint_weights(project, "grown")
    assert weights["transformer.text_embed.text_embed.weight"].shape[0] == len(vocab) + 1
    # With LoRA the grown embedding trains beside the adapters (its new rows are random).
    lora = run(f5_config(project, tiny_f5, "grown-lora", max_steps=1, add_missing_characters=True, lora_rank=2))
    trainable = next(e for e in lora if isinstance(e, Started)).trainable_parameters
    assert trainable == 2 * 6 * 2 * (64 + 64) + 2 * 2 * 2 * (128 - 64) + (len(vocab) + 1) * 32  # + embedding


def test_every_clip_problem_is_listed_and_nothing_is_written(tiny_f5, tmp_path):
    import numpy as np
    import soundfile as sf

    project = _dataset_with(tmp_path, extra_rows=[MetadataRow("wavs/gone.wav", "Not here.", "tester"),
                                                  MetadataRow("wavs/short.wav", "Hi.", "tester"),
                                                  MetadataRow("wavs/junk.wav", "Junk.", "tester")])
    sf.write(project / "dataset" / "wavs" / "short.wav", np.zeros(12000, np.float32), 24000)  # 0.5 s
    (project / "dataset" / "wavs" / "junk.wav").write_bytes(b"not audio at all")
    events = run(f5_config(project, tiny_f5, "bad", max_steps=1))
    error = next(e for e in events if isinstance(e, Error))
    assert error.kind == ErrorKind.DATASET and "3 clip(s)" in error.message
    assert "gone.wav): the audio file does not exist" in error.message
    assert "short.wav): the clip is 0.50 s long; the minimum is 1 s" in error.message
    assert "junk.wav): the audio file cannot be read" in error.message
    assert isinstance(events[-1], Done) and events[-1].reason == "error"
    assert not (project / "runs").exists()


def test_an_eval_file_without_clips_is_refused(tiny_f5, tmp_path):
    project = _dataset_with(tmp_path)
    write_metadata(project / "dataset" / EVAL_CSV, [])
    error = next(e for e in run(f5_config(project, tiny_f5, "no-eval", max_steps=1)) if isinstance(e, Error))
    assert error.kind == ErrorKind.DATASET and "lists no clips" in error.message


def test_a_split_batch_keeps_every_clip_and_trims_the_padding(project, tiny_f5):
    from alltalk_gui.core.engines.f5.data import ClipSet, collate, load_dataset, split_batch

    train_clips, _ = load_dataset(project / "dataset", read_vocab(tiny_f5 / "vocab.txt"), min_seconds=1.0,
                                     max_seconds=30.0, add_missing=False)
    clips = ClipSet(train_clips, read_vocab(tiny_f5 / "vocab.txt"))
    batch = collate([clips[i] for i in range(4)])
    parts = split_batch(batch, 3)
    assert [p["mel"].shape[0] for p in parts] == [2, 2]
    for part in parts:
        assert part["mel"].shape[1] == int(part["mel_lengths"].max())
        assert part["text"].shape[1] == int(part["text_lengths"].max())
    assert torch.equal(torch.cat([p["mel_lengths"] for p in parts]), batch["mel_lengths"])


def test_the_estimate_is_for_f5_v1_base_only(tiny_f5):
    engine = get_engine("f5")
    config = TrainConfig(engine="f5", max_audio_seconds=30.0, lora_rank=16, gradient_checkpointing=True,
                         mixed_precision="bf16", batch_size=1)
    estimate = engine.estimate_memory(config)
    assert 0.5 < estimate.total_gib < 4.0  # the Low VRAM profile's target
    with_ema = engine.estimate_memory(config.with_values({"ema_decay": 0.999}))
    assert with_ema.total_gib > estimate.total_gib + 1.2  # one more fp32 copy of 337 M weights
    assert engine.estimate_memory(config, parameters=189_956) is None  # the tiny model
    # A run asks with its model's parameters, LoRA's adapters among them (5.0 M at rank 16, 1.5 % of the base).
    with_adapters = 337_096_804 + lora_parameters(16)
    assert engine.estimate_memory(config, parameters=with_adapters).total_gib == pytest.approx(estimate.total_gib,
                                                                                               rel=1e-6)
    assert engine.estimate_memory(config, parameters=with_adapters + 40 * 512) is not None  # a grown vocabulary


class InjectedOutOfMemory:
    """Wraps F5's ``loss``: from call ``from_call`` on, batches of more than ``max_clips`` clips raise the error
    CUDA raises (this machine has no GPU). Records the clips of every pass that went through."""

    def __init__(self, monkeypatch, *, max_clips: int, from_call: int = 1) -> None:
        from alltalk_gui.core.engines.f5 import model as f5_model

        self.real, self.max_clips, self.from_call = f5_model.loss, max_clips, from_call
        self.calls, self.passed = 0, []
        monkeypatch.setattr(f5_model, "loss", self)

    def __call__(self, cfm, batch):
        self.calls += 1
        clips = batch["mel"].shape[0]
        if self.calls >= self.from_call and clips > self.max_clips:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (injected by the test)")
        self.passed.append(clips)
        return self.real(cfm, batch)


def test_out_of_memory_halves_the_micro_batch_and_keeps_the_effective_batch(project, tiny_f5, monkeypatch):
    from alltalk_gui.core.training.events import MicroBatch

    oom = InjectedOutOfMemory(monkeypatch, max_clips=1, from_call=2)
    events = run(f5_config(project, tiny_f5, "oom", batch_size=2, grad_accum_steps=2, epochs=3, max_steps=2,
                           eval_each_epoch=False))
    assert events[-1].reason == "max_steps", events[-3:]
    change = next(e for e in events if isinstance(e, MicroBatch))
    assert (change.micro_batch, change.grad_accum, change.effective_batch) == (1, 4, 4)
    assert oom.passed[0] == 2 and set(oom.passed[1:]) == {1}  # after the error, one clip at a time
    # The first micro-batch went through, the second ran out: the step is done again in pieces of one clip, so
    # each of the 2 steps trains on 4 clips (the effective batch), plus the first pass that was thrown away.
    assert sum(oom.passed) == 2 + 2 * 4


def test_auto_sizing_probes_the_micro_batch_on_the_longest_clips(project, tiny_f5, monkeypatch):
    from alltalk_gui.core.training.events import MicroBatch

    InjectedOutOfMemory(monkeypatch, max_clips=2)
    events = run(f5_config(project, tiny_f5, "auto", auto_micro_batch=True, batch_size=4, grad_accum_steps=1,
                           max_steps=1, eval_each_epoch=False))
    probe = next(e for e in events if isinstance(e, MicroBatch))
    assert (probe.cause, probe.micro_batch, probe.grad_accum, probe.effective_batch) == ("probe", 2, 2, 4)
    assert events[-1].reason == "max_steps"


def test_eval_and_checkpoint_every_few_epochs_and_at_the_end(project, tiny_f5):
    from alltalk_gui.core.training.events import Checkpoint

    events = run(f5_config(project, tiny_f5, "every", epochs=5, checkpoint_every_epochs=2))
    assert events[-1].reason == "finished"
    assert [e.epoch for e in events if isinstance(e, Eval)] == [0, 1, 3, 4]  # the base model, epochs 2, 4, 5
    assert [e.step for e in events if isinstance(e, Checkpoint)] == [4, 8, 10]
