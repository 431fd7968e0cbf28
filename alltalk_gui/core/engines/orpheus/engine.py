"""Orpheus-TTS 3B 0.1 behind the engine boundary (:class:`alltalk_gui.core.engine_api.engine.Engine`): ``ENGINE``.

Each method hands over to the module that knows the part: :mod:`.files` (base folder and its checks),
:mod:`.download`, :mod:`.data` (clips, sequences, batches) with :mod:`.codes` (SNAC codes once per clip),
:mod:`.model` (the Llama, its levers and the chunked loss), :mod:`.memory_estimate`, :mod:`.tuned` (a checkpoint's
model), :mod:`.synthesis` and :mod:`.export`. torch and transformers are imported on first use, so importing this
module (which the registry does) is cheap.

What differs from the other engines, as the app sees it: the voice is a **speaker name** the fine-tune learns
(the dataset's ``speaker_name``, which the export fills with the project's name) - no reference clip at
synthesis; clips of 1-30 s at SNAC's 24 kHz, encoded to codes once; two loss parts (the codes, and the end of
speech); a 3.3 B model whose base weights may be held in 4 bits (``base_weights``); export as a Hugging Face model
folder or as the LoRA adapter alone.
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import Any, Callable

from alltalk_gui.core.engine_api.engine import (
    DiskNeeds, EngineError, HubDownload, Licence, Reference, ReferenceKind, ShippedProfiles, TrainingSetup, language_note,
)
from alltalk_gui.core.engines.orpheus import download
from alltalk_gui.core.engines.orpheus.codec import CODEC_DIR, CODEC_FILES
from alltalk_gui.core.engines.orpheus.data import MAX_SECONDS
from alltalk_gui.core.engines.orpheus.files import BASE_MODEL_SETTING, CONFIG_FILE, TOKENIZER_FILES
from alltalk_gui.core.engines.orpheus.options import OrpheusGenerationOptions, OrpheusTrainOptions

SAMPLE_RATE = 24_000          # SNAC 24 kHz: clips, datasets and speech
EXPORT_FORMAT_TITLES = {"orpheus": "Hugging Face model folder (Orpheus, LoRA merged)",
                        "lora": "LoRA adapter alone (peft), for the base model"}
SENTENCE_PAUSE_S = 0.2
LANGUAGES_NOTE = ("Orpheus 3B 0.1 was trained on English speech: a few minutes of another language will not teach "
                  "it that language well. canopylabs' multilingual research models (French, German, Korean, Hindi, "
                  "Mandarin, Spanish, Italian) have the same layout and can be used as the base-model folder.")


class OrpheusEngine(HubDownload, ShippedProfiles):
    """Orpheus-TTS 3B 0.1 (canopylabs): fine-tunes the Llama that speaks in SNAC codes; the codec stays as it is."""

    name = "orpheus"
    aliases = ("orpheus-tts",)
    title = "Orpheus-TTS 3B"
    summary = ("English · learns a speaker name, no reference clip at synthesis · 3.3 B parameters: 4-bit LoRA on "
               "6 GB cards · Llama 3.2 licence")
    sample_rate = SAMPLE_RATE
    output_sample_rate = SAMPLE_RATE
    max_clip_ms = int(MAX_SECONDS * 1000)
    base_model_files = (CONFIG_FILE, *TOKENIZER_FILES, "model*.safetensors", *(f"{CODEC_DIR}/{n}" for n in CODEC_FILES))
    # None checked by name before loading: load_voice's own check (files.validate_base_model) names every missing file
    # of a model folder, and a LoRA adapter folder (no config.json, no codec) is a voice too, on its base (.adapter).
    voice_files: tuple[str, ...] = ()
    export_formats = tuple(EXPORT_FORMAT_TITLES)
    export_format_titles = EXPORT_FORMAT_TITLES
    export_folders: dict[str, str] = {}  # AllTalk v2 has no Orpheus engine: neither format goes into its models/
    base_model_setting = BASE_MODEL_SETTING
    download_size = "about 6.7 GB"
    download_repo = download.MODELS[download.DEFAULT_MODEL]
    base_model_hint = ("Orpheus 3B 0.1 from the Hugging Face Hub (canopylabs/orpheus-3b-0.1-pretrained, or -ft for "
                       "its 8 voices; gated: accept the Llama 3.2 licence on the model's page and log in), with the "
                       "SNAC 24 kHz codec in snac/; any folder of that layout works, our exports included.")
    export_training_files = ""  # an export holds everything: it is a base-model folder itself
    export_half = False  # its model folder is always bf16, as Orpheus's own tools load it
    languages = ("en",)
    packages = (("transformers", "Orpheus's Llama: loading, generation, export"),
                ("snac", "the SNAC 24 kHz audio codec (MIT)"), ("peft", "LoRA adapters"),
                ("bitsandbytes", "the 4-bit base (Low) and 8-bit AdamW (High)"))
    download = download  # licence and Hub download (HubDownload)
    licence = Licence(download.LICENCE_ID, download.LICENCE_TITLE, download.LICENCE_URL, download.LICENCE_SUMMARY)
    train_options = OrpheusTrainOptions
    generation_options = OrpheusGenerationOptions
    reference_kind = ReferenceKind.SPEAKER
    environment = None  # it runs in the app's own Python environment
    languages_note = {"en": "", "*": LANGUAGES_NOTE}

    # ----------------------------------------------------------------------------------------- base model
    def validate_base_model(self, folder: str | os.PathLike[str]):
        from alltalk_gui.core.engines.orpheus.files import validate_base_model

        return validate_base_model(folder)

    def describe_base_model(self, folder: str | os.PathLike[str]) -> str:
        info = self.validate_base_model(folder)
        config = info.config
        size = f"{info.parameters / 1e9:.2f} B" if info.parameters >= 1e9 else f"{info.parameters / 1e6:.2f} M"
        adapter = f"The {info.adapter.describe()}, merged in memory when it loads: " if info.adapter else ""
        return (f"{adapter}Llama with {config['num_hidden_layers']} layers, width {config['hidden_size']}, "
                f"{size} parameters, a vocabulary of {config['vocab_size']:,} and a context of "
                f"{info.context:,} tokens; SNAC {info.codec.sample_rate // 1000} kHz codec "
                f"({info.codec.codebook_size} codes a level, {info.codec.frame_rate:.1f} frames a second).")

    def make_test_model(self, folder: str | os.PathLike[str], seed: int = 0) -> Path:
        from alltalk_gui.core.engines.orpheus.tiny_model import build_tiny_orpheus

        return build_tiny_orpheus(folder, seed=seed)

    # ----------------------------------------------------------------------------------------- dataset needs
    def text_checker(self, language: str, vocab_file: str | os.PathLike[str] | None = None):
        return ContextCheck(vocab_file)

    def base_model_vocab(self) -> Path | None:
        """The chosen base folder's ``tokenizer.json`` (what :class:`ContextCheck` counts tokens with; a LoRA
        adapter's base's, whose codec and context the check reads beside it)."""
        from alltalk_gui.core import app_settings
        from alltalk_gui.core.engines.orpheus.files import config_folder

        try:
            folder = app_settings.get(self.base_model_setting)
        except app_settings.SettingsError:  # unreadable settings count as no choice: the check is approximate
            return None
        tokenizer = config_folder(Path(str(folder)).expanduser()) / TOKENIZER_FILES[0] if folder else None
        return tokenizer if tokenizer is not None and tokenizer.is_file() else None

    def load_clips(self, config) -> tuple[list[Any], list[Any]]:
        """Every clip checked against its length limits and the model's context (nothing heavy loads)."""
        from alltalk_gui.core.engines.orpheus.data import load_dataset
        from alltalk_gui.core.engines.orpheus.files import load_tokenizer, special_tokens, validate_base_model

        _check_options(config)
        info = validate_base_model(config.base_model_dir)
        tokenizer = load_tokenizer(info.folder)
        return load_dataset(config.dataset_path, tokenizer, special_tokens(info.folder, info.codec, tokenizer),
                            info.codec, info.context, min_seconds=config.min_audio_seconds,
                            max_seconds=config.max_audio_seconds)

    # ----------------------------------------------------------------------------------------- model and loss
    def training_setup(self, config, clips: tuple[list[Any], list[Any]], device) -> TrainingSetup:
        from alltalk_gui.core.engines.orpheus import model as orpheus_model
        from alltalk_gui.core.engines.orpheus.data import ClipSet, batch_size, collate, split_batch
        from alltalk_gui.core.engines.orpheus.files import special_tokens, validate_base_model
        from alltalk_gui.core.engines.orpheus.tuned import write_speakers

        train_clips, eval_clips = clips
        info = validate_base_model(config.base_model_dir)
        special = special_tokens(info.folder, info.codec)
        (train_samples, eval_samples), notes = _encode(config, info, special, train_clips, eval_clips)
        write_speakers(config.run_dir, [c.speaker for c in train_clips + eval_clips])
        lm = orpheus_model.load_model(info, config.engine_options().base_weights, device)
        model = orpheus_model.OrpheusLM(lm, special)
        trainable = self.apply_memory_levers(model, config)
        model.train()
        train_set, eval_set = ClipSet(train_samples), ClipSet(eval_samples)
        pad_collate = partial(collate, pad=special.pad)

        def loss(module, batch, eval_mode: bool = False) -> dict[str, Any]:  # noqa: ARG001 - eval is deterministic
            return orpheus_model.loss(module, batch)  # through the module: tests can wrap it

        return TrainingSetup(
            model=model, train_set=train_set, eval_set=eval_set, lengths=train_set.lengths,
            eval_lengths=eval_set.lengths, collate=pad_collate, loss=loss, batch_size=batch_size, split=split_batch,
            loss_parts=orpheus_model.LOSS_PARTS, parameters=orpheus_model.loaded_parameters(info, lm),
            trainable=trainable, longest_seconds=max(c.seconds for c in train_clips),
            notes=(*((note,) if (note := language_note(self, config.language)) else ()), *_adapter_note(info, config),
                   *notes),
        )

    # ----------------------------------------------------------------------------------------- memory
    def apply_memory_levers(self, model, config) -> int:
        """LoRA on every decoder layer's projections (with it, an untied base's frozen embedding held in host
        memory: :func:`~.model.keep_embedding_on_host`) and activation checkpointing, in place; returns the
        trainable parameter count (``model``: the :class:`~.model.OrpheusLM` training_setup built)."""
        from alltalk_gui.core.engines.orpheus.model import (
            add_lora, keep_embedding_on_host, set_checkpointing, trainable,
        )

        if config.lora_rank:
            add_lora(model.lm, config.lora_rank, config.lora_alpha, config.lora_dropout)
            keep_embedding_on_host(model.lm)
        set_checkpointing(model.lm, config.gradient_checkpointing)
        return trainable(model)

    def estimate_memory(self, config, *, attention_scores: bool = False, parameters: int | None = None):
        """The estimate for Orpheus 3B as a run on ``config``'s base holds it: one tied vocabulary matrix as
        published, two where a LoRA adapter chosen as the base carries ``embed_tokens``/``lm_head`` in full
        (:func:`.files.loaded_shape`) or the model the run built has the untied count (``parameters``, which the
        loop gives). None for another size (the tiny model). ``attention_scores`` is not needed: SDPA keeps no n^2
        scores for backward on either device."""
        from alltalk_gui.core.engines.orpheus.files import loaded_shape
        from alltalk_gui.core.engines.orpheus.memory_estimate import estimate, orpheus_3b_of_size, setting_for

        loaded = loaded_shape(config.base_model_dir) if parameters is None else None
        shape = orpheus_3b_of_size(parameters, loaded is None or loaded.tied)
        return estimate(setting_for(config), shape) if shape is not None else None

    def disk_needs(self, config) -> DiskNeeds | None:
        """From config.json's sizes (no torch): a LoRA checkpoint holds only the adapters (fp32) and their moments;
        a full one every weight as it trains (bf16 or fp32) and the optimizer's moments (8-bit: 2 bytes a weight;
        torch's AdamW keeps two in the weights' own type). An export in the default format is the model in bf16,
        the tokenizer and the codec."""
        from alltalk_gui.core.engines.orpheus.disk_needs import disk_needs

        return disk_needs(config)

    def accelerate_config(self, config, processes: int) -> dict[str, Any] | None:
        """Several processes training the whole model: FSDP (:mod:`.fsdp`), which shards the 3.3 B weights, their
        gradients and AdamW's moments across the cards; LoRA runs fit one card each: accelerate's data parallel."""
        if processes < 2 or config.lora_rank:
            return None
        from alltalk_gui.core.engines.orpheus.fsdp import fsdp_config

        return fsdp_config(processes, config.mixed_precision)

    # ----------------------------------------------------------------------------------------- synthesis
    def load_voice(self, base_model_dir: Path, weights: Path | None, device: str):
        from alltalk_gui.core.engines.orpheus.voice import load_voice_as, voice_weights

        return load_voice_as(base_model_dir, weights, device, voice_weights(device))

    def synthesize(self, voice, text: str, reference: Reference, language: str, settings,
                   before_piece=None) -> Any:
        """Speak ``text`` as the reference's speaker name, sentence by sentence (each take capped by its length)."""
        import numpy as np

        from alltalk_gui.core.engine_api.languages import spoken_pieces
        from alltalk_gui.core.engines.orpheus.synthesis import Sampling, speak

        speaker = reference.text.strip()
        if not speaker:
            known = ", ".join(voice.speakers) or "the dataset's speaker_name"
            raise EngineError(f"Orpheus-TTS speaks as a speaker name the model was trained with ({known}).")
        options: OrpheusGenerationOptions = settings.engine_options(self)
        codec = voice.codec_facts
        most = max(1, int(options.max_seconds * codec.frame_rate)) * codec.codes_per_frame  # whole frames
        sampling = Sampling(options.temperature, options.top_p, options.repetition_penalty, most, settings.seed)
        pause = np.zeros(int(self.output_sample_rate * SENTENCE_PAUSE_S), np.float32)
        limit = max(40, int(options.max_seconds * 12))  # a sentence's characters: about 12 a second
        parts = [speak(voice, speaker, piece, sampling)
                 for piece in spoken_pieces(text, language, limit, before_piece)]
        return np.concatenate([x for part in parts for x in (part, pause)][:-1]) if parts else np.zeros(0, np.float32)

    def reference_suggestion(self, checkpoint) -> str:
        """The first speaker name the checkpoint's run trained with (the project's, for the app's datasets)."""
        from alltalk_gui.core.engines.orpheus.tuned import read_speakers

        names = read_speakers(Path(checkpoint.path).parent.parent) if checkpoint is not None else []
        return names[0] if names else ""

    def voice_prompt(self, project, suggest: bool = False) -> str:
        """The speaker name a run learns: the dataset's ``speaker_name`` (training reads it from there), or, before
        there is a dataset, the one the export will write: the project's name made metadata-safe ("Grandma's
        voice" -> ``Grandma_s_voice``; the project's name itself was shown, which is not what the model learns)."""
        from alltalk_gui.core.dataset.export import speaker_name
        from alltalk_gui.core.dataset.metadata import TRAIN_CSV, MetadataError, read_metadata

        try:
            rows = read_metadata(Path(project.dataset_dir) / TRAIN_CSV)
        except (MetadataError, OSError):  # no dataset yet, or one training will refuse with its own words
            rows = []
        return next((row.speaker_name for row in rows if row.speaker_name), speaker_name(project))

    def save_voice_prompt(self, project, text: str) -> None:
        """The name comes from the dataset: kept as it is, refused when changed (the dataset would not follow)."""
        name = self.voice_prompt(project)
        if " ".join(text.split()) != name:
            raise EngineError(f"{self.title} learns the voice under the dataset's speaker name ('{name}'), which the "
                              "dataset export writes from the project's name.")

    def generation_estimate(self, settings, text: str, reference_seconds: float, reference_text: str
                            ) -> float | None:
        return None  # not measured on a CPU yet (a 3.3 B model speaks at a few codes a second there)

    # ----------------------------------------------------------------------------------------- export
    def export_target(self, out_dir: str | os.PathLike[str], options, project_name: str = "") -> Path:
        from alltalk_gui.core.engines.orpheus.export import export_target

        return export_target(out_dir, options, project_name)

    def export(self, checkpoint, out_dir: str | os.PathLike[str], options, *, project_name: str = "",
               progress: Callable[[str, float], None] | None = None):
        from alltalk_gui.core.engines.orpheus.export import export_checkpoint

        return export_checkpoint(checkpoint, out_dir, options, project_name=project_name, progress=progress)


