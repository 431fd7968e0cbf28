"""The toy engine (``ENGINE``): everything an engine gives the app, as :class:`Engine` describes it."""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from alltalk_gui.core.engine_api.engine import (
    BaseModelError, DiskNeeds, EngineError, Licence, Reference, ReferenceKind, TrainingSetup,
)
from alltalk_gui.core.engine_api.hub_files import DownloadError
from alltalk_gui.core.engine_api.options import EngineOptions, setting
from tests.toy_engine import model as toy

MODEL_FILE = "toy_model.safetensors"
CONFIG_FILE = "toy_config.json"
MAX_CLIP_MS = 8_000
VOICE_SETTING = "toy_voice_description"  # in project.json's settings: the Train page's description


@dataclass
class ToyTrainOptions(EngineOptions):
    duration_weight: float = setting(0.5, "Duration weight", "How much the length of the speech counts in the loss "
                                     "beside its spectrum.", minimum=0.0, maximum=10.0, step=0.1, decimals=2)
    voice_description: str = setting("a calm, clear voice", "Voice description",
                                     "How the voice is described when it speaks (a deep voice is lower).")


@dataclass
class ToyGenerationOptions(EngineOptions):
    brightness: float = setting(1.0, "Brightness", "Above 1 lifts the high bands, below 1 darkens them.",
                                minimum=0.1, maximum=3.0, step=0.1, decimals=1)


@dataclass(frozen=True)
class BaseFacts:
    parameters: int


@dataclass(frozen=True)
class ToyClip:
    path: Path
    text: str
    samples: int
    log_frames: float
    spectrum: Any


class ToySet:
    """The loop's dataset: items for :func:`toy.collate`."""

    def __init__(self, clips: list[ToyClip]) -> None:
        self.clips = clips

    def set_epoch(self, epoch: int) -> None:  # noqa: ARG002 - order lives in the loop's sampler
        pass

    def __len__(self) -> int:
        return len(self.clips)

    def __getitem__(self, index: int) -> dict:
        clip = self.clips[index]
        return {"chars": toy.text_ids(clip.text), "log_frames": clip.log_frames, "spectrum": clip.spectrum}


class AsciiCheck:
    """The toy reads ASCII only."""

    def warm_up(self) -> None:
        pass

    def problem(self, text: str) -> str | None:
        bad = sorted({c for c in text if ord(c) >= 128})
        return f"The toy engine reads ASCII only: {', '.join(repr(c) for c in bad)}." if bad else None


