"""Parler-TTS v1 behind the engine boundary (:class:`alltalk_gui.core.engine_api.engine.Engine`): ``ENGINE``.

What differs from XTTS v2 and F5-TTS, as the app sees it:

* **Its own Python environment** (:attr:`ParlerEngine.environment`, :mod:`.environment`): Parler's classes need
  transformers 4.46.1. The training child runs in that environment (the launcher asks
  :func:`~alltalk_gui.core.engine_api.environment.python_for`); preview and export call :mod:`.worker` in a
  child of it (:class:`~alltalk_gui.core.engine_api.engine_child.EngineChild`). This module and :mod:`.files`,
  :mod:`.description`, :mod:`.download`, :mod:`.export` and :mod:`.memory_estimate` run in the app itself.
* **44.1 kHz** clips of 1-30 s (DAC 44.1 kHz), whose codes are computed once and cached (:mod:`.codes`).
* **The voice is described in words**, not given as a clip: the description (:mod:`.description`, saved in the
  project, written into each run) conditions training and speech. The reference is a description.
* **English only** (Parler-TTS v1 was trained on English).
* One loss with 9 parts, one per DAC codebook.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from alltalk_gui.core.engine_api.engine import (BaseModelError, DiskNeeds, EngineError, HubDownload, Licence, Reference,
                                               ReferenceKind, ShippedProfiles, TrainingSetup)
from alltalk_gui.core.engines.parler import download
from alltalk_gui.core.engines.parler.environment import ENVIRONMENT
from alltalk_gui.core.engines.parler.files import BASE_MODEL_SETTING, CONFIG_FILE, SAMPLE_RATE, TOKENIZER_FILE, TOKENIZER_FILES
from alltalk_gui.core.engines.parler.options import ParlerGenerationOptions, ParlerTrainOptions

WORKER = "alltalk_gui.core.engines.parler.worker"
MAX_CLIP_MS = 30_000
LANGUAGES_NOTE = ("Parler-TTS v1 was trained on English only: it reads other languages with English sounds, "
                  "and a few minutes of recordings will not teach it a language. XTTS v2 speaks this language.")


@dataclass
class ParlerVoice:
    """A loaded model in a child of the engine's environment, and what it was trained with."""

    child: Any                # EngineChild; ends when the voice is dropped
    key: str
    description: str          # the description the checkpoint's run trained with ("" for the base model)
    step: int