def _adapter_note(info, config) -> tuple[str, ...]:
    """The run's log says what it starts from when the base chosen was a LoRA adapter."""
    if info.adapter is None:
        return ()
    weights = config.engine_options().base_weights
    how = "merged in bf16, then quantised to 4 bits" if weights == "nf4" else f"merged in {weights}"
    then = "new LoRA adapters train on the merged weights" if config.lora_rank else "the merged weights train"
    return (f"Base: the {info.adapter.describe()}; {how}; {then}.",)


def _check_options(config) -> None:
    """Combinations the options cannot hold, named before any model loads."""
    import importlib.util

    from alltalk_gui.core.training.config import ConfigError

    weights = config.engine_options().base_weights
    if weights == "nf4" and not config.lora_rank:
        raise ConfigError("base_weights=nf4 holds the base model in 4 bits, which cannot be trained in full: set "
                          "lora_rank (the Low profile: 16) or base_weights=bf16.")
    if weights == "nf4" and importlib.util.find_spec("bitsandbytes") is None:
        raise ConfigError("base_weights=nf4 needs the bitsandbytes package (pip install bitsandbytes), which is not "
                          "installed; use base_weights=bf16.")


def _encode(config, info, special, train_clips, eval_clips):
    """Both sets' samples, their SNAC codes from the feature cache (the codec loads only when a clip misses it);
    and notes for the run's log."""
    from alltalk_gui.core.engines.orpheus.codes import ClipCodes, codes_cache
    from alltalk_gui.core.engines.orpheus.data import make_samples

    cache = codes_cache(config, info.codec_dir)
    codes = ClipCodes(cache, info.codec_dir, info.codec)
    samples = make_samples(train_clips, special, codes), make_samples(eval_clips, special, codes)
    frames = sum(info.codec.frames(round(c.seconds * info.codec.sample_rate)) for c in train_clips + eval_clips)
    kept = sum(int(s.input_ids.numel()) - s.scored_from - 2 for part in samples for s in part) // special.codes_per_frame
    where = cache.folder if cache.folder is not None else "nowhere"
    notes = [f"SNAC codes: {cache.computed} clip(s) encoded now, {cache.hits} read from {where}.",
             f"{frames - kept} of {frames} frames repeated the one before and were left out, as Orpheus does.",
             *cache.problems]
    return samples, notes


