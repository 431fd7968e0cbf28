"""F5-TTS v1 behind the engine boundary (:class:`alltalk_gui.core.engine_api.engine.Engine`): ``ENGINE``.

Each method hands over to the module that knows the part: :mod:`.files` (base folder and its checks),
:mod:`.download`, :mod:`.data` (clips, batches), :mod:`.text` (tokens, the vocabulary check and its extension),
:mod:`.model` (CFM + DiT, the flow-matching loss, LoRA, EMA, checkpointing), :mod:`.memory_estimate`,
:mod:`.tuned` (a checkpoint's model), :mod:`.synthesis` and :mod:`.export`. torch and f5-tts are imported on
first use, so importing this module (which :func:`~alltalk_gui.core.engine_api.engine.get_engine` does) is cheap.

What differs from XTTS v2, as the app sees it: clips of 1-30 s at 24 kHz; one loss (no named parts); its own
options (:mod:`.options`): the optional EMA (``ema_decay``) and vocabulary extension (``add_missing_characters``),
and for synthesis the ``steps`` of its ODE sampler (NFE); synthesis needs the reference clip's exact transcript
(a clip-with-words reference); export formats are AllTalk v2's ``models/f5tts/<name>/`` and a plain F5 folder.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from alltalk_gui.core.engine_api.engine import (
    DiskNeeds, EngineError, HubDownload, Licence, Reference, ReferenceKind, ShippedProfiles, TrainingSetup,
    language_note,
)
from alltalk_gui.core.engines.f5 import download
from alltalk_gui.core.engines.f5.files import BASE_MODEL_SETTING, HOP_LENGTH, SAMPLE_RATE, VOCAB_FILE, VOCOS_DIR, VOCOS_FILES
from alltalk_gui.core.engines.f5.options import F5GenerationOptions, F5TrainOptions

MAX_CLIP_MS = 30_000          # F5's own dataset keeps clips up to 30 s
EVAL_SEED = 1234              # eval draws the same times, noise and masks every time: comparable across epochs
EVAL_DRAWS = 4                # ... averaged over this many draws per batch, so one unlucky draw does not decide
MAX_REFERENCE_SECONDS = 20.0  # F5 infills after the reference; f5-tts itself cuts references to about 12 s
SENTENCE_PAUSE_S = 0.2
LANGUAGES_NOTE = ("F5-TTS v1 Base was trained on English and Chinese only: a few minutes of another language "
                  "will not teach it that language well (it reads the letters it knows, with an English or "
                  "Chinese accent). XTTS v2 speaks this language.")


@dataclass
class F5Voice:
    """A loaded F5 model and its vocoder, for synthesis."""

    cfm: Any
    vocoder: Any
    vocab: list[str]


class F5Engine(HubDownload, ShippedProfiles):
    """F5-TTS v1 Base (SWivid/F5-TTS): fine-tunes the DiT of CFM; the Vocos vocoder stays as it is."""

    name = "f5"
    aliases = ("f5-tts",)
    title = "F5-TTS v1"
    summary = "English and Chinese · needs the reference clip's exact words to speak · CC BY-NC 4.0 (non-commercial)"
    sample_rate = SAMPLE_RATE
    output_sample_rate = SAMPLE_RATE  # Vocos speaks at the mel's rate
    max_clip_ms = MAX_CLIP_MS
    base_model_files = ("model_*.safetensors|model_*.pt", VOCAB_FILE, *(f"{VOCOS_DIR}/{n}" for n in VOCOS_FILES))
    voice_files = (VOCAB_FILE, *(f"{VOCOS_DIR}/{n}" for n in VOCOS_FILES))
    export_formats = ("alltalk", "f5")
    export_format_titles = {"alltalk": "AllTalk v2 (models/f5tts/<name>)", "f5": "F5-TTS model folder"}
    export_folders = {"alltalk": "models/f5tts"}
    export_training_files = ""  # an F5 export is the whole model (weights, vocabulary, vocoder)
    export_half = True
    base_model_setting = BASE_MODEL_SETTING
    base_model_hint = (f"a download of https://huggingface.co/{download.MODEL_REPO} (F5TTS_v1_Base) with the "
                       f"{download.VOCODER_REPO} vocoder in vocos/, or an AllTalk install's models/f5tts/<model>")
    download_repo = ""  # it reads two repositories, the model's and the vocoder's
    download_size = "about 1.4 GB"
    download = download  # licence and Hub download (HubDownload)
    licence = Licence(download.LICENCE_ID, "Creative Commons Attribution-NonCommercial 4.0", download.LICENCE_URL,
                      download.LICENCE_SUMMARY)
    train_options = F5TrainOptions
    generation_options = F5GenerationOptions
    reference_kind = ReferenceKind.CLIP_WITH_WORDS  # F5 infills after the clip: it needs its exact words
    languages = ("en", "zh-cn")
    languages_note = {"en": "", "zh-cn": "", "*": LANGUAGES_NOTE}
    packages = (("f5-tts", "F5-TTS model code"), ("vocos", "F5-TTS's vocoder"))
    environment = None  # f5-tts runs in the app's own environment (installed without its dependencies)

    # ----------------------------------------------------------------------------------------- base model
    def validate_base_model(self, folder: str | os.PathLike[str]):
        from alltalk_gui.core.engines.f5.files import validate_base_model

        return validate_base_model(folder)

    def describe_base_model(self, folder: str | os.PathLike[str]) -> str:
        info = self.validate_base_model(folder)
        arch = info.arch
        return (f"DiT with {arch.get('depth')} layers, width {arch.get('dim')}, {info.parameters / 1e6:,.1f} M "
                f"parameters; {len(info.vocab)} tokens in its vocabulary; weights from {info.weights.name}.")

    def make_test_model(self, folder: str | os.PathLike[str], seed: int = 0) -> Path:
        from alltalk_gui.core.engines.f5.tiny_model import build_tiny_f5

        return build_tiny_f5(folder, seed=seed)

    # ----------------------------------------------------------------------------------------- dataset needs
    def text_checker(self, language: str, vocab_file: str | os.PathLike[str] | None = None):
        return VocabularyCheck(vocab_file)

    def base_model_vocab(self) -> Path | None:
        from alltalk_gui.core import app_settings

        try:
            folder = app_settings.get(self.base_model_setting)
        except app_settings.SettingsError:  # unreadable settings count as no choice: the check is approximate
            return None
        vocab = Path(str(folder)).expanduser() / VOCAB_FILE if folder else None
        return vocab if vocab is not None and vocab.is_file() else None

    def load_clips(self, config) -> tuple[list[Any], list[Any]]:
        from alltalk_gui.core.engines.f5.data import load_dataset
        from alltalk_gui.core.engines.f5.files import read_vocab

        return load_dataset(
            config.dataset_path, read_vocab(Path(config.base_model_dir) / VOCAB_FILE),
            min_seconds=config.min_audio_seconds, max_seconds=config.max_audio_seconds,
            add_missing=config.engine_options().add_missing_characters)

    # ----------------------------------------------------------------------------------------- model and loss
    def training_setup(self, config, clips: tuple[list[Any], list[Any]], device) -> TrainingSetup:
        from alltalk_gui.core.engines.f5 import model as f5_model
        from alltalk_gui.core.engines.f5.data import ClipSet, batch_size, collate, split_batch
        from alltalk_gui.core.engines.f5.mel_cache import ClipMels

        train_clips, eval_clips = clips
        cfm, info = f5_model.load_f5(config.base_model_dir)
        vocab, notes = self._vocabulary(cfm, info.vocab, config, train_clips + eval_clips)
        trainable = self.apply_memory_levers(cfm, config, grown=len(vocab) > len(info.vocab))
        cfm.train()
        ema = None
        decay = config.engine_options().ema_decay
        if decay:
            ema = f5_model.make_ema(cfm, f5_model.EmaOptions(enabled=True, decay=decay))
            ema.model.to(device)  # updated every step: it lives where the model trains
        # The mels (F5's frozen front end) are computed once per clip and cached beside the dataset, not again by
        # the loader every epoch.
        mels = ClipMels(config)
        train_set = ClipSet(train_clips, vocab, mels.of(train_clips))
        eval_set = ClipSet(eval_clips, vocab, mels.of(eval_clips))
        notes.append(mels.note())

        def loss(model, batch, eval_mode: bool = False) -> dict[str, Any]:
            # Looked up at each call, through the module, so tests can wrap it (out-of-memory injection).
            if not eval_mode:
                return {"loss": f5_model.loss(model, batch)}
            return {"loss": _seeded_mean(lambda: f5_model.loss(model, batch), device)}

        return TrainingSetup(
            model=cfm, train_set=train_set, eval_set=eval_set,
            lengths=[c.frames for c in train_clips], eval_lengths=[c.frames for c in eval_clips],
            collate=collate, loss=loss, batch_size=batch_size, split=split_batch, loss_parts=(),
            parameters=sum(p.numel() for p in cfm.parameters()), trainable=trainable,
            longest_seconds=max(c.frames for c in train_clips) * HOP_LENGTH / SAMPLE_RATE,
            after_step=ema.update if ema is not None else None,
            checkpointed=(ema,) if ema is not None else (), notes=tuple(notes),
        )

    def _vocabulary(self, cfm, base_vocab: list[str], config, clips: list[Any]) -> tuple[list[str], list[str]]:
        """The vocabulary the run trains with, grown by the transcripts' missing tokens when the user agreed;
        written to the run folder (preview and export rebuild the model from it). A resumed run reads it back,
        so its embedding rows are the ones it saved."""
        from alltalk_gui.core.engines.f5.files import write_vocab
        from alltalk_gui.core.engines.f5.text import extend_vocabulary, missing_tokens
        from alltalk_gui.core.engines.f5.tuned import RUN_VOCAB, run_vocab

        notes = [note] if (note := language_note(self, config.language)) else []
        vocab = run_vocab(config.run_dir, base_vocab)
        if len(vocab) == len(base_vocab):  # a new run: grow by what the transcripts need, if allowed
            new = [m.token for m in missing_tokens([c.text for c in clips], base_vocab)]
            vocab = base_vocab + (new if config.engine_options().add_missing_characters else [])
        added = vocab[len(base_vocab):]
        if added:
            extend_vocabulary(cfm, base_vocab, added)
            write_vocab(config.run_dir / RUN_VOCAB, vocab)
            shown = ", ".join(added[:20]) + (f" and {len(added) - 20} more" if len(added) > 20 else "")
            notes.append(f"Added {len(added)} character(s) to the F5-TTS vocabulary: {shown}. The model learns "
                         "them from these clips alone.")
        return vocab, notes

    # ----------------------------------------------------------------------------------------- memory
    def apply_memory_levers(self, cfm, config, grown: bool = False) -> int:
        """LoRA on the DiT blocks and activation checkpointing, in place; returns the trainable parameter count.
        ``grown``: the vocabulary was extended, so the text embedding trains beside the adapters (its new rows
        are random)."""
        from alltalk_gui.core.engines.f5.model import TEXT_EMBEDDING, add_lora, set_checkpointing

        if config.lora_rank:
            add_lora(cfm, config.lora_rank, config.lora_alpha, config.lora_dropout,
                     also_train=(TEXT_EMBEDDING,) if grown else ())
        set_checkpointing(cfm, config.gradient_checkpointing)
        return sum(p.numel() for p in cfm.parameters() if p.requires_grad)

    def accelerate_config(self, config, processes: int) -> None:
        return None  # the DiT (337 M) trains data-parallel: accelerate's default

    def estimate_memory(self, config, *, attention_scores: bool = False, parameters: int | None = None):
        """The estimate for F5 v1 Base (grown vocabularies included); None for another size (the tiny model).
        ``attention_scores`` asks for the CPU's resident memory (the DiT's attention keeps no n^2 scores on either
        device; the CPU estimate counts the process itself instead of the GPU allocator's reserve). ``parameters``
        (the run's model) includes LoRA's adapters, which the estimate counts itself: 5.0 M at rank 16, 1.5 % of
        the base, so a Low run without this got no estimate (the card rehearsal's Low rows, 2026-11-27)."""
        from alltalk_gui.core.engines.f5.memory_estimate import (V1_BASE_PARAMETERS, F5Setting, estimate,
                                                                 lora_parameters)

        if parameters is not None and config.lora_rank:
            parameters -= lora_parameters(config.lora_rank)
        if parameters is not None and abs(parameters - V1_BASE_PARAMETERS) > 0.01 * V1_BASE_PARAMETERS:
            return None
        return estimate(F5Setting(
            batch_size=config.batch_size, max_clip_seconds=config.max_audio_seconds,
            mixed_precision=config.mixed_precision, gradient_checkpointing=config.gradient_checkpointing,
            optimizer="adamw8bit" if "8bit" in config.optimizer else "adamw", lora_rank=config.lora_rank,
            ema=bool(config.engine_options().ema_decay), grad_accum_steps=config.grad_accum_steps, cpu=attention_scores),
            parameters=parameters or V1_BASE_PARAMETERS)

    def disk_needs(self, config) -> DiskNeeds | None:
        """A checkpoint holds the CFM's fp32 weights (the size of the base model_*.safetensors, which are F5's EMA
        weights in fp32), AdamW's moments per trainable parameter (all of them, or the LoRA adapters' share) and,
        with ``ema_decay``, one more fp32 copy; an export writes the weights (half with --half), the vocabulary and
        the vocoder."""
        from alltalk_gui.core.engines.f5.memory_estimate import V1_BASE_PARAMETERS, lora_parameters

        folder = Path(config.base_model_dir)
        weights = max((p.stat().st_size for p in folder.glob("model_*.safetensors") if p.is_file()), default=0)
        if not weights:
            return None
        moments = 2 if "8bit" in config.optimizer else 8  # bytes per trainable parameter, against 4 per weight
        share = min(1.0, lora_parameters(config.lora_rank) / V1_BASE_PARAMETERS) if config.lora_rank else 1.0
        others = sum(p.stat().st_size for p in [folder / VOCAB_FILE, *(folder / VOCOS_DIR / n for n in VOCOS_FILES)]
                     if p.is_file())
        copies = config.engine_options().extra_weight_copies()  # the EMA, when kept
        return DiskNeeds(checkpoint_bytes=int(weights * (1 + share * moments / 4 + copies)) + (1 << 20),
                         export_bytes=weights + others)

    # ----------------------------------------------------------------------------------------- synthesis
    def load_voice(self, base_model_dir: Path, weights: Path | None, device: str) -> F5Voice:
        from alltalk_gui.core.engines.f5.synthesis import load_vocoder
        from alltalk_gui.core.engines.f5.tuned import tuned_cfm

        model = tuned_cfm(base_model_dir, weights.parent if weights is not None else None)
        try:
            vocoder = load_vocoder(Path(base_model_dir) / VOCOS_DIR, device)
        except (OSError, RuntimeError, ValueError, KeyError) as exc:
            from alltalk_gui.core.engine_api.engine import BaseModelError

            raise BaseModelError(f"The Vocos vocoder in {Path(base_model_dir) / VOCOS_DIR} cannot be loaded: "
                                 f"{exc}") from exc
        return F5Voice(model.cfm.to(device), vocoder, model.vocab)

    def synthesize(self, voice: F5Voice, text: str, reference: Reference, language: str, settings,
                   before_piece=None) -> Any:
        """Speak ``text`` after the reference clip (its transcript must be exact); long text sentence by sentence,
        each piece at most as long as f5-tts's own chunking allows for the reference."""
        import numpy as np
        import torch

        from alltalk_gui.core.engines.f5.synthesis import synthesize
        from alltalk_gui.core.engines.f5.text import missing_tokens
        from alltalk_gui.core.engine_api.languages import spoken_pieces

        if not reference.text.strip():
            raise EngineError("F5-TTS needs the exact words of the reference clip: pick a clip of the dataset, or "
                              "give the clip's transcript.")
        seconds = len(reference.samples) / SAMPLE_RATE
        if seconds > MAX_REFERENCE_SECONDS:
            raise EngineError(f"The reference clip is {seconds:.0f} s long; F5-TTS takes at most "
                              f"{MAX_REFERENCE_SECONDS:g} s (a clean clip of 4-10 s works best).")
        missing = missing_tokens([text], voice.vocab)
        if missing:
            raise EngineError("The model's vocabulary does not know " + ", ".join(f"'{m.token}'" for m in missing)
                              + "; spell them out or remove them.")
        # f5-tts's chunk size: as many bytes as the reference speaks in the time left to a 22 s sequence.
        options: F5GenerationOptions = settings.engine_options(self)
        limit = max(40, int(len(reference.text.encode("utf-8")) / seconds * (22 - seconds) * options.speed))
        audio = torch.from_numpy(np.ascontiguousarray(reference.samples, dtype=np.float32))
        pause = np.zeros(int(self.output_sample_rate * SENTENCE_PAUSE_S), np.float32)
        parts = [synthesize(voice.cfm, voice.vocoder, audio, reference.text, piece, nfe=options.steps,
                            seed=settings.seed, speed=options.speed).audio.reshape(-1).astype(np.float32)
                 for piece in spoken_pieces(text, language, limit, before_piece)]
        return np.concatenate([x for part in parts for x in (part, pause)][:-1]) if parts else np.zeros(0, np.float32)

    def voice_prompt(self, project, suggest: bool = False) -> str:
        return ""  # F5 continues a clip: nothing to learn the voice under

    def save_voice_prompt(self, project, text: str) -> None:
        return None

    def reference_suggestion(self, checkpoint) -> str:
        return ""  # the dataset's cleanest clip, with its transcript

    def generation_estimate(self, settings, text: str, reference_seconds: float, reference_text: str
                            ) -> float | None:
        """CPU seconds for one take (:func:`.synthesis.cpu_seconds_estimate` from the measured cost of one pass),
        the new speech's length guessed from the reference's speaking rate as F5-TTS guesses it."""
        from alltalk_gui.core.engines.f5.synthesis import CPU_SECONDS_PER_FRAME_PASS, cpu_seconds_estimate, \
            estimate_frames

        if reference_seconds <= 0 or not reference_text.strip() or not text.strip():
            return None
        options: F5GenerationOptions = settings.engine_options(self)
        frames_per_second = SAMPLE_RATE / HOP_LENGTH
        reference_frames = int(reference_seconds * frames_per_second)
        new_frames = estimate_frames(reference_frames, reference_text, text, options.speed) - reference_frames
        return cpu_seconds_estimate(CPU_SECONDS_PER_FRAME_PASS, reference_seconds, new_frames / frames_per_second,
                                    options.steps)

    # ----------------------------------------------------------------------------------------- export
    def export_target(self, out_dir: str | os.PathLike[str], options, project_name: str = "") -> Path:
        from alltalk_gui.core.engines.f5.export import export_target

        return export_target(out_dir, options, project_name)

    def export(self, checkpoint, out_dir: str | os.PathLike[str], options, *, project_name: str = "",
               progress: Callable[[str, float], None] | None = None):
        from alltalk_gui.core.engines.f5.export import export_checkpoint

        return export_checkpoint(checkpoint, out_dir, options, project_name=project_name, progress=progress)


class VocabularyCheck:
    """Which tokens of a transcript F5's vocabulary lacks (:class:`~alltalk_gui.core.engine_api.engine.TextCheck`).

    With the base model's ``vocab.txt`` the check is exact; without one it only finds text that tokenizes to
    nothing (F5 reads characters, so nearly everything is encodable somehow)."""

    max_chars = None  # F5 reads any length of text; the clip's 30 s limit is what bounds it

    def __init__(self, vocab_file: str | os.PathLike[str] | None) -> None:
        self.vocab_file = vocab_file
        self._vocab: list[str] | None = None

    def warm_up(self) -> None:
        from alltalk_gui.core.engines.f5.text import tokenize

        tokenize("warm up")  # imports f5-tts's tokenizer helpers (pypinyin, rjieba)
        if self.vocab_file is not None and self._vocab is None:
            from alltalk_gui.core.engines.f5.files import read_vocab

            self._vocab = read_vocab(self.vocab_file)

    def problem(self, text: str) -> str | None:
        from alltalk_gui.core.engines.f5.text import missing_tokens, tokenize

        if not tokenize(text):
            return "The text is empty for F5-TTS."
        self.warm_up()
        if self._vocab is None:
            return None
        missing = missing_tokens([text], self._vocab)
        if not missing:
            return None
        return ("F5-TTS's vocabulary lacks " + ", ".join(f"'{m.token}'" for m in missing[:8])
                + " (read as a space unless added to the vocabulary).")


def _seeded_mean(compute: Callable[[], Any], device) -> Any:
    """The mean of ``compute()`` over :data:`EVAL_DRAWS` fixed draws of torch's and Python's generators, which are
    left as they were (eval must not change what training draws next)."""
    import random

    import torch

    devices = [device] if getattr(device, "type", str(device)) == "cuda" else []
    python_state = random.getstate()
    try:
        with torch.random.fork_rng(devices=devices):
            values = []
            for draw in range(EVAL_DRAWS):
                torch.manual_seed(EVAL_SEED + draw)
                random.seed(EVAL_SEED + draw)
                values.append(compute())
            return torch.stack(values).mean()
    finally:
        random.setstate(python_state)


ENGINE = F5Engine()