class ParlerEngine(HubDownload, ShippedProfiles):
    """Parler-TTS Mini v1 / Large v1 (huggingface/parler-tts): fine-tunes the decoder; Flan-T5 and DAC stay frozen."""

    name = "parler"
    aliases = ("parler-tts",)
    title = "Parler-TTS v1"
    summary = "English only · the voice is described in words, no reference clip · Apache-2.0"
    sample_rate = SAMPLE_RATE
    output_sample_rate = SAMPLE_RATE
    max_clip_ms = MAX_CLIP_MS
    base_model_files = (CONFIG_FILE, "model.safetensors", *TOKENIZER_FILES)
    voice_files = (CONFIG_FILE, TOKENIZER_FILE)
    export_formats = ("parler",)
    export_format_titles = {"parler": "Parler-TTS model folder (from_pretrained) + description"}
    export_folders: dict[str, str] = {}  # AllTalk loads Parler-TTS from the Hub by name, not fine-tuned folders
    export_training_files = ""  # a Parler export is the whole model (with Flan-T5 and DAC) and its description
    export_half = True
    base_model_setting = BASE_MODEL_SETTING
    base_model_hint = (f"a download of https://huggingface.co/{download.REPOSITORIES['mini']} (or "
                       f"{download.REPOSITORIES['large']}): config.json, model.safetensors and the tokenizer's files")
    download_repo = ""  # Mini or Large, each from its own repository
    download_size = "about 3.5 GB (Mini v1)"
    download = download
    licence = Licence(download.LICENCE_ID, "Apache-2.0 (Parler-TTS, Flan-T5) and MIT (DAC)", download.LICENCE_URL,
                      download.LICENCE_SUMMARY)
    train_options = ParlerTrainOptions
    generation_options = ParlerGenerationOptions
    reference_kind = ReferenceKind.DESCRIPTION  # the voice is described in words
    languages = ("en",)
    languages_note = {"en": "", "*": LANGUAGES_NOTE}
    # Parler's own packages (parler-tts, transformers 4.46.1, descript-audio-codec) live in its environment, not
    # the app's, whose metadata Help > About reads: they are listed by environment.py's requirements instead.
    packages: tuple[tuple[str, str], ...] = ()
    environment = ENVIRONMENT

    # ----------------------------------------------------------------------------------------- base model
    def validate_base_model(self, folder: str | os.PathLike[str]):
        from alltalk_gui.core.engines.parler.files import validate_base_model

        return validate_base_model(folder)

    def describe_base_model(self, folder: str | os.PathLike[str]) -> str:
        info = self.validate_base_model(folder)
        decoder = info.decoder
        return (f"{info.title}: decoder with {decoder.get('num_hidden_layers')} layers, width "
                f"{decoder.get('hidden_size')}, {info.parameters / 1e6:,.1f} M parameters to train "
                f"({info.total_parameters / 1e6:,.1f} M with Flan-T5 and DAC).")

    def accelerate_config(self, config, processes: int) -> None:
        return None  # the decoder (Mini 460 M, Large 1.9 B) trains data-parallel: accelerate's default (DDP)

    # ----------------------------------------------------------------------------------------- dataset needs
    def text_checker(self, language: str, vocab_file: str | os.PathLike[str] | None = None):
        return TokenizerCheck(vocab_file)

    def base_model_vocab(self) -> Path | None:
        """The chosen base model's ``tokenizer.json`` (Flan-T5's), for the exact text check."""
        from alltalk_gui.core import app_settings

        try:
            folder = app_settings.get(self.base_model_setting)
        except app_settings.SettingsError:  # unreadable settings count as no choice: the check is approximate
            return None
        tokenizer = Path(str(folder)).expanduser() / TOKENIZER_FILE if folder else None
        return tokenizer if tokenizer is not None and tokenizer.is_file() else None

    def load_clips(self, config) -> tuple[list[Any], list[Any]]:
        from alltalk_gui.core.engines.parler.data import load_dataset

        return load_dataset(config.dataset_path, min_seconds=config.min_audio_seconds,
                            max_seconds=config.max_audio_seconds,
                            text_check=TokenizerCheck(Path(config.base_model_dir) / TOKENIZER_FILE))

    # ----------------------------------------------------------------------------------------- model and loss
    def training_setup(self, config, clips: tuple[list[Any], list[Any]], device) -> TrainingSetup:
        """Runs in the engine's environment (the training child)."""
        from alltalk_gui.core.engines.parler.training import training_setup

        return training_setup(self, config, clips, device)

    def apply_memory_levers(self, trainable, config) -> int:
        """LoRA (with the frozen weights in bf16 under bf16 autocast) and checkpointing, in place; returns the
        trainable parameter count."""
        from alltalk_gui.core.engines.parler.model import (add_lora, set_checkpointing, store_frozen_in_bf16,
                                                           trainable_parameters)

        if config.lora_rank:
            add_lora(trainable, config.lora_rank, config.lora_alpha, config.lora_dropout)
            if config.mixed_precision == "bf16":
                store_frozen_in_bf16(trainable)
        set_checkpointing(trainable, config.gradient_checkpointing)
        return trainable_parameters(trainable)

    def estimate_memory(self, config, *, attention_scores: bool = False, parameters: int | None = None):
        """The estimate for Mini v1 (or Large v1 when the config's base model is one); None for other sizes."""
        from alltalk_gui.core.engines.parler.memory_estimate import estimate_for_config

        return estimate_for_config(config, attention_scores=attention_scores, parameters=parameters)

    def model_size(self, config) -> str | None:
        """Mini v1 or Large v1 by the base model's config (None for another: the tests' tiny model, an unread
        folder): Low's target is 8 GiB for Large, 4 for Mini."""
        from alltalk_gui.core.engines.parler.memory_estimate import size_of

        return size_of(None, str(config.base_model_dir)) if getattr(config, "base_model_dir", "") else None

    def disk_needs(self, config) -> DiskNeeds | None:
        """A checkpoint holds the trainable view (decoder, prompt embedding, projection: fp32, or bf16 for the frozen
        weights under LoRA with bf16) and AdamW's moments per trainable parameter; an export writes the whole model
        (with Flan-T5 and DAC) and the tokenizer. From the folder's config and headers only."""
        from alltalk_gui.core.engines.parler.files import validate_base_model
        from alltalk_gui.core.engines.parler.memory_estimate import lora_parameters

        try:
            info = validate_base_model(config.base_model_dir)
        except BaseModelError:
            return None
        adapters = lora_parameters(config.lora_rank, info.decoder) if config.lora_rank else 0
        frozen_bytes = 2 if config.lora_rank and config.mixed_precision == "bf16" else 4
        moments = 2 if "8bit" in config.optimizer else 8
        checkpoint = info.parameters * frozen_bytes + adapters * 4 + moments * (adapters or info.parameters)
        weights = sum(p.stat().st_size for p in info.weights)
        tokenizer = sum(p.stat().st_size for p in info.folder.glob("*token*") if p.is_file())
        return DiskNeeds(checkpoint_bytes=checkpoint + (1 << 20), export_bytes=weights + tokenizer)

    # ----------------------------------------------------------------------------------------- synthesis
    def load_voice(self, base_model_dir: Path, weights: Path | None, device: str) -> ParlerVoice:
        from alltalk_gui.core.engine_api.engine_child import EngineChild
        from alltalk_gui.core.engine_api.environment import EngineEnvironmentError, python_for

        try:
            child = EngineChild(python_for(self), WORKER)
        except EngineEnvironmentError as exc:
            raise EngineError(str(exc)) from exc
        loaded = child.call("load_voice", base_model_dir=str(base_model_dir),
                            checkpoint_dir=str(weights.parent) if weights is not None else None, device=device)
        return ParlerVoice(child, loaded["key"], loaded["description"], loaded["step"])

    def synthesize(self, voice: ParlerVoice, text: str, reference: Reference, language: str, settings,
                   before_piece=None) -> Any:
        """Speak ``text`` as the description says (the reference's text, else what the voice trained with), piece
        by piece: each piece is one call to the child process, ``before_piece`` is called before each (where a
        take shows how far it got and can be stopped), and the pieces are joined here as the child would join them
        (:func:`~alltalk_gui.core.engines.parler.synthesis.join`)."""
        from dataclasses import asdict

        from alltalk_gui.core.engine_api.languages import spoken_pieces
        from alltalk_gui.core.engines.parler.synthesis import MAX_CHARACTERS, Sampling, join

        if language != "en":
            raise EngineError("Parler-TTS v1 speaks English only; " + LANGUAGES_NOTE.split(": ", 1)[-1])
        description = " ".join((reference.text or voice.description).split())
        if not description:
            raise EngineError("Parler-TTS needs a description of the voice (who speaks, and how): write one, or "
                              "pick a checkpoint, whose run kept the description it trained with.")
        options: ParlerGenerationOptions = settings.engine_options(self)
        sampling = asdict(Sampling(temperature=options.temperature, top_k=options.top_k, top_p=options.top_p,
                                   repetition_penalty=options.repetition_penalty, seed=settings.seed,
                                   max_seconds=options.max_seconds))
        return join([voice.child.call("synthesize", key=voice.key, description=description, pieces=[piece],
                                      sampling=sampling)
                     for piece in spoken_pieces(text, "en", MAX_CHARACTERS, before_piece)])

    def voice_prompt(self, project, suggest: bool = False) -> str:
        """The project's description, or one measured from its dataset (not saved until the user keeps it);
        ``suggest``: measured anew whatever the project keeps."""
        from alltalk_gui.core.engines.parler.description import describe, measure_project, suggested_description

        if suggest:
            return describe(project.name, measure_project(project))
        return suggested_description(project)

    def save_voice_prompt(self, project, text: str) -> None:
        from alltalk_gui.core.engines.parler.description import save_description

        try:
            save_description(project.settings, text, edited=True)
        except ValueError as exc:
            raise EngineError(str(exc)) from exc

    def reference_suggestion(self, checkpoint) -> str:
        """The description the checkpoint's run trained with (its ``description.txt``), else its project's."""
        from alltalk_gui.core.engines.parler.description import saved_description
        from alltalk_gui.core.engines.parler.tuned import run_description

        found = run_description(checkpoint.path.parent.parent) if checkpoint is not None else ""
        if found or checkpoint is None:
            return found
        project = checkpoint.config.get("project_dir") or ""
        try:
            from alltalk_gui.core.project.folder import VoiceProject

            return saved_description(VoiceProject.open(project).settings) if project else ""
        except Exception:  # a moved or unreadable project: no suggestion, the user writes one
            return ""

    def generation_estimate(self, settings, text: str, reference_seconds: float, reference_text: str) -> None:
        return None  # not measured at real size: Parler's decoder samples 86 steps a second of speech

    # ----------------------------------------------------------------------------------------- export
    def export_target(self, out_dir: str | os.PathLike[str], options, project_name: str = "") -> Path:
        from alltalk_gui.core.engines.parler.export import export_target

        return export_target(out_dir, options, project_name)

    def export(self, checkpoint, out_dir: str | os.PathLike[str], options, *, project_name: str = "",
               progress: Callable[[str, float], None] | None = None):
        from alltalk_gui.core.engine_api.environment import EngineEnvironmentError, python_for
        from alltalk_gui.core.engines.parler.export import export_checkpoint
        from alltalk_gui.core.voice.export import ExportError

        try:
            python = python_for(self)
        except EngineEnvironmentError as exc:
            raise ExportError(str(exc)) from exc
        return export_checkpoint(checkpoint, out_dir, options, project_name=project_name, progress=progress,
                                 python=python, description=options.voice_prompt)

    # ----------------------------------------------------------------------------------------- test model
    def make_test_model(self, folder: str | os.PathLike[str], seed: int = 0) -> Path:
        """Write the tiny random model (:mod:`.tiny_model`) with the engine's environment."""
        from alltalk_gui.core.engine_api.engine_child import call_once
        from alltalk_gui.core.engine_api.environment import python_for

        return Path(call_once(python_for(self), WORKER, "make_tiny_model", folder=str(folder), seed=seed))