class ContextCheck:
    """Whether a transcript fits the model's context with the speech it will take (:class:`TextCheck`).

    Llama 3's byte-level tokenizer encodes every character, so only the length can be a problem: the prompt's
    tokens plus the speech of the text at a fast 20 characters a second (82 codes a second) must fit the context.
    With the base folder's ``tokenizer.json`` the count is exact; without it, a text is only refused when empty.
    """

    CHARACTERS_PER_SECOND = 20.0
    max_chars = None   # the context limit is in tokens, checked in problem()

    def __init__(self, vocab_file: str | os.PathLike[str] | None) -> None:
        self.folder = Path(vocab_file).parent if vocab_file else None
        self._ready: tuple[Any, Any, Any, int] | None = None

    def warm_up(self) -> None:
        if self.folder is None or self._ready is not None:
            return
        from alltalk_gui.core.engine_api.engine import BaseModelError
        from alltalk_gui.core.engines.orpheus.codec import read_codec_facts
        from alltalk_gui.core.engines.orpheus.files import context_length, load_tokenizer, read_config, special_tokens

        try:
            codec = read_codec_facts(self.folder / CODEC_DIR)
            tokenizer = load_tokenizer(self.folder)
            self._ready = (tokenizer, special_tokens(self.folder, codec, tokenizer), codec,
                           context_length(read_config(self.folder)))
        except BaseModelError:
            self.folder = None  # not an Orpheus folder: the approximate check

    def problem(self, text: str) -> str | None:
        if not text.strip():
            return "The text is empty."
        self.warm_up()
        if self._ready is None:
            return None
        from alltalk_gui.core.engines.orpheus.tokens import prompt_ids

        tokenizer, special, codec, context = self._ready
        prompt = len(prompt_ids(tokenizer, special, "speaker", text))
        speech = len(text) / self.CHARACTERS_PER_SECOND * codec.tokens_per_second
        if prompt + speech + 2 > context:
            return (f"The text is too long for Orpheus-TTS: its {prompt} tokens and the speech they take do not fit "
                    f"the model's {context}-token context. Split the clip.")
        return None


ENGINE = OrpheusEngine()
