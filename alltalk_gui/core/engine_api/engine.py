"""The engine boundary: what a TTS engine (XTTS v2, F5-TTS, a plug-in) gives the app, and where engines are found.

The neutral packages (audio, project, transcription, transcript, dataset, training, voice, machine), the GUI and
the CLI know no engine by name. They ask :func:`get_engine` for one and talk to it only through :class:`Engine`.
An engine is a package that defines an object with the members of :class:`Engine` and declares it as an entry
point of the group :data:`ENTRY_POINT_GROUP` (``alltalk_gui.engines``); the app's own two, in
``core/engines/<name>/``, are declared in its ``pyproject.toml`` like any plug-in. Adding one means writing that
package; nothing outside it changes.

What an engine gives, in the order the app needs it:

* **base-model files and checks**: :attr:`Engine.base_model_files` (what a base-model folder must hold, for the
  set-up pages) and :meth:`Engine.validate_base_model`, which raises :class:`BaseModelError` naming the first
  file that is missing or does not fit, before anything heavy loads.
* **dataset needs**: :attr:`Engine.sample_rate` (of clips and training audio), :attr:`Engine.max_clip_ms` (the
  longest clip it can train on) and :meth:`Engine.text_checker` (which characters of a transcript it cannot
  encode, per language).
* **the model and its loss for the loop**: :meth:`Engine.training_setup` builds a :class:`TrainingSetup` -
  the module to optimise, the train and eval datasets, the collate function and the loss - for the neutral
  loop in :mod:`alltalk_gui.core.training.loop`, which never sees a model class.
* **memory levers and an estimate**: :meth:`Engine.apply_memory_levers` (LoRA, frozen parts, activation
  checkpointing on the engine's own blocks) and :meth:`Engine.estimate_memory` (peak GiB of a config on the
  real-size model, for the profile picker and ``memory.json``); :meth:`Engine.disk_needs`, the size of one
  checkpoint and one export (the free-space check before a run).
* **synthesis for preview**: :meth:`Engine.load_voice` and :meth:`Engine.synthesize`.
* **export formats**: :attr:`Engine.export_formats` and :meth:`Engine.export`.

Loading an engine costs little: an engine module imports torch and its model code on first use, so the registry
can load every engine to list them (``--help`` included). The neutral packages hold no import of any engine
package (import-linter checks that).
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Protocol, Sequence

from alltalk_gui.core.engine_api.options import EngineOptions

DEFAULT_ENGINE = "xtts"
"""The engine a new project starts with (the user may choose another on the Train page or with ``--engine``)."""

ENTRY_POINT_GROUP = "alltalk_gui.engines"
"""Engines are found as entry points of this group: ``name = "package.module:ENGINE"``. The app's own two are
declared in its ``pyproject.toml``; a plug-in package declares its own in the same group."""

ENGINE_SETTING = "engine"
"""The key in a project's ``settings`` (project.json) that remembers the engine it trains with (Train page, CLI)."""

log = logging.getLogger(__name__)

class EngineError(Exception):
    """An engine cannot do what was asked; the message says why in plain words."""


class BaseModelError(EngineError, ValueError):
    """The base-model folder cannot be used; the message names the file and what is wrong with it."""


class ReferenceKind(str, Enum):
    """What an engine conditions a voice on (:attr:`Engine.reference_kind`): what the Preview page asks for and
    what :class:`Reference` carries."""

    CLIPS = "clips"                      # a few clips of the voice, audio only (XTTS v2)
    CLIP_WITH_WORDS = "clip_with_words"  # one clip and exactly what is said in it (F5-TTS continues the clip)
    SPEAKER = "speaker"                  # the name of a speaker the fine-tune learned
    DESCRIPTION = "description"          # a description of the voice in words

    def __str__(self) -> str:
        return self.value

    @property
    def uses_audio(self) -> bool:
        return self in (ReferenceKind.CLIPS, ReferenceKind.CLIP_WITH_WORDS)