class ToyEngine:
    name = "toy"
    aliases = ("toy-tts",)
    title = "Toy TTS"
    summary = "English only · a test engine: 16 kHz, clips up to 8 s, a voice described in words"
    sample_rate = toy.SAMPLE_RATE
    output_sample_rate = toy.SAMPLE_RATE
    max_clip_ms = MAX_CLIP_MS
    base_model_files = (MODEL_FILE, CONFIG_FILE)
    voice_files = (MODEL_FILE, CONFIG_FILE)
    export_formats = ("alltalk", "plain")
    export_format_titles = {"alltalk": "AllTalk (models/toytts/<name>)", "plain": "Toy model folder"}
    export_folders = {"alltalk": "models/toytts"}
    export_training_files = ""
    export_half = True
    base_model_setting = "toy_base_model_dir"
    download_size = "about 20 kB"
    download_repo = ""
    base_model_hint = "make one with: alltalk-gui make-test-model DIR --engine toy"
    licence = Licence("toy-mit", "MIT License", "https://opensource.org/license/mit",
                      "Free to use for anything; the toy model is random weights.")
    train_options = ToyTrainOptions
    generation_options = ToyGenerationOptions
    reference_kind = ReferenceKind.DESCRIPTION
    languages = ("en",)
    languages_note = {"en": "", "*": "The toy engine speaks English only."}
    packages = (("torch", "the toy model"), ("safetensors", "its weights"))
    environment = None  # it runs in the app's own Python environment

    # -- set-up -----------------------------------------------------------------------------------------------
    def profiles_dir(self) -> Path:
        return Path(__file__).parent / "profiles"

    def licence_accepted(self) -> bool:
        return True  # MIT asks for no acceptance

    def accept_licence(self) -> None:
        pass

    def download_base_model(self, folder, progress=None, *, repo=None, revision=None):
        raise DownloadError(f"{self.title} is not downloaded: {self.base_model_hint}.")

    def make_test_model(self, folder: str | os.PathLike[str], seed: int = 0) -> Path:
        import torch

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        torch.manual_seed(seed)
        toy.save(toy.build_model(), folder / MODEL_FILE)
        (folder / CONFIG_FILE).write_text(json.dumps({"dim": toy.DIM, "bands": toy.BANDS}), encoding="utf-8")
        return folder

    def validate_base_model(self, folder: str | os.PathLike[str]) -> BaseFacts:
        folder = Path(folder)
        for name in self.base_model_files:
            if not (folder / name).is_file():
                raise BaseModelError(f"{folder} has no {name}: it is not a {self.title} model folder.")
        try:
            config = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
            model = toy.load(folder / MODEL_FILE)
        except (OSError, ValueError, RuntimeError) as exc:
            raise BaseModelError(f"{folder / MODEL_FILE} cannot be loaded: {exc}") from exc
        if config.get("bands") != toy.BANDS:
            raise BaseModelError(f"{folder / CONFIG_FILE} describes {config.get('bands')} bands, not {toy.BANDS}.")
        return BaseFacts(sum(p.numel() for p in model.parameters()))

    def describe_base_model(self, folder: str | os.PathLike[str]) -> str:
        return f"A toy model of {self.validate_base_model(folder).parameters:,} parameters."

    def base_model_vocab(self) -> Path | None:
        return None  # it reads characters: there is no vocabulary file

    def text_checker(self, language: str, vocab_file=None) -> AsciiCheck:
        return AsciiCheck()

    # -- training ---------------------------------------------------------------------------------------------
    def load_clips(self, config) -> tuple[list[ToyClip], list[ToyClip]]:
        import soundfile

        from alltalk_gui.core.dataset.metadata import EVAL_CSV, TRAIN_CSV, MetadataError, read_metadata
        from alltalk_gui.core.training.data import DatasetError

        longest = min(config.max_audio_seconds, self.max_clip_ms / 1000)
        problems: list[str] = []
        found: dict[str, list[ToyClip]] = {}
        for name in (TRAIN_CSV, EVAL_CSV):
            try:
                rows = read_metadata(config.dataset_path / name)
            except MetadataError as exc:
                raise DatasetError(str(exc)) from exc
            found[name] = []
            for row in rows:
                path = config.dataset_path / row.audio_file
                samples, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
                seconds = len(samples) / rate
                if rate != self.sample_rate:
                    problems.append(f"{row.audio_file} is at {rate} Hz; {self.title} trains at {self.sample_rate} Hz: "
                                    "write the dataset again for this engine.")
                elif not config.min_audio_seconds <= seconds <= longest:
                    problems.append(f"{row.audio_file} is {seconds:.1f} s long; {self.title} takes "
                                    f"{config.min_audio_seconds:g} to {longest:g} s.")
                elif (problem := AsciiCheck().problem(row.text)) is not None:
                    problems.append(f"{row.audio_file}: {problem}")
                else:
                    log_frames, spectrum = toy.clip_targets(samples.mean(axis=1))
                    found[name].append(ToyClip(path, row.text, len(samples), log_frames, spectrum))
        if problems:
            raise DatasetError(f"{len(problems)} clip(s) cannot be trained on by {self.title}:", problems)
        if not found[TRAIN_CSV] or not found[EVAL_CSV]:
            raise DatasetError("The dataset needs at least one training clip and one eval clip.")
        return found[TRAIN_CSV], found[EVAL_CSV]

    def training_setup(self, config, clips, device) -> TrainingSetup:
        train_clips, eval_clips = clips
        model = toy.load(Path(config.base_model_dir) / MODEL_FILE).train()
        weight = config.engine_options().duration_weight
        random.seed(config.seed)
        return TrainingSetup(
            model=model, train_set=ToySet(train_clips), eval_set=ToySet(eval_clips),
            lengths=[c.samples for c in train_clips], eval_lengths=[c.samples for c in eval_clips],
            collate=toy.collate, loss=lambda m, batch, eval_mode=False: toy.loss(m, batch, weight),
            batch_size=lambda batch: len(batch["chars"]), split=toy.split, loss_parts=("duration", "spectrum"),
            parameters=sum(p.numel() for p in model.parameters()), trainable=self.apply_memory_levers(model, config),
            longest_seconds=max(c.samples for c in train_clips) / self.sample_rate,
        )

    def apply_memory_levers(self, model, config) -> int:
        if config.lora_rank:
            raise EngineError(f"{self.title} trains all its weights: set lora_rank=0.")
        return sum(p.numel() for p in model.parameters() if p.requires_grad)

    def estimate_memory(self, config, *, attention_scores: bool = False, parameters: int | None = None):
        return None  # nothing to estimate: the model is a few kB

    def disk_needs(self, config) -> DiskNeeds | None:
        weights = Path(config.base_model_dir) / MODEL_FILE
        if not weights.is_file():
            return None
        size = weights.stat().st_size
        return DiskNeeds(checkpoint_bytes=3 * size + (1 << 16), export_bytes=size + (1 << 12))

    def accelerate_config(self, config, processes: int) -> dict | None:
        return None  # plain data parallel (accelerate's default) suits it

    # -- synthesis --------------------------------------------------------------------------------------------
    def load_voice(self, base_model_dir: Path, weights: Path | None, device: str):
        try:
            return toy.load(Path(base_model_dir) / MODEL_FILE, weights)
        except (OSError, RuntimeError) as exc:
            raise BaseModelError(f"The toy voice cannot be loaded: {exc}") from exc

    def synthesize(self, voice, text: str, reference: Reference, language: str, settings) -> Any:
        if reference.kind is not ReferenceKind.DESCRIPTION or not reference.text.strip():
            raise EngineError(f"{self.title} speaks in a voice described in words: give a description.")
        if (problem := AsciiCheck().problem(text)) is not None:
            raise EngineError(problem)
        options: ToyGenerationOptions = settings.engine_options(self)
        return toy.speak(voice, text, reference.text, options.brightness, settings.seed)

    def reference_suggestion(self, checkpoint) -> str:
        return checkpoint.engine_options().voice_description

    def voice_prompt(self, project, suggest: bool = False) -> str:
        """The description the Train page shows and keeps in the project, else the option's default (the toy learns
        nothing under it: its runs record the voice_description option, which its previews start from)."""
        kept = "" if suggest else project.settings.get(VOICE_SETTING, "")
        return kept or ToyTrainOptions().voice_description

    def save_voice_prompt(self, project, text: str) -> None:
        if not text.strip():
            raise EngineError(f"{self.title} needs a description of the voice: it is empty.")
        project.settings[VOICE_SETTING] = " ".join(text.split())

    def generation_estimate(self, settings, text: str, reference_seconds: float, reference_text: str) -> float:
        return 0.05 + 0.001 * len(text)  # a few numpy sines: a fraction of a second (not measured)

    # -- export -----------------------------------------------------------------------------------------------
    def export_target(self, out_dir: str | os.PathLike[str], options, project_name: str = "") -> Path:
        from alltalk_gui.core.voice.export import safe_name

        return Path(out_dir).expanduser().absolute() / safe_name(options.name or project_name or "voice")

    def export(self, checkpoint, out_dir: str | os.PathLike[str], options, *, project_name: str = "",
               progress: Callable[[str, float], None] | None = None):
        from alltalk_gui.core.voice import publish
        from alltalk_gui.core.voice.export import ExportResult

        report = progress or (lambda _what, _fraction: None)
        target = self.export_target(out_dir, options, project_name or checkpoint.run)
        voice = toy.load(checkpoint.base_model_dir / MODEL_FILE, checkpoint.weights)
        publish.prepare_output(target.parent, 1 << 20)
        report("Writing the model", 0.3)
        with publish.staged_export(target, options.overwrite) as export:
            toy.save(voice, export.folder / "model.safetensors", half=options.half)
            (export.folder / CONFIG_FILE).write_text((checkpoint.base_model_dir / CONFIG_FILE).read_text(),
                                                     encoding="utf-8")
            description = options.voice_prompt or self.reference_suggestion(checkpoint)
            (export.folder / "voice.txt").write_text(description + "\n", encoding="utf-8")
            (export.folder / "export_info.json").write_text(json.dumps({
                "engine": self.name, "format": options.format, "step": checkpoint.step, "voice": description,
                "training_settings": checkpoint.engine_options().to_dict()}, indent=2), encoding="utf-8")
        report("Done", 1.0)
        return ExportResult(folder=export.target, files=export.files,
                            model_bytes=(export.target / "model.safetensors").stat().st_size,
                            warnings=export.warnings)


ENGINE = ToyEngine()
