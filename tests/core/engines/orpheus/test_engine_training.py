"""Orpheus-TTS through the app's own training loop (``train(TrainConfig(engine="orpheus"))``) on the tiny model and
espeak-ng speech, on the CPU: the eval loss falls (full fine-tune and 4-bit LoRA), the loss parts arrive by name,
LoRA changes only its adapters (checkpoints hold nothing else, the embedding and output rows stay the base's), a
resume equals a straight run, the SNAC codes are encoded once (the codec's calls counted across runs), and bad
settings or clips are refused before any model loads."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from alltalk_gui.core.audio.decode import write_wav
from alltalk_gui.core.dataset.metadata import TRAIN_CSV, MetadataRow, read_metadata, write_metadata
from alltalk_gui.core.engines.orpheus import codec as snac
from alltalk_gui.core.engines.orpheus.tuned import read_speakers, tuned_lm
from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.events import Done, Error, ErrorKind, Eval, Log, Started, Step
from alltalk_gui.core.training.loop import latest_checkpoint, train


def orpheus_config(project: Path, base: Path, run: str, **settings) -> TrainConfig:
    """The tiny Orpheus on the CPU, quickly: a rate far above the profiles' makes a few steps visible."""
    common = dict(engine="orpheus", project_dir=str(project), base_model_dir=str(base), run_name=run, device="cpu",
                  language="en", lr=3e-3, lr_batch=0, warmup_steps=0, memory_interval_s=0.0, batch_size=2,
                  max_audio_seconds=30.0, min_audio_seconds=1.0, lora_dropout=0.0)
    return TrainConfig(**common).with_values({"base_weights": "fp32", **settings})


def run(config: TrainConfig, **kw) -> list:
    events = list(train(config, **kw))
    errors = [e.message for e in events if isinstance(e, Error)]
    assert not errors, errors[0][-3000:]
    return events


def checkpoint_weights(project: Path, run_name: str) -> dict[str, torch.Tensor]:
    return load_file(str(latest_checkpoint(project / "runs" / run_name) / "model.safetensors"))


def test_a_full_fine_tune_lowers_the_eval_loss(project, tiny_orpheus):
    events = run(orpheus_config(project, tiny_orpheus, "full", epochs=5, batch_size=1, lr=1e-3,
                                lr_schedule="cosine", warmup_steps=1))
    assert events[-1].reason == "finished"
    steps = [e for e in events if isinstance(e, Step)]
    evals = [e for e in events if isinstance(e, Eval)]
    assert len(steps) == 20 and evals[0].step == 0
    # The eval clip says another sentence: what carries over from four clips is the frames' layout and where speech
    # ends (measured: 6.83 -> 6.17 after 20 steps), the rest is memorised.
    assert evals[-1].loss < 0.95 * evals[0].loss, [e.loss for e in evals]
    assert set(steps[0].parts) == set(evals[-1].parts) == {"audio_ce", "end_ce"}
    assert evals[-1].parts["end_ce"] < evals[0].parts["end_ce"]  # it learns where speech ends
    started = next(e for e in events if isinstance(e, Started))
    assert started.trainable_parameters == 275_424  # every weight of the tiny Llama (tied embedding once)
    assert read_speakers(project / "runs" / "full") == ["tester"]


def test_4bit_lora_learns_and_changes_only_its_adapters(project, tiny_orpheus):
    events = run(orpheus_config(project, tiny_orpheus, "qlora", epochs=5, batch_size=1, lora_rank=8,
                                lora_alpha=16.0, lr=1e-2, base_weights="nf4"))
    evals = [e for e in events if isinstance(e, Eval)]
    assert evals[-1].loss < 0.97 * evals[0].loss, [e.loss for e in evals]
    started = next(e for e in events if isinstance(e, Started))
    assert started.trainable_parameters == 2 * 8 * (2 * (96 + 96) + 2 * (96 + 32) + 3 * (96 + 256))
    saved = checkpoint_weights(project, "qlora")
    assert saved and all("lora_" in key for key in saved)  # nothing else is kept: nothing else can have changed
    assert any(v.abs().sum() > 0 for k, v in saved.items() if "lora_B" in k)  # B starts at zero
    base = tuned_lm(tiny_orpheus, None).lm.state_dict()
    tuned = tuned_lm(tiny_orpheus, latest_checkpoint(project / "runs" / "qlora")).lm.state_dict()
    assert torch.equal(tuned["model.embed_tokens.weight"], base["model.embed_tokens.weight"])  # no row changed
    assert torch.equal(tuned["model.norm.weight"], base["model.norm.weight"])
    assert not torch.equal(tuned["model.layers.0.self_attn.q_proj.weight"],
                           base["model.layers.0.self_attn.q_proj.weight"])  # the adapters, merged