@dataclass(frozen=True)
class Reference:
    """What synthesis speaks from, of the engine's :class:`ReferenceKind`: clips (mono float32 samples at the
    engine's :attr:`Engine.sample_rate`, several clips joined by short pauses), one clip and its words, a speaker
    name, or a description. Build one with the class methods."""

    kind: ReferenceKind
    samples: Any = None              # numpy float32, 1-D: CLIPS and CLIP_WITH_WORDS
    text: str = ""                   # the clip's words, the speaker's name or the description

    @classmethod
    def clips(cls, samples: Any) -> "Reference":
        return cls(ReferenceKind.CLIPS, samples)

    @classmethod
    def clip_with_words(cls, samples: Any, words: str) -> "Reference":
        return cls(ReferenceKind.CLIP_WITH_WORDS, samples, words)

    @classmethod
    def speaker(cls, name: str) -> "Reference":
        return cls(ReferenceKind.SPEAKER, None, name)

    @classmethod
    def description(cls, text: str) -> "Reference":
        return cls(ReferenceKind.DESCRIPTION, None, text)


@dataclass(frozen=True)
class Licence:
    """The licence of an engine's base-model weights, shown before the first download."""

    id: str                          # what app_settings records as accepted
    title: str                       # "Coqui Public Model License"
    url: str
    summary: str                     # a paragraph in plain words: what it allows


class HubDownload:
    """The Engine protocol's licence and download members, for an engine whose ``download`` module has
    ``licence_accepted()``, ``accept_licence()`` and ``download_base_model(folder, progress=...)`` (both engines'
    ``download.py`` do): the engine class names its module as ``download``."""

    download: ModuleType

    def licence_accepted(self) -> bool:
        return self.download.licence_accepted()

    def accept_licence(self) -> None:
        self.download.accept_licence()

    def download_base_model(self, folder: str | os.PathLike[str], progress: Callable[[Any], None] | None = None,
                            *, repo: str | None = None, revision: str | None = None):
        given = {"repo_id": repo, "revision": revision}
        return self.download.download_base_model(folder, progress=progress,
                                                 **{k: v for k, v in given.items() if v})


class ShippedProfiles:
    """The Engine protocol's :meth:`~Engine.profiles_dir` for an engine whose profiles ship in the app's own
    ``resources/profiles/<name>/`` (the built-in engines; a plug-in package keeps them in its own folder)."""

    name: str

    def profiles_dir(self) -> Path:
        from alltalk_gui.core.resources import resource_path

        return resource_path("profiles", self.name)


class TextCheck(Protocol):
    """Which characters of a transcript an engine cannot encode (in one language)."""

    # The longest clip text the engine reads in this language (XTTS v2: its tokenizer's character limit), which
    # clip cutting keeps to; None when only the clip's length limits it (F5-TTS).
    max_chars: int | None

    def problem(self, text: str) -> str | None:
        """A plain-language reason when ``text`` cannot be encoded, else None."""
        ...

    def warm_up(self) -> None:
        """Pay the first-use import cost now (call from a worker thread)."""
        ...


