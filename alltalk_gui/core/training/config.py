"""TrainConfig: the one description of a training run that the GUI and the CLI both build.

Every field says what it changes and what it costs in memory. The fields are those every engine reads; an
engine's own settings (XTTS v2's loss weights, F5-TTS's EMA, ...) are held by name in :attr:`TrainConfig.options`
and declared, typed and validated by the engine (``Engine.train_options``, see
:mod:`alltalk_gui.core.engine_api.options`). Anything that sets a value by name (a profile, the CLI's ``--set``,
the Train page's Advanced panel) goes through :meth:`TrainConfig.with_values`, which finds the name in either.

The resolved config is written into every checkpoint (``train_config.json``), so a run can be resumed or audited
later. ``from_dict`` rejects unknown keys (a run saved before engines owned their settings, with every engine's
fields side by side, is read as its engine's options), and :meth:`TrainConfig.validate` rejects impossible
combinations up front with a message that names the field to change.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, get_type_hints

from alltalk_gui.core.dataclass_keys import unknown_keys, wrong_types
from alltalk_gui.core.engine_api.engine import DEFAULT_ENGINE, EngineError, engine_names, get_engine
from alltalk_gui.core.engine_api.options import EngineOptions, OptionError, declared_kind, parse_value
from alltalk_gui.core.training.saved_config import upgraded
from alltalk_gui.core.training.run_folders import RunNameError, check_run_name

OPTIMIZERS = ("adamw", "adamw8bit", "paged_adamw8bit")
SCHEDULES = ("cosine", "constant")
PRECISIONS = ("no", "bf16", "fp16")


class ConfigError(ValueError):
    """A TrainConfig value is invalid; the message names the field."""


@dataclass
class TrainConfig:
    # -- where ---------------------------------------------------------------------------------------------------
    # The voice project folder; training reads <project>/dataset/ and writes <project>/runs/<run_name>/.
    project_dir: str = ""
    # The engine that trains (a registered engine's name, see alltalk_gui.core.engine_api.engine); it reads the base
    # model, builds the model and its loss, and owns its profiles (Engine.profiles_dir()).
    engine: str = DEFAULT_ENGINE
    # The engine's base-model folder (for XTTS v2: model.pth, config.json, vocab.json, dvae.pth, mel_stats.pth).
    base_model_dir: str = ""
    # Name of the run folder under <project>/runs/. Empty: a timestamp is used.
    run_name: str = ""
    # Dataset folder; empty means <project>/dataset. Useful for a hand-written dataset elsewhere.
    dataset_dir: str = ""
    # Language code of the transcripts (tokenizer language tag). Empty: the project's language.
    language: str = ""

    # -- how long --------------------------------------------------------------------------------------------------
    # Passes over the training clips. More epochs fit the voice more closely and risk over-fitting; no memory cost.
    epochs: int = 10
    # Stop after this many optimizer steps even if epochs remain (0 = no limit). For smoke runs and tests.
    max_steps: int = 0

    # -- batch -------------------------------------------------------------------------------------------------------
    # Clips per micro-batch on each device. Activation memory grows linearly with it (and with clip length):
    # the main memory knob. 2 fits the real model on a 12 GB GPU in bf16 with checkpointing.
    batch_size: int = 2
    # Micro-batches whose gradients are summed before one optimizer step: effective batch =
    # batch_size x grad_accum_steps x processes, at no extra memory and proportionally more time per step.
    grad_accum_steps: int = 1
    # DataLoader worker processes that load and resample audio. Each costs a little RAM; 0 loads in the main process.
    num_workers: int = 0
    # Batches are built from clips of similar length (within groups of this many batches) to waste less padding.
    bucket_batches: int = 8

    # -- optimiser (coqui's XTTS fine-tuning defaults) ---------------------------------------------------------------
    # Learning rate at an effective batch of lr_batch clips. Higher learns faster and forgets the base voice quality
    # sooner. 1e-5 at 8 clips is AllTalk's 5e-6 at 4 clips per step, made per clip; with the constant schedule a
    # 5-minute dataset then gets 1.3x the summed rate of AllTalk's defaults (see core/training/schedule.py).
    lr: float = 1e-5
    # The effective batch (batch_size x grad_accum_steps x processes) that lr is meant for; another effective batch
    # B trains at lr x sqrt(B / lr_batch) (the square-root rule for Adam). 0: lr as given, whatever the batch.
    lr_batch: int = 8
    # AdamW betas (coqui: 0.9, 0.96).
    beta1: float = 0.9
    beta2: float = 0.96
    # Weight decay, applied to weight matrices only (not biases, norms or embeddings), as coqui does.
    weight_decay: float = 1e-2
    # "adamw": two fp32 moments per parameter (8 bytes/param, 3.5 GB for the real GPT).
    # "adamw8bit": bitsandbytes 8-bit moments (2 bytes/param), CUDA only.
    # "paged_adamw8bit": as adamw8bit, moments can page out to CPU RAM under pressure, CUDA only.
    optimizer: str = "adamw"
    # "constant": warm-up then flat, as coqui's recipe and xtts-finetune-webui (and nearly AllTalk's restarts) train;
    # "cosine": warm-up then a cosine decay to 0 at the last step (half the summed learning rate of "constant").
    lr_schedule: str = "constant"
    # Optimizer steps of linear warm-up from 0 to lr, at most 5 % of the run's steps (60 steps: 3). Keeps the first
    # updates, before AdamW's moment estimates settle, from shaking the base model.
    warmup_steps: int = 20
    # Gradients are clipped to this global L2 norm (0 disables). No memory cost.
    max_grad_norm: float = 1.0

    # -- memory switches ---------------------------------------------------------------------------------------------
    # "no" (fp32), "bf16" (Ampere+ GPUs, modern CPUs) or "fp16" (older GPUs, with loss scaling; CUDA only).
    # Mixed precision roughly halves activation memory and speeds up GPUs; master weights stay fp32.
    mixed_precision: str = "no"
    # Recompute the model's block activations in the backward pass: saves most activation memory for ~30 % more
    # time.
    gradient_checkpointing: bool = False
    # LoRA adapters (peft) of this rank on the attention and MLP layers of every block the engine names; 0 = full
    # fine-tune. Only the adapters train: gradients and optimizer state shrink from hundreds of millions of
    # parameters to ~0.5 M x rank, which is what lets the "low" profile fit a 4 GB card. Quality is a little below
    # a full fine-tune.
    lora_rank: int = 0
    # LoRA scaling numerator (the adapters' output is scaled by lora_alpha / lora_rank).
    lora_alpha: float = 32.0
    # Dropout on the LoRA adapters' input: a little regularisation for datasets of a few dozen clips (the usual
    # 0.05 of LoRA fine-tunes). No memory cost worth counting.
    lora_dropout: float = 0.05
    # Auto sizing (the "auto" profile on a GPU): cap this process at 90 % of the GPU memory free at the start, then
    # find the largest micro-batch (at most batch_size x grad_accum_steps) whose forward and backward pass on the
    # longest clips fits, and accumulate enough micro-batches to keep the effective batch. Costs a few seconds.
    auto_micro_batch: bool = False
    # The memory profile this config was built from ("low", "medium", "high", "auto"; "" = none). Informational.
    profile: str = ""
    # "auto" picks CUDA when present, else CPU. "cpu" forces the CPU (slow, but any machine).
    device: str = "auto"

    # -- data limits (coqui's GPTArgs defaults) ----------------------------------------------------------------------
    # Longest clip accepted, in seconds (coqui: 255 995 samples = 11.6 s). Longer clips are rejected before
    # training. Activation memory grows with this limit because a batch is padded to its longest clip.
    max_audio_seconds: float = 11.6
    # Shortest clip accepted, in seconds (coqui: 0.5 s).
    min_audio_seconds: float = 0.5

    # -- the engine's own ------------------------------------------------------------------------------------------
    # The engine's own settings by name (its Engine.train_options dataclass declares, documents and validates
    # them; engine_options() reads them typed). Missing ones take the engine's defaults; a run's saved config
    # holds them all.
    options: dict[str, Any] = field(default_factory=dict)

    # -- checkpoints -------------------------------------------------------------------------------------------------
    # Save full training state every N optimizer steps (0: only at epoch ends). Each save writes the GPT
    # weights plus optimizer moments (about 5 GB for the real model with AdamW).
    save_every_steps: int = 0
    # How many recent checkpoints to keep (the best by eval loss is kept in addition).
    keep_last: int = 2
    # Eval loss on metadata_eval.csv at every epoch end (and so "best" checkpoints). Costs a little time, no memory.
    eval_each_epoch: bool = True
    # The epoch-end eval and checkpoint come at the end of every N-th epoch (and of the last one). 1: every epoch.
    # Long runs of many short epochs (F5-TTS's profiles: 100 epochs) save minutes of checkpoint writing with 10.
    checkpoint_every_epochs: int = 1
    # The checkpoint judge (docs/judge.md): the base model at the start and every checkpoint speak the project's
    # judging sentences and are scored for intelligibility, likeness and naturalness; the best checkpoint is
    # chosen by those scores. Costs about half a minute per checkpoint on a GPU (minutes on a CPU), and while it
    # runs about 2-4 GB of GPU memory beside training (the voice, Whisper and two small models), freed after.
    judge: bool = True
    # The Whisper model the judge listens with (a name already downloaded, or a folder); "": the one that
    # transcribed the project (when still there), else the Transcribe step's default, when it is on this computer.
    judge_whisper_model: str = ""

    # -- reproducibility and reporting -------------------------------------------------------------------------------
    # Seed for data order, conditioning slices and dropout. Same seed + same data = same run.
    seed: int = 1
    # Seconds between memory-sample events.
    memory_interval_s: float = 0.5

    # -- derived helpers ---------------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def engine_options(self) -> Any:
        """:attr:`options` as the engine's own dataclass (its defaults where a value is missing).

        Raises:
            ConfigError: an option the engine does not have, or a value of the wrong type.
        """
        try:
            return _options_class(self.engine).from_dict(self.options)
        except OptionError as exc:
            raise ConfigError(_engine_title(self.engine) + f": {exc}") from None

    def with_values(self, values: dict[str, Any]) -> "TrainConfig":
        """A copy with ``values`` set by name, each a TrainConfig field or one of the engine's options.

        Raises:
            ConfigError: a name that is neither (one of another engine's options says so).
        """
        common = _common_fields()
        engine = values.get("engine", self.engine)
        options = _options_class(engine).names()
        unknown = [name for name in values if name not in common and name not in options]
        if unknown:
            raise ConfigError(_not_a_setting(unknown[0], engine, common | set(options)))
        return dataclasses.replace(
            self, **{k: v for k, v in values.items() if k in common},
            options={**self.options, **{k: v for k, v in values.items() if k not in common}})

    def value(self, name: str) -> Any:
        """The value of ``name``: a TrainConfig field or one of the engine's options."""
        if name in _common_fields():
            return getattr(self, name)
        return getattr(self.engine_options(), name)

    def kind(self, name: str) -> type:
        """The plain type (bool, int, float, str) of ``name``: a TrainConfig field or one of the engine's options.

        Raises:
            ConfigError: neither has it.
        """
        if name in _common_fields():
            return get_type_hints(type(self))[name]
        cls = _options_class(self.engine)
        if name not in cls.names():
            raise ConfigError(_not_a_setting(name, self.engine, _common_fields() | set(cls.names())))
        return declared_kind(cls, name)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TrainConfig":
        """Build from a dict (a saved ``train_config.json``); unknown keys are an error, missing ones default.

        A config saved before engines owned their settings (no ``options``: every engine's fields side by side)
        is read as it would have run: its engine's fields become its options, and another engine's fields are
        dropped, which that version only allowed at their defaults."""
        if not isinstance(data, dict):
            raise ConfigError(f"Training settings must be a JSON object, found {type(data).__name__}.")
        data = upgraded(data)
        if not isinstance(data["options"], dict):
            raise ConfigError(f"options must be a JSON object, found {type(data['options']).__name__}.")
        unknown = unknown_keys(cls, data)
        if len(unknown) == 1:
            raise ConfigError(_not_a_setting(unknown[0], data.get("engine", DEFAULT_ENGINE), set()))
        if unknown:
            raise ConfigError(f"Unknown training setting(s): {', '.join(unknown)}.")
        wrong = wrong_types(cls, data)
        if wrong:
            raise ConfigError(f"Training setting(s) of the wrong type: {'; '.join(wrong)}.")
        return cls(**data)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "TrainConfig":
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))

    def with_overrides(self, pairs: list[str]) -> "TrainConfig":
        """Apply ``key=value`` strings (the CLI's ``--set``): a TrainConfig field or one of the engine's options,
        converting each value to its type.

        Raises:
            ConfigError: unknown key, missing ``=``, or a value of the wrong type.
        """
        changes: dict[str, Any] = {}
        for pair in pairs:
            key, sep, raw = pair.partition("=")
            key = key.strip()
            if not sep:
                raise ConfigError(f"'{pair}' is not key=value.")
            try:
                changes[key] = parse_value(key, raw.strip(), self.kind(key))
            except OptionError as exc:
                raise ConfigError(str(exc)) from None
        return self.with_values(changes)

    def validate(self, cuda_available: bool | None = None) -> None:
        """Reject impossible values and combinations, naming the field to change.

        Raises:
            ConfigError
        """
        if cuda_available is None:
            import torch

            cuda_available = torch.cuda.is_available()
        positive = ("epochs", "batch_size", "grad_accum_steps", "bucket_batches", "keep_last",
                    "checkpoint_every_epochs")
        for name in positive:
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1 (it is {getattr(self, name)}).")
        for name in ("max_steps", "num_workers", "warmup_steps", "save_every_steps", "max_grad_norm",
                     "weight_decay"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} cannot be negative (it is {getattr(self, name)}).")
        if not 0 < self.lr < 1:
            raise ConfigError(f"lr must be between 0 and 1 (it is {self.lr}); the profiles use 1e-5 (1e-4 with LoRA).")
        for name in ("beta1", "beta2"):
            if not 0 <= getattr(self, name) < 1:
                raise ConfigError(f"{name} must be in [0, 1) (it is {getattr(self, name)}).")
        if self.optimizer not in OPTIMIZERS:
            raise ConfigError(f"optimizer must be one of {', '.join(OPTIMIZERS)} (it is '{self.optimizer}').")
        if self.lr_schedule not in SCHEDULES:
            raise ConfigError(f"lr_schedule must be one of {', '.join(SCHEDULES)} (it is '{self.lr_schedule}').")
        if self.mixed_precision not in PRECISIONS:
            raise ConfigError(f"mixed_precision must be one of {', '.join(PRECISIONS)} (it is '{self.mixed_precision}').")
        if self.device not in ("auto", "cpu", "cuda"):
            raise ConfigError(f"device must be auto, cpu or cuda (it is '{self.device}').")
        on_cuda = cuda_available and self.device != "cpu"
        if self.device == "cuda" and not cuda_available:
            raise ConfigError("device is 'cuda' but no CUDA GPU is available; set device=auto or device=cpu.")
        if self.mixed_precision == "fp16" and not on_cuda:
            raise ConfigError("mixed_precision=fp16 needs a CUDA GPU; on the CPU use bf16 or no.")
        if self.optimizer in ("adamw8bit", "paged_adamw8bit") and not on_cuda:
            raise ConfigError(
                f"optimizer={self.optimizer} (bitsandbytes) runs on CUDA GPUs only; use optimizer=adamw on this machine."
            )
        if self.lora_rank < 0:
            raise ConfigError(f"lora_rank cannot be negative (it is {self.lora_rank}); 0 trains the whole GPT.")
        if not 0 <= self.lora_dropout < 1:
            raise ConfigError(f"lora_dropout must be in [0, 1) (it is {self.lora_dropout}).")
        if self.lr_batch < 0:
            raise ConfigError(f"lr_batch cannot be negative (it is {self.lr_batch}); 0 turns the batch scaling off.")
        if self.lora_rank and self.lora_alpha <= 0:
            raise ConfigError(f"lora_alpha must be above 0 with LoRA (it is {self.lora_alpha}).")
        if not 0 < self.min_audio_seconds < self.max_audio_seconds:
            raise ConfigError("min_audio_seconds must be above 0 and below max_audio_seconds.")
        if self.engine not in engine_names():
            raise ConfigError(f"engine must be one of {', '.join(engine_names())} (it is '{self.engine}').")
        not_options = [name for name in self.options if name not in _options_class(self.engine).names()]
        if not_options:
            raise ConfigError(_not_a_setting(not_options[0], self.engine, set()))
        try:
            self.engine_options().validate()
        except OptionError as exc:
            raise ConfigError(str(exc)) from None
        if not self.base_model_dir:
            raise ConfigError("base_model_dir is not set: point it to the engine's base-model folder.")
        if not self.project_dir and not self.dataset_dir:
            raise ConfigError("project_dir is not set: point it to the voice project folder.")
        if self.run_name:
            try:
                check_run_name(self.run_name)  # a name with a path separator would write outside runs/
            except RunNameError as exc:
                raise ConfigError(str(exc)) from None

    # -- paths -------------------------------------------------------------------------------------------------------
    @property
    def dataset_path(self) -> Path:
        return Path(self.dataset_dir) if self.dataset_dir else Path(self.project_dir) / "dataset"

    @property
    def run_dir(self) -> Path:
        root = Path(self.project_dir) if self.project_dir else self.dataset_path.parent
        return root / "runs" / self.run_name