@pytest.mark.parametrize("lora_rank", [0, 4])
def test_a_resume_equals_a_straight_run(project, tiny_orpheus, lora_rank):
    """As the profiles train: checkpointing and two micro-batches a step (in full: the tied matrix's gradients
    added straight into .grad across them, engines/orpheus/tied_gradient.py)."""
    settings = dict(epochs=2, batch_size=1, lora_rank=lora_rank, lora_alpha=8.0, save_every_steps=2,
                    gradient_checkpointing=True, grad_accum_steps=2)
    straight = run(orpheus_config(project, tiny_orpheus, f"straight{lora_rank}", max_steps=4, **settings))
    assert straight[-1].step == 4
    run(orpheus_config(project, tiny_orpheus, f"resumed{lora_rank}", max_steps=2, **settings))
    resumed = run(orpheus_config(project, tiny_orpheus, f"resumed{lora_rank}", max_steps=4, **settings), resume=True)
    assert resumed[-1].step == 4
    a, b = checkpoint_weights(project, f"straight{lora_rank}"), checkpoint_weights(project, f"resumed{lora_rank}")
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key


def test_each_clip_is_encoded_once(project, tiny_orpheus, tmp_path, monkeypatch):
    root = tmp_path / "project"
    shutil.copytree(project / "dataset", root / "dataset")
    calls = []
    real = snac.encode

    def counted(codec, samples):
        calls.append(len(samples))
        return real(codec, samples)

    monkeypatch.setattr(snac, "encode", counted)  # the real codec runs; its calls are counted
    first = run(orpheus_config(root, tiny_orpheus, "first", max_steps=1))
    clips = len(read_metadata(root / "dataset" / TRAIN_CSV)) + 1
    assert len(calls) == clips
    assert any(isinstance(e, Log) and f"{clips} clip(s) encoded now, 0 read" in e.message for e in first)
    again = run(orpheus_config(root, tiny_orpheus, "again", max_steps=1))
    assert len(calls) == clips  # the second run reads every clip's codes from the cache
    assert any(isinstance(e, Log) and f"0 clip(s) encoded now, {clips} read" in e.message for e in again)
    assert (root / "feature_cache").is_dir() and not (root / "dataset" / "feature_cache").exists()


def input_error(events: list) -> Error:
    error = next(e for e in events if isinstance(e, Error))
    assert isinstance(events[-1], Done) and events[-1].reason == "error"
    return error


def test_4bit_without_lora_is_refused_before_loading(project, tiny_orpheus):
    error = input_error(list(train(orpheus_config(project, tiny_orpheus, "bad", base_weights="nf4"))))
    assert error.kind == ErrorKind.CONFIG and "lora_rank" in error.message


def test_clips_the_context_cannot_hold_are_listed(project, tiny_orpheus, tmp_path):
    root = tmp_path / "project"
    dataset = Path(shutil.copytree(project / "dataset", root / "dataset"))
    rows = read_metadata(dataset / TRAIN_CSV)
    write_wav(dataset / "wavs" / "long.wav", np.zeros(24000 * 26, np.float32), 24000)  # 26 s > the tiny context
    write_metadata(dataset / TRAIN_CSV, rows + [MetadataRow("wavs/long.wav", "a very long one", "tester")])
    error = input_error(list(train(orpheus_config(root, tiny_orpheus, "long"))))
    assert error.kind == ErrorKind.DATASET and "model reads at most 2048" in error.message
    assert not (root / "feature_cache").exists()  # refused before any clip was encoded