@dataclass
class TrainingSetup:
    """What an engine builds for the neutral training loop.

    ``loss(model, batch, eval_mode)`` returns a dict with ``loss`` (the scalar to back-propagate) and the
    engine's named parts of it (each a scalar tensor); ``batch_size(batch)`` counts the clips in a collated batch
    and ``split(batch, parts)`` cuts one into ``parts`` smaller ones (the out-of-memory retry).

    ``train_set``, ``eval_set`` and ``collate`` go to the DataLoader's worker processes (``num_workers``), which
    Windows (and macOS) start by spawning: they must pickle, so no lambdas, closures or local classes
    (``functools.partial`` of a module-level function does; tests/core/training/test_loader_workers.py checks
    every engine's).
    """

    model: Any                     # torch.nn.Module: the part that trains; accelerate prepares it
    train_set: Any                 # torch Dataset with set_epoch(epoch)
    eval_set: Any
    lengths: list[int]             # samples of each training clip (length-bucketed batches)
    eval_lengths: list[int]
    collate: Callable[[list[Any]], Any]
    loss: Callable[..., dict[str, Any]]
    batch_size: Callable[[Any], int]
    split: Callable[[Any, int], list[Any]]
    loss_parts: tuple[str, ...]      # names of the loss's parts (keys of loss()'s dict; Step.parts and Eval.parts
                                     # report them by these names, in this order); () for a loss of one part
    parameters: int                  # all parameters of the model (trainable or not)
    trainable: int                   # of which train (after the memory levers)
    longest_seconds: float           # the longest training clip, in seconds
    # Called after every optimizer step with the (prepared) model, e.g. to update an EMA of the weights.
    after_step: Callable[[Any], None] | None = None
    # Objects with state_dict()/load_state_dict() that every checkpoint saves and a resume restores beside the
    # model and optimizer (accelerate's register_for_checkpointing), e.g. that EMA.
    checkpointed: tuple[Any, ...] = ()
    # Messages for the run's log once the model is built (e.g. characters added to the vocabulary).
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class DiskNeeds:
    """About how much one training run's files take on disk, in bytes (rather a little more than less): the
    free-space check before a run (CLI and Train page) and before each checkpoint compares these with what is free."""

    checkpoint_bytes: int            # one resumable checkpoint: the weights as saved, the optimizer state, what else
                                     # the engine saves beside them (F5-TTS's EMA copy)
    export_bytes: int                # one exported model folder in the engine's default format


