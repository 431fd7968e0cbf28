"""A training folder written as AllTalk's finetune leaves one, by coqui's own classes, for tests and benchmarks.

AllTalk's finetune trains coqui's ``GPTTrainer`` with coqui's ``Trainer``, which saves the whole GPTTrainer state
(the Xtts under ``xtts.``, the frozen DVAE under ``dvae.``, the two mel front ends), the optimizer's state, the
config as a dict, step, epoch, date and (for a best model) its loss, through ``trainer.io``; the run folder also
holds the Trainer's ``config.json`` and AllTalk's copy of ``vocab.json``. :func:`write_trainer_run` makes such a
folder from a base-model folder with the installed coqui-tts and coqui-tts-trainer: the real classes and save
functions, so the files have the real format; only the weights are the base's (the GPT scaled, so a test can
tell the user's GPT from the base's) and the optimizer state is AdamW's after one step with random gradients.

coqui's GPTTrainer hard-codes the real DVAE's widths (512); a smaller base model (the tiny test model) gets a
DVAE of its own widths instead, read from its ``dvae.pth``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

GPT_SCALE = 0.5  # the "fine-tuned" GPT: the base's times this
FINISHED_S_AGO = 3600.0  # a run that finished an hour ago (layout.still_training: not one AllTalk is still writing)


def write_trainer_run(base: str | os.PathLike[str], folder: str | os.PathLike[str], *, step: int = 1000,
                      scale: float = GPT_SCALE, best: bool = True, seed: int = 0,
                      finished_s_ago: float | None = FINISHED_S_AGO) -> Path:
    """Write a Trainer run folder into ``folder`` (created) from the base model ``base``: ``best_model_<step>.pth`` and
    ``best_model.pth`` (``best``; else ``checkpoint_<step>.pth``), ``config.json`` and ``vocab.json``; returns the
    save written last (``best_model.pth`` or the checkpoint). The folder's files are dated ``finished_s_ago``
    seconds ago (None: now, as a run AllTalk is still training leaves them)."""
    saved = _write_run(Path(base), Path(folder), step, scale, best, seed)
    if finished_s_ago is not None:
        import time

        then = time.time() - finished_s_ago
        for path in Path(folder).iterdir():
            os.utime(path, (then, then))
    return saved


def _write_run(base: Path, folder: Path, step: int, scale: float, best: bool, seed: int) -> Path:
    """The folder's files, as :func:`write_trainer_run` says."""
    import torch
    from trainer.io import copy_model_files, save_best_model, save_checkpoint

    folder.mkdir(parents=True, exist_ok=True)
    model, config = _gpt_trainer(base)
    torch.manual_seed(seed)
    with torch.no_grad():
        for parameter in model.xtts.gpt.parameters():
            parameter.mul_(scale)
    # AllTalk's GPTTrainer.get_optimizer trains the GPT only: AdamW's state after one step over its parameters.
    optimizer = torch.optim.AdamW(model.xtts.gpt.parameters(), lr=0.0, betas=(0.9, 0.96), eps=1e-8, weight_decay=1e-2)
    for parameter in model.xtts.gpt.parameters():
        parameter.grad = torch.randn_like(parameter)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    copy_model_files(config, str(folder), {})
    shutil.copy2(base / "vocab.json", folder / "vocab.json")  # AllTalk's run folder holds the vocabulary it used
    if best:
        save_best_model({"train_loss": 1.5, "eval_loss": 1.25}, {"train_loss": float("inf"), "eval_loss": float("inf")},
                        config, model, str(folder), current_step=step, epoch=1, optimizer=[optimizer], scaler=None)
        return folder / "best_model.pth"
    save_checkpoint(config, model, str(folder), current_step=step, epoch=1, optimizer=[optimizer], scaler=None)
    return folder / f"checkpoint_{step}.pth"


def _gpt_trainer(base: Path):
    """coqui's ``GPTTrainer`` and its ``GPTTrainerConfig`` over ``base``, as AllTalk's finetune builds them."""
    import json

    from alltalk_gui.core.engines.xtts.files import dvae_shape, load_checkpoint
    from alltalk_gui.core.engines.xtts.model import import_coqui_trainer

    gpt_trainer = import_coqui_trainer()
    args = gpt_trainer.GPTArgs()
    saved = json.loads((base / "config.json").read_text(encoding="utf-8"))["model_args"]
    for key, value in saved.items():
        if hasattr(args, key):
            setattr(args, key, value)
    args.tokenizer_file = str(base / "vocab.json")
    args.mel_norm_file = str(base / "mel_stats.pth")
    args.dvae_checkpoint = str(base / "dvae.pth")
    args.xtts_checkpoint = str(base / "model.pth")
    config = gpt_trainer.GPTTrainerConfig(model_args=args, epochs=1, batch_size=2, optimizer="AdamW",
                                          optimizer_params={"betas": [0.9, 0.96], "eps": 1e-8, "weight_decay": 1e-2},
                                          lr=5e-6, run_name="XTTS_FT", run_description="GPT XTTS training")
    shape = dvae_shape(load_checkpoint(base / "dvae.pth", mmap=True), base / "dvae.pth")
    real = gpt_trainer.DiscreteVAE

    def dvae_of_the_base(**kwargs):
        kwargs.update(codebook_dim=shape.codebook_dim, hidden_dim=shape.hidden_dim,
                      num_resnet_blocks=shape.num_resnet_blocks)
        return real(**kwargs)

    gpt_trainer.DiscreteVAE = dvae_of_the_base
    try:
        model = gpt_trainer.GPTTrainer(config)
    finally:
        gpt_trainer.DiscreteVAE = real
    return model, config