class TokenizerCheck:
    """Which characters of a transcript Flan-T5's tokenizer reads as unknown
    (:class:`~alltalk_gui.core.engine_api.engine.TextCheck`). Exact with the base model's ``tokenizer.json`` (read
    with the ``tokenizers`` library, no model); without one it only finds empty text."""

    max_chars = None  # the clip's 30 s limit is what bounds the text (Parler's own training keeps up to 400 tokens)

    def __init__(self, tokenizer_file: str | os.PathLike[str] | None) -> None:
        self.tokenizer_file = Path(tokenizer_file) if tokenizer_file else None
        self._tokenizer = None
        self._unknown: int | None = None

    def warm_up(self) -> None:
        if self._tokenizer is None and self.tokenizer_file is not None and self.tokenizer_file.is_file():
            from tokenizers import Tokenizer

            self._tokenizer = Tokenizer.from_file(str(self.tokenizer_file))
            self._unknown = self._tokenizer.token_to_id("<unk>")

    def problem(self, text: str) -> str | None:
        if not text.strip():
            return "The text is empty."
        self.warm_up()
        if self._tokenizer is None or self._unknown is None:
            return None
        unknown = [c for c in dict.fromkeys(text) if not c.isspace()
                   and self._unknown in self._tokenizer.encode(c, add_special_tokens=False).ids]
        if not unknown:
            return None
        return ("Parler-TTS's tokenizer (Flan-T5) cannot read " + ", ".join(f"'{c}'" for c in unknown[:8])
                + "; spell them out or remove them.")


ENGINE = ParlerEngine()