class Engine(Protocol):
    """A TTS engine, as the neutral packages see it. One instance per engine, stateless."""

    name: str                        # registry name (its entry point's), stored in TrainConfig.engine
    aliases: tuple[str, ...]         # other names people type for it ("f5-tts"); configs hold ``name``
    title: str                       # for people: "XTTS v2"
    summary: str                     # what decides for or against it, in a few words (the engine choice shows it)
    sample_rate: int                 # clips, datasets and training audio, in Hz
    output_sample_rate: int          # what synthesis returns, in Hz
    max_clip_ms: int                 # the longest clip the engine trains on
    base_model_files: tuple[str, ...]  # glob patterns; "a|b": either (engine_api.shared_files.has_file)
    voice_files: tuple[str, ...]     # the base-model files synthesis reads
    export_formats: tuple[str, ...]
    export_format_titles: dict[str, str]  # format -> what a person reads ("AllTalk v2 (models/xtts)")
    # format -> the folder under AllTalk's root that AllTalk loads it from ({"alltalk": "models/xtts"}); the formats
    # AllTalk does not load are not in it. An export in such a format goes into <AllTalk root>/<this folder>.
    export_folders: dict[str, str]
    # What ExportOptions.training_files adds to an export, for its check box ("dvae.pth, mel_stats.pth": the base
    # model's files needed to keep training elsewhere); "" when the engine's exports hold all of it.
    export_training_files: str
    # Whether an export may store the weights in 16 bits at the user's choice (ExportOptions.half, the form's "Half
    # precision"); False where the engine's exports always hold them so (Orpheus-TTS: bf16, as its own tools load).
    export_half: bool
    base_model_setting: str          # the app-settings key remembering this engine's base-model folder
    # Where a user may already have its base model, or get one, in a sentence for the set-up pages.
    base_model_hint: str
    download_size: str               # the base model's download, in words ("about 1.4 GB")
    # The Hub repository its download reads by default, which the user may replace (download-base-model --repo);
    # "" when its download cannot come from another repository.
    download_repo: str
    licence: Licence
    languages: tuple[str, ...]       # the language codes it speaks as released (others: see languages_note)
    # (distribution, what it is for) of the packages it runs on, for Help > About's versions and licences.
    packages: tuple[tuple[str, str], ...]
    # Its own training settings: an EngineOptions dataclass (alltalk_gui.core.engine_api.options), held by name in
    # TrainConfig.options, validated by the class, shown by the Train page's Advanced panel.
    train_options: type[EngineOptions]
    # Its own generation settings beside GenerationSettings' common ones (held in GenerationSettings.options); the
    # class's for_base_model(folder) gives a base model's defaults.
    generation_options: type[EngineOptions]
    reference_kind: ReferenceKind    # what synthesis speaks from: clips, a clip and its words, a speaker, a description
    languages_note: dict[str, str]   # language code -> a caveat shown when a project in it picks this engine;
                                     # "*" for every language not listed
    # None: its model code runs in the app's own Python environment. An EngineEnvironment (engine_api/environment.py):
    # its packages conflict with the app's, so training, preview and export run with that environment's interpreter.
    environment: Any

    def profiles_dir(self) -> Path:
        """The folder of its memory profiles (``low.toml``, ``medium.toml``, ``high.toml``: TrainConfig values,
        see :mod:`alltalk_gui.core.training.profiles`) and its measured CPU training speed (``cpu_speed.json``,
        see :mod:`alltalk_gui.core.training.cpu_estimate`).

        Raises:
            FileNotFoundError: the folder is missing (a broken install).
        """
        ...

    def licence_accepted(self) -> bool:
        ...

    def accept_licence(self) -> None:
        """Record that the user read and accepted :attr:`licence` (call only after showing it)."""
        ...

    def download_base_model(self, folder: str | os.PathLike[str], progress: Callable[[Any], None] | None = None,
                            *, repo: str | None = None, revision: str | None = None) -> Any:
        """Download (or finish) the base model into ``folder`` through huggingface_hub and validate it (from
        ``repo`` instead of :attr:`download_repo`, at ``revision``, when given).

        Raises:
            alltalk_gui.core.engine_api.hub_files.LicenceNotAccepted, DownloadError, BaseModelError
        """
        ...

    def make_test_model(self, folder: str | os.PathLike[str], seed: int = 0) -> Path:
        """Write a tiny random base model of the real architecture into ``folder`` (for tests and smoke runs; not a
        voice) and return the folder."""
        ...

    def validate_base_model(self, folder: str | os.PathLike[str]) -> Any:
        """Check a base-model folder; returns facts with at least ``parameters`` (trainable model size).

        Raises:
            BaseModelError: naming the first file that is missing or does not fit.
        """
        ...

    def describe_base_model(self, folder: str | os.PathLike[str]) -> str:
        """Check a base-model folder (as :meth:`validate_base_model`) and say what it holds in a sentence, for the
        first-run check ("GPT with 30 layers, width 1024, 441.0 M parameters ...").

        Raises:
            BaseModelError: naming the first file that is missing or does not fit.
        """
        ...

    def text_checker(self, language: str, vocab_file: str | os.PathLike[str] | None = None) -> TextCheck:
        """The transcript check for ``language``; exact with the base model's vocabulary file, else approximate."""
        ...

    def base_model_vocab(self) -> Path | None:
        """The vocabulary file of the base model chosen in the app settings (what :meth:`text_checker` takes for
        an exact check); None when none is chosen, it is gone, or the settings cannot be read."""
        ...

    def load_clips(self, config: Any) -> tuple[list[Any], list[Any]]:
        """The dataset's train and eval clips for ``config``, every clip checked (all problems listed at once).

        Raises:
            alltalk_gui.core.training.data.DatasetError
        """
        ...

    def training_setup(self, config: Any, clips: tuple[list[Any], list[Any]], device: Any) -> TrainingSetup:
        """Load the base model, switch on ``config``'s memory levers and build the data for the loop."""
        ...

    def apply_memory_levers(self, model: Any, config: Any) -> int:
        """LoRA / frozen parts / activation checkpointing in place; returns the trainable parameter count."""
        ...

    def estimate_memory(self, config: Any, *, attention_scores: bool = False) -> Any:
        """Peak-memory estimate of ``config`` on the real-size model (``total_gib`` and its parts); None where the
        engine has no figures for the base model's size (the tests' tiny model, a size it was never measured on):
        Auto then picks without an estimate and the run records none."""
        ...

    def model_size(self, config: Any) -> str | None:
        """The name of the published size ``config``'s base model is (Parler-TTS: "mini" or "large"), for a
        profile's target of that size (``size_targets`` in its file); None: the size the profiles are written for.
        Optional: an engine without it (one size, or a plugin written before it) is taken as None."""
        ...

    def accelerate_config(self, config: Any, processes: int) -> dict[str, Any] | None:
        """The ``accelerate launch`` config a run on ``processes`` processes needs (e.g. FSDP for a model that does
        not fit one card), written into the run folder when the user gave none; None for accelerate's default
        (data parallel)."""
        ...

    def disk_needs(self, config: Any) -> DiskNeeds | None:
        """How big one checkpoint of a run of ``config`` and one export will be, judged from the file sizes in
        ``config.base_model_dir`` without loading anything (the Train page asks on its GUI thread); None when that
        folder does not hold the engine's base model."""
        ...

    def load_voice(self, base_model_dir: Path, weights: Path | None, device: str) -> Any:
        """An inference model: the base model, or with a checkpoint's fine-tuned weights.

        Raises:
            BaseModelError: the folder or weights cannot be loaded.
        """
        ...

    def synthesize(self, voice: Any, text: str, reference: Reference, language: str, settings: Any,
                   before_piece: Callable[[int, int], None] | None = None) -> Any:
        """Speak ``text`` in the reference's voice; mono float32 numpy at :attr:`output_sample_rate`. ``settings``
        is a ``GenerationSettings``: ``seed``, and the engine's own options (``settings.engine_options(self)``).
        ``before_piece(done, total)``: called before each piece of a long text
        (:func:`~alltalk_gui.core.engine_api.languages.spoken_pieces`); what it raises stops the synthesis there.
        Optional: an engine whose ``synthesize`` does not take it is called without it (its takes stop before
        or after the whole text).

        Raises:
            EngineError: a language or characters the model does not know.
        """
        ...

    def export_target(self, out_dir: str | os.PathLike[str], options: Any, project_name: str = "") -> Path:
        """The folder :meth:`export` will write for ``options`` in ``out_dir``, before it runs (the Preview page shows
        it): ``out_dir/<name>``, the name made one the format's loader accepts.

        Raises:
            alltalk_gui.core.voice.export.ExportError: no usable name.
        """
        ...

    def reference_suggestion(self, checkpoint: Any) -> str:
        """What a preview of ``checkpoint`` speaks from when the user has not said: the speaker name it was trained
        with (SPEAKER) or a description of the voice (DESCRIPTION); "" for the clip kinds (the dataset's cleanest
        clips are used)."""
        ...

    def voice_prompt(self, project: Any, suggest: bool = False) -> str:
        """The words a SPEAKER or DESCRIPTION engine's fine-tune learns the voice under, as ``project`` (a
        VoiceProject) keeps them, or else (and with ``suggest`` always) a suggestion made from the project (its
        name, its recordings): may take seconds, so front ends call it in a worker. "" for the clip kinds."""
        ...

    def save_voice_prompt(self, project: Any, text: str) -> None:
        """Keep ``text`` as ``project``'s voice prompt (in its settings; the caller holds the project and saves it).

        Raises:
            EngineError: the text cannot be used (empty); nothing is changed.
        """
        ...

    def generation_estimate(self, settings: Any, text: str, reference_seconds: float, reference_text: str
                            ) -> float | None:
        """About how many seconds one take of ``text`` needs on a small CPU (2 cores), before anything is loaded,
        so the Preview page can say what a setting costs (``reference_seconds``: the reference clips' length, 0 for
        the kinds without audio; ``reference_text``: as in :class:`Reference`); None when the engine has no
        measurement."""
        ...

    def export(self, checkpoint: Any, out_dir: str | os.PathLike[str], options: Any, *, project_name: str = "",
               progress: Callable[[str, float], None] | None = None) -> Any:
        """Write a checkpoint as a model folder in ``options.format`` (one of :attr:`export_formats`)."""
        ...