def _common_fields() -> set[str]:
    """The TrainConfig fields every engine reads (all but ``options``)."""
    return {f.name for f in fields(TrainConfig)} - {"options"}


def _options_class(engine: str) -> type[EngineOptions]:
    """The engine's options dataclass; an engine this installation lacks has none (``validate`` names it)."""
    try:
        return get_engine(engine).train_options
    except EngineError:
        return EngineOptions


def _engine_title(engine: str) -> str:
    try:
        return get_engine(engine).title
    except EngineError:
        return f"the engine '{engine}'"


def _not_a_setting(name: str, engine: str, known: set[str]) -> str:
    """Why ``name`` cannot be set for ``engine``: another engine's option, or no setting at all."""
    owners = [get_engine(other).title for other in engine_names()
              if other != engine and name in get_engine(other).train_options.names()]
    if owners:
        return f"{name} is a setting of {' and '.join(owners)}; it does nothing for {_engine_title(engine)}."
    listed = f" Known: {', '.join(sorted(known))}." if known else ""
    return f"Unknown training setting '{name}' for {_engine_title(engine)}.{listed}"


# Fields that may differ between the original run and a resume without breaking exact continuation.
RESUMABLE_CHANGES = frozenset({"epochs", "max_steps", "save_every_steps", "keep_last", "num_workers",
                               "memory_interval_s", "eval_each_epoch", "checkpoint_every_epochs", "judge",
                               "judge_whisper_model"})


def incompatible_for_resume(saved: TrainConfig, new: TrainConfig) -> list[str]:
    """Fields and engine options whose change would make a resumed run differ from the original (data order,
    model, optimiser)."""
    out = []
    for f in fields(TrainConfig):
        if f.name in RESUMABLE_CHANGES or f.name in ("project_dir", "base_model_dir", "dataset_dir", "run_name",
                                                     "options"):
            continue
        if getattr(saved, f.name) != getattr(new, f.name):
            out.append(f.name)
    if saved.engine == new.engine:
        old, now = saved.engine_options(), new.engine_options()
        out += [name for name in old.names() if getattr(old, name) != getattr(now, name)]
    return out


__all__ = ["TrainConfig", "ConfigError", "OPTIMIZERS", "SCHEDULES", "PRECISIONS", "incompatible_for_resume"]
