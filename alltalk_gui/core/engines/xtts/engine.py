"""XTTS v2 behind the engine boundary (:class:`alltalk_gui.core.engine_api.engine.Engine`): ``ENGINE``.

Each method hands over to the module that knows the part: :mod:`.files` (base-model folder and its checks),
:mod:`.text_check` (transcripts), :mod:`.data` (clips and batches), :mod:`.model` (GPT, frozen front end, loss,
LoRA, inference model), :mod:`.memory_estimate`, :mod:`.export`. torch and coqui are imported on first use, so
importing this module (which :func:`~alltalk_gui.core.engine_api.engine.get_engine` does) stays cheap.
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import Any, Callable

from alltalk_gui.core.engine_api.engine import (
    DiskNeeds, EngineError, HubDownload, Licence, Reference, ReferenceKind, ShippedProfiles, TrainingSetup,
)
from alltalk_gui.core.engine_api.languages import CODES, missing_sentence, spoken_pieces
from alltalk_gui.core.engines.xtts import download
from alltalk_gui.core.engines.xtts.files import BASE_MODEL_SETTING, OPTIONAL_FILES, REQUIRED_FILES
from alltalk_gui.core.engines.xtts.options import XttsGenerationOptions, XttsTrainOptions

SAMPLE_RATE = 22050         # the GPT, the DVAE and the conditioning front end all work at 22 050 Hz
OUTPUT_SAMPLE_RATE = 24000  # the HiFi-GAN decoder's output (config.audio.output_sample_rate)
MAX_SAMPLES = 255_995       # coqui's XttsConfig max_wav_length: longer training clips are refused
MAX_CLIP_MS = MAX_SAMPLES * 1000 // SAMPLE_RATE  # 11 609 ms


class XttsEngine(HubDownload, ShippedProfiles):
    """XTTS v2 (coqui-tts): fine-tunes the GPT; the DVAE and the mel front ends stay frozen."""

    name = "xtts"
    aliases = ("xtts-v2",)
    title = "XTTS v2"
    summary = "17 languages · speaks from the reference audio alone · Coqui Public Model License (non-commercial)"
    sample_rate = SAMPLE_RATE
    output_sample_rate = OUTPUT_SAMPLE_RATE
    max_clip_ms = MAX_CLIP_MS
    base_model_files = REQUIRED_FILES
    # What synthesis reads is model.VOICE_FILES, but a training folder of coqui's Trainer has no model.pth and
    # borrows mel_stats.pth from its base (layout.py): the engine's load names whatever is missing, and where from.
    voice_files = ("config.json",)
    optional_base_model_files = OPTIONAL_FILES
    export_formats = ("alltalk", "coqui")  # AllTalk's models/xtts/<name>/, or a plain coqui-tts model folder
    export_format_titles = {"alltalk": "AllTalk v2 (models/xtts/<name>)", "coqui": "coqui-tts model folder"}
    export_folders = {"alltalk": "models/xtts"}
    export_training_files = "dvae.pth, mel_stats.pth"  # AllTalk's format always has them (see export.py)
    export_half = True
    base_model_setting = BASE_MODEL_SETTING
    base_model_hint = (f"for example an AllTalk install's models/xtts/xttsv2_2.0.3, or a download of "
                       f"https://huggingface.co/{download.DEFAULT_REPO}")
    download_repo = download.DEFAULT_REPO
    download_size = "about 2 GB"
    download = download  # licence and Hub download (HubDownload)
    licence = Licence(download.LICENCE_ID, "Coqui Public Model License 1.0.0 (CPML)", download.LICENCE_URL,
                      download.LICENCE_SUMMARY)
    train_options = XttsTrainOptions
    generation_options = XttsGenerationOptions
    reference_kind = ReferenceKind.CLIPS  # the GPT conditions on the audio alone
    languages = CODES  # all 17 of the app's languages are XTTS v2's own
    languages_note: dict[str, str] = {}
    packages = (("coqui-tts", "XTTS v2 model code"), ("coqui-tts-trainer", "coqui-tts training helpers"))
    environment = None  # coqui-tts runs in the app's own environment

    # ----------------------------------------------------------------------------------------- base model
    def validate_base_model(self, folder: str | os.PathLike[str]):
        from alltalk_gui.core.engines.xtts.files import validate_base_model

        return validate_base_model(folder)  # a run's base: a training folder AllTalk is still writing is refused

    def describe_base_model(self, folder: str | os.PathLike[str]) -> str:
        from alltalk_gui.core.engines.xtts.files import validate_base_model

        # A preview (and the Train page's choice) may look at a training folder AllTalk is still writing: the
        # description says so (ModelFiles.note), and a run started from it is refused (validate_base_model).
        info = validate_base_model(folder, live_ok=True)
        used = info.files.note() if info.files is not None else ""
        return (f"GPT with {info.gpt_layers} layers, width {info.gpt_width}, {info.gpt_parameters / 1e6:,.1f} M "
                f"parameters; {info.number_text_tokens} text tokens{'; ' + used if used else ''}.")

    def make_test_model(self, folder: str | os.PathLike[str], seed: int = 0) -> Path:
        from alltalk_gui.core.engines.xtts.tiny_model import build_tiny_xtts

        return build_tiny_xtts(folder, seed=seed)

    # ----------------------------------------------------------------------------------------- dataset needs
    def text_checker(self, language: str, vocab_file: str | os.PathLike[str] | None = None):
        from alltalk_gui.core.engines.xtts.text_check import TextChecker

        return TextChecker(language, vocab_file)

    def base_model_vocab(self) -> Path | None:
        from alltalk_gui.core.engines.xtts.text_check import base_model_vocab

        return base_model_vocab()

    def load_clips(self, config) -> tuple[list[Any], list[Any]]:
        from alltalk_gui.core.engines.xtts.data import load_dataset
        from alltalk_gui.core.engines.xtts.files import load_tokenizer
        from alltalk_gui.core.engines.xtts.model import import_coqui_trainer

        # First import of coqui's trainer modules under our control: it sets torch to one thread; this undoes it.
        import_coqui_trainer()
        return load_dataset(config.dataset_path, load_tokenizer(config.base_model_dir), config.language,
                            max_audio_seconds=config.max_audio_seconds, min_audio_seconds=config.min_audio_seconds,
                            max_text_tokens=config.engine_options().max_text_tokens)

    # ----------------------------------------------------------------------------------------- model and loss
    def training_setup(self, config, clips: tuple[list[Any], list[Any]], device) -> TrainingSetup:
        from alltalk_gui.core.engines.xtts import model as xtts_model
        from alltalk_gui.core.engines.xtts.data import ClipDataset, collate, gpt_inputs, split_batch
        from alltalk_gui.core.engines.xtts.front_end import ClipFeatures, silence_frame, style_mel_settings
        from alltalk_gui.core.engines.xtts.model import LossWeights, load_gpt

        from alltalk_gui.core.engines.xtts.layout import model_files

        train_clips, eval_clips = clips
        options: XttsTrainOptions = config.engine_options()
        gpt, xtts_config, _ = load_gpt(config.base_model_dir)
        used = model_files(config.base_model_dir).note()  # a Trainer folder: which save, and what its base lends
        # The frozen front end runs once per clip, on the run's device, before the GPT gets there; its results are
        # cached beside the dataset and the front end is freed: nothing of it stays on the card while training.
        front = ClipFeatures(config, xtts_config, device)
        train_features, eval_features = front.of(train_clips), front.of(eval_clips)
        front.release()
        trainable = self.apply_memory_levers(gpt, config)
        gpt.train()
        weights = LossWeights(options.text_ce_weight, options.mel_ce_weight)
        masking = bool(xtts_config.model_args.gpt_use_masking_gt_prompt_approach)
        cond = dict(min_cond_samples=int(options.min_conditioning_seconds * SAMPLE_RATE),
                    max_cond_samples=int(options.max_conditioning_seconds * SAMPLE_RATE), masking=masking,
                    hop=style_mel_settings(xtts_config)["hop_length"],
                    silence=silence_frame(config.base_model_dir, xtts_config))
        train_set = ClipDataset(train_clips, train_features, seed=config.seed, is_eval=False, **cond)
        collate_fn = partial(collate, masking=masking)

        def loss(model, batch, eval_mode: bool = False) -> dict[str, Any]:
            # Looked up at each call, through the module, so tests can wrap it (out-of-memory injection).
            return xtts_model.gpt_loss(model, gpt_inputs(batch), weights, eval_mode=eval_mode)

        return TrainingSetup(
            model=gpt, train_set=train_set,
            eval_set=ClipDataset(eval_clips, eval_features, seed=config.seed, is_eval=True, **cond),
            lengths=[c.samples for c in train_clips], eval_lengths=[c.samples for c in eval_clips],
            collate=collate_fn, loss=loss, batch_size=lambda batch: len(batch["filenames"]), split=split_batch,
            loss_parts=("loss_text_ce", "loss_mel_ce"), parameters=sum(p.numel() for p in gpt.parameters()),
            trainable=trainable, longest_seconds=max(c.samples for c in train_clips) / SAMPLE_RATE,
            notes=(front.note(), *([f"Base model {config.base_model_dir}: {used}."] if used else [])),
        )

    # ----------------------------------------------------------------------------------------- memory
    def apply_memory_levers(self, gpt, config) -> int:
        """Switch on ``config``'s model-side levers in place; returns the number of trainable parameters."""
        from alltalk_gui.core.engines.xtts.model import add_lora_adapters, enable_activation_checkpointing
        from alltalk_gui.core.engines.xtts.streamline import streamline_for_training

        streamline_for_training(gpt)  # every profile: the same maths, in fewer kernels and less memory
        if config.lora_rank:
            # Only the adapters (and the mel head and final norm) train: no gradients or optimizer state for the
            # other 440 M base weights.
            add_lora_adapters(gpt, config.lora_rank, config.lora_alpha, config.lora_dropout)
        elif config.engine_options().freeze_conditioning:
            # No gradients, optimizer state or saved activations for the voice-prompt front end: autograd keeps
            # nothing for modules whose parameters and inputs need no gradient.
            for module in (gpt.conditioning_encoder, getattr(gpt, "conditioning_perceiver", None)):
                if module is not None:
                    module.requires_grad_(False)
        if config.gradient_checkpointing:
            enable_activation_checkpointing(gpt)
        return sum(p.numel() for p in gpt.parameters() if p.requires_grad)

    def accelerate_config(self, config, processes: int) -> None:
        return None  # the GPT (441 M) trains data-parallel: accelerate's default

    def estimate_memory(self, config, *, attention_scores: bool = False, parameters: int | None = None):
        """The estimate for the real XTTS v2 GPT; None when ``parameters`` names another size (the tiny model).
        ``parameters`` (the run's model) includes LoRA's adapters (7.9 M at rank 16), which the estimate counts
        itself: a Low run without this got no estimate (the card rehearsal's Low rows, 2026-11-27)."""
        from alltalk_gui.core.engines.xtts.memory_estimate import XTTS_V2, estimate, lora_params

        if parameters is not None and config.lora_rank:
            parameters -= lora_params(config.lora_rank)
        if parameters is not None and parameters != XTTS_V2.gpt_params:
            return None
        return estimate(config, attention_scores=attention_scores)

    def disk_needs(self, config) -> DiskNeeds | None:
        from alltalk_gui.core.engines.xtts.disk_needs import disk_needs

        return disk_needs(config)

    # ----------------------------------------------------------------------------------------- synthesis
    def load_voice(self, base_model_dir: Path, weights: Path | None, device: str):
        import torch

        from alltalk_gui.core.engines.xtts.model import load_inference_model

        threads = torch.get_num_threads()
        try:
            return load_inference_model(base_model_dir, weights, device=device)
        finally:
            torch.set_num_threads(threads)  # some coqui imports set it to 1

    def synthesize(self, voice, text: str, reference: Reference, language: str, settings,
                   before_piece=None) -> Any:
        import numpy as np
        import torch

        from alltalk_gui.core.engines.xtts.model import synthesize

        _check_text(voice.tokenizer, text, language)
        kwargs = settings.engine_options(self).generate_kwargs()
        limit = voice.tokenizer.char_limits.get(language.split("-")[0], 250)
        # XTTS reads at most the language's character limit at once: longer text is spoken piece by piece, cut at
        # sentence ends (coqui's own splitting would need spaCy, which is not installed).
        kwargs["enable_text_splitting"] = False
        torch.manual_seed(settings.seed)
        ref = torch.from_numpy(np.ascontiguousarray(reference.samples, dtype=np.float32)).unsqueeze(0)
        pause = np.zeros(self.output_sample_rate // 5, np.float32)  # 0.2 s between pieces
        parts = [synthesize(voice, piece, ref, language, **kwargs).detach().float().cpu().numpy().reshape(-1)
                 for piece in spoken_pieces(text, language, limit, before_piece)]
        return np.concatenate([x for part in parts for x in (part, pause)][:-1]) if parts else np.zeros(0, np.float32)

    def voice_prompt(self, project, suggest: bool = False) -> str:
        return ""  # the GPT conditions on clips: nothing to learn the voice under

    def save_voice_prompt(self, project, text: str) -> None:
        return None

    def reference_suggestion(self, checkpoint) -> str:
        return ""  # the dataset's cleanest clips

    def generation_estimate(self, settings, text: str, reference_seconds: float, reference_text: str) -> None:
        return None  # not measured: the GPT's sampling on a CPU takes seconds to a minute per sentence

    # ----------------------------------------------------------------------------------------- export
    def export_target(self, out_dir: str | os.PathLike[str], options, project_name: str = "") -> Path:
        from alltalk_gui.core.engines.xtts.export import export_target

        return export_target(out_dir, options, project_name)

    def export(self, checkpoint, out_dir: str | os.PathLike[str], options, *, project_name: str = "",
               progress: Callable[[str, float], None] | None = None):
        from alltalk_gui.core.engines.xtts.export import export_xtts

        return export_xtts(checkpoint, out_dir, options, project_name=project_name, progress=progress)


def _check_text(tokenizer, text: str, language: str) -> None:
    """Refuse a language the tokenizer lacks, or characters it would turn into [UNK], with a plain reason."""
    code = language.split("-")[0]
    try:
        tokens = tokenizer.encode(text, code)
    except NotImplementedError:
        raise EngineError(f"The model does not support the language '{language}'.") from None
    except ImportError as exc:  # zh / ja text cleaning needs packages coqui-tts does not install by default
        raise EngineError(missing_sentence(language) or f"Cannot prepare {language} text: {exc}.") from None
    unk = tokenizer.tokenizer.token_to_id("[UNK]")
    if unk in tokens:
        cleaned = tokenizer.preprocess_text(text, code)
        bad = sorted({ch for ch in set(cleaned) - {" "} if unk in tokenizer.tokenizer.encode(ch).ids})
        shown = ", ".join(f"'{c}'" for c in bad) or "some characters"
        raise EngineError(f"The model's vocabulary does not know {shown}; spell them out or remove them.")


ENGINE = XttsEngine()