_registry: dict[str, Engine] | None = None
_skipped: dict[str, str] = {}


def engine_names() -> Sequence[str]:
    """The names of the engines that loaded: the default engine first, then the others by name."""
    return tuple(_engines())


def skipped_engines() -> dict[str, str]:
    """Entry points of :data:`ENTRY_POINT_GROUP` that did not load: name -> why (also in the app's log)."""
    _engines()
    return dict(_skipped)


def engine_name(name: str) -> str:
    """The registry name of ``name`` (an alias such as ``f5-tts`` included: :attr:`Engine.aliases`).

    Raises:
        EngineError: no engine has that name.
    """
    engines = _engines()
    if name in engines:
        return name
    for engine in engines.values():
        if name in engine.aliases:
            return engine.name
    known = ", ".join(engines) or "none (reinstall alltalk-gui: its engines are declared as entry points)"
    why = f" ({_skipped[name]})" if name in _skipped else ""
    raise EngineError(f"Unknown engine '{name}'{why}; the engines are {known}.")


def get_engine(name: str) -> Engine:
    """The engine registered as ``name`` (or one of its aliases).

    Raises:
        EngineError: no engine has that name.
    """
    return _engines()[engine_name(name)]


def reload_engines() -> None:
    """Look for the engines again (after a plug-in was installed, or a test changed ``sys.path``)."""
    global _registry
    importlib.invalidate_caches()
    _registry = None
    _skipped.clear()


