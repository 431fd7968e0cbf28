"""What Parler-TTS builds for the app's training loop (:meth:`ParlerEngine.training_setup`). Engine environment.

In order, each step freeing what the next does not need:

1. the base model (Parler's ``from_pretrained``, fp32 on the CPU) and its tokenizer;
2. the description the run trains with (:func:`run_description`): the run's own when it is resumed, else the
   run's ``description`` option, else the project's, else one measured now from the dataset; written to ``runs/<run>/description.txt`` before the first
   step, so preview and export speak with what the model learnt;
3. Flan-T5 encodes it once (it is frozen: its output never changes), on the training device;
4. the DAC codes of every clip, from the app's feature cache or encoded once on the training device
   (:mod:`.codes`); with several processes the main one encodes and the others read what it cached;
5. T5 and DAC leave the model; what is left (decoder, prompt embedding, projection) gets the memory levers
   (:meth:`ParlerEngine.apply_memory_levers`) and is what the loop trains and checkpoints.
"""

from __future__ import annotations

import contextlib
from functools import partial
from pathlib import Path
from typing import Any, Iterator

from alltalk_gui.core.engine_api.engine import TrainingSetup, language_note
from alltalk_gui.core.engines.parler.files import HOP_LENGTH, SAMPLE_RATE
from alltalk_gui.core.engines.parler.tuned import RUN_DESCRIPTION, run_description as saved_run_description


@contextlib.contextmanager
def main_process_first() -> Iterator[None]:
    """The main process runs the block first, the others after it (the codes it cached are then theirs)."""
    import torch.distributed as dist

    distributed = dist.is_available() and dist.is_initialized()
    if distributed and dist.get_rank() != 0:
        dist.barrier()
    yield
    if distributed and dist.get_rank() == 0:
        dist.barrier()


def is_main_process() -> bool:
    import torch.distributed as dist

    return not (dist.is_available() and dist.is_initialized()) or dist.get_rank() == 0


def run_description(config, clips: list[Any]) -> tuple[str, list[str]]:
    """The description the run trains with, and a note saying where it came from."""
    from alltalk_gui.core.engines.parler.description import describe, measure, saved_description, sources_snr
    from alltalk_gui.core.project.folder import PROJECT_FILE, VoiceProject

    text = saved_run_description(config.run_dir)
    if text:
        return text, [f"Description (kept by this run): {text}"]
    text = " ".join(config.engine_options().description.split())
    if text:
        return text, [f"Description (this run's setting): {text}"]
    project = None
    if config.project_dir and (Path(config.project_dir) / PROJECT_FILE).is_file():
        project = VoiceProject.open(config.project_dir)
        text = saved_description(project.settings)
        if text:
            return text, [f"Description (the project's): {text}"]
    measures = measure([(c.audio_path, c.text) for c in clips], snr_db=sources_snr(project) if project else None)
    text = describe(project.name if project else "", measures)
    return text, [f"The project has no description of the speaker yet; measured from the dataset: {text}"]


def training_setup(engine, config, clips: tuple[list[Any], list[Any]], device) -> TrainingSetup:
    import torch

    from alltalk_gui.core import atomic
    from alltalk_gui.core.engines.parler import codes as codec_cache
    from alltalk_gui.core.training.feature_cache import FeatureCache, cache_root
    from alltalk_gui.core.engines.parler import data
    from alltalk_gui.core.engines.parler import model as parler_model
    from alltalk_gui.core.engines.parler.worker import quiet

    quiet()
    train_clips, eval_clips = clips
    full = parler_model.load_parler(config.base_model_dir)
    tokenizer = parler_model.load_tokenizer(config.base_model_dir)
    notes = [note] if (note := language_note(engine, config.language)) else []

    description, said = run_description(config, train_clips + eval_clips)
    notes += said
    if is_main_process():
        config.run_dir.mkdir(parents=True, exist_ok=True)
        atomic.write_text(config.run_dir / RUN_DESCRIPTION, description + "\n")
    states = parler_model.encode_descriptions(full, tokenizer, [description], device)[description]

    codec = full.audio_encoder.to(device).eval()
    cache = FeatureCache(cache_root(config), codec_cache.KIND, codec_cache.codec_fingerprint(codec))
    with main_process_first():
        train_codes = codec_cache.dataset_codes(train_clips, codec, cache, device)
        eval_codes = codec_cache.dataset_codes(eval_clips, codec, cache, device)
    notes.append(f"DAC codes: {cache.computed} clip(s) encoded, {cache.hits} read from the cache in {cache.folder}.")
    notes.extend(cache.problems)
    parler_model.drop_frozen_parts(full)
    del codec
    if device.type == "cuda":
        torch.cuda.empty_cache()

    trainable = parler_model.trainable_view(full)
    count = engine.apply_memory_levers(trainable, config)
    trainable.train()
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    train_set = data.ClipSet(train_clips, train_codes, [tokenizer(c.text).input_ids for c in train_clips], states)
    eval_set = data.ClipSet(eval_clips, eval_codes, [tokenizer(c.text).input_ids for c in eval_clips], states)

    def loss(model, batch, eval_mode: bool = False) -> dict[str, Any]:  # noqa: ARG001 - eval is deterministic
        # Looked up at each call, through the module, so tests can wrap it (out-of-memory injection).
        return parler_model.loss(model, batch)

    return TrainingSetup(
        model=trainable, train_set=train_set, eval_set=eval_set,
        lengths=[c.frames for c in train_clips], eval_lengths=[c.frames for c in eval_clips],
        collate=partial(data.collate, pad_id=pad_id), loss=loss, batch_size=data.batch_size, split=data.split_batch,
        loss_parts=parler_model.CODEBOOK_PARTS,
        parameters=sum(p.numel() for p in trainable.parameters()), trainable=count,
        longest_seconds=max(c.frames for c in train_clips) * HOP_LENGTH / SAMPLE_RATE, notes=tuple(notes),
    )