def _engines() -> dict[str, Engine]:
    """Every engine of :data:`ENTRY_POINT_GROUP` that loads and has the interface, loaded once.

    A plug-in that cannot be imported, whose object lacks a member of :class:`Engine`, whose name is not its
    entry point's, or whose name another engine already took, is left out with the reason logged: one broken
    package must not stop the app, nor the engines that work.
    """
    global _registry
    if _registry is None:
        found: dict[str, Engine] = {}
        for point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            problem, engine = _load(point, found)
            if problem:
                _skipped[point.name] = problem
                log.warning("The engine plug-in '%s' (%s) is left out: %s", point.name, point.value, problem)
            else:
                found[point.name] = engine
        _registry = dict(sorted(found.items(), key=lambda item: (item[0] != DEFAULT_ENGINE, item[0])))
    return _registry


def _load(point: importlib.metadata.EntryPoint, found: dict[str, Engine]) -> tuple[str, Any]:
    """(why ``point`` cannot be used or "", its engine)."""
    if point.name in found:
        return f"another package already registered an engine named '{point.name}'", None
    try:
        engine = point.load()
    except Exception as exc:  # any error of a third-party package: it is reported, not raised
        return f"it cannot be loaded: {type(exc).__name__}: {exc}", None
    missing = [member for member in interface_members() if not hasattr(engine, member)]
    if missing:
        return f"it lacks {', '.join(missing)} of the engine interface", None
    if engine.name != point.name:
        return f"its engine calls itself '{engine.name}'", None
    return "", engine


# Members of :class:`Engine` an engine may leave out (the callers say what they take instead): a plug-in written
# before they were added still loads.
OPTIONAL_MEMBERS = ("model_size",)


def interface_members() -> list[str]:
    """The attributes and methods an engine must have (those of :class:`Engine` but :data:`OPTIONAL_MEMBERS`)."""
    methods = [n for n, v in vars(Engine).items() if not n.startswith("_") and callable(v)]
    return [m for m in (*Engine.__annotations__, *methods) if m not in OPTIONAL_MEMBERS]


def language_note(engine: Engine, language: str) -> str:
    """The engine's caveat for a project in ``language`` ("" when it speaks the language as it is)."""
    notes = engine.languages_note
    return notes.get(language, notes.get("*", ""))
