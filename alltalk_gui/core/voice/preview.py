"""Preview: hear the new voice, and the base model saying the same sentence with the same references (A/B).

:class:`PreviewEngine` keeps the loaded models (the base model and one fine-tuned checkpoint) so that a second
sentence does not pay for loading again; it is meant for one worker thread. :func:`generate_preview` writes
each result into the project's ``previews/`` as a wav plus a JSON file with everything needed to reproduce it
(text, language, checkpoint, references, generation settings, seed) and, when a Whisper model is given, the
word error rate of what Whisper heard (:mod:`alltalk_gui.core.transcription.wer`). :func:`generate_ab` makes the pair with
the same seed, so the difference you hear is the fine-tuning, not the dice. :func:`checkpoint_preview` is the
hook for "a preview sentence at each checkpoint" during training.

What speaks a take is a :class:`Voice`: the base model, one of the project's checkpoints, or any model folder of
the project's engine (a fine-tune made with another tool, or an export of this app), which the engine checks first
(:func:`check_model_folder`; another engine's model is named as such) and which is only read.
:func:`generate_take` speaks with one, :func:`generate_pair` with any two different ones (same sentence, references
and seed; both kept loaded while the pair is made): the CLI's ``preview --model/--compare-model/--compare-checkpoint``
and the Preview page both use them.

Generation settings are the seed every engine reads and the engine's own options by name
(:class:`GenerationSettings`): the engine declares them (``Engine.generation_options``) and gives a base model's
defaults (``for_base_model``, e.g. a sampling temperature from the model's own config), which is plain JSON: no
torch, so the GUI can fill its panel before any model is loaded.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from alltalk_gui.core import atomic, safe_paths
from alltalk_gui.core.training.checkpoints import CheckpointInfo, read_checkpoint
from alltalk_gui.core.dataclass_keys import unknown_keys
from alltalk_gui.core.engine_api.engine import (
    BaseModelError, EngineError, Reference, ReferenceKind, get_engine,
)
from alltalk_gui.core.engine_api.options import OptionError, declared
from alltalk_gui.core.resources import resource_path

CHECKPOINT_PREVIEW_MIN_GPU_GIB = 16.0  # below this, previews during training start switched off
BASE_LABEL = "base"
TUNED_LABEL = "fine-tuned"
MODEL_LABEL = "model"   # a model folder that is no run of the project (another tool's fine-tune, an export)
MAX_LOADED = 2          # models a PreviewEngine keeps: the two sides of an A/B (about 2 GB each for XTTS)

ProgressCallback = Callable[[str, float], None]


class PreviewError(Exception):
    """A preview cannot be made; the message says why (empty text, unknown language, bad setting...)."""


@dataclass(frozen=True)
class GenerationSettings:
    """What synthesis samples with: the seed, which every engine reads, and the engine's own options by name
    (``options``: declared, typed and validated by its ``Engine.generation_options``; missing ones default)."""

    seed: int = 0                      # the same seed gives the same sampling: A/B compares like with like
    options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def for_engine(cls, engine: Any, base_model_dir: str | os.PathLike[str] | None = None) -> "GenerationSettings":
        """``engine``'s defaults for the base model in ``base_model_dir`` (its own sampling defaults, when the
        engine reads them from the model)."""
        return cls(options=engine.generation_options.for_base_model(base_model_dir).to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GenerationSettings":
        """Settings as a preview's JSON holds them; one saved before engines owned their settings (every field
        side by side) keeps its other fields as options.

        Raises:
            PreviewError: not an object, or unknown keys.
        """
        if not isinstance(data, dict):
            raise PreviewError("Generation settings must be a JSON object.")
        if "options" not in data:
            data = {"seed": data.get("seed", 0), "options": {k: v for k, v in data.items() if k != "seed"}}
        unknown = unknown_keys(cls, data)
        if unknown:
            raise PreviewError(f"Unknown generation setting(s): {', '.join(unknown)}.")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def engine_options(self, engine: Any) -> Any:
        """``options`` as ``engine``'s own dataclass.

        Raises:
            PreviewError: an option the engine does not have, or a value of the wrong type.
        """
        try:
            return engine.generation_options.from_dict(self.options)
        except OptionError as exc:
            raise PreviewError(f"{engine.title}: {exc}") from None

    def with_values(self, values: dict[str, Any]) -> "GenerationSettings":
        """A copy with ``values`` set by name (``seed``, or one of the engine's options)."""
        return replace(self, seed=values.get("seed", self.seed),
                       options={**self.options, **{k: v for k, v in values.items() if k != "seed"}})

    def validate(self, engine: Any) -> None:
        """Raises PreviewError naming the setting that ``engine`` does not have or that is out of range."""
        if not 0 <= self.seed < 2**32:
            raise PreviewError(f"seed must be between 0 and 2^32 - 1 (it is {self.seed}).")
        try:
            self.engine_options(engine).validate()
        except OptionError as exc:
            raise PreviewError(str(exc)) from None


@dataclass
class PreviewResult:
    wav: Path
    info: Path                          # the JSON file beside the wav
    label: str                          # "base" or "fine-tuned"
    text: str
    language: str
    checkpoint: str | None              # checkpoint folder, None for the base model
    checkpoint_label: str
    references: list[str]
    settings: GenerationSettings
    sample_rate: int
    duration_s: float
    generation_s: float
    wer: float | None = None
    transcript: str | None = None
    wer_note: str = ""                  # why there is no WER, when there is none
    # The reference clip's words, the speaker's name or the voice's description, by the engine's reference kind.
    reference_text: str = ""
    position: int = 0                   # its place in an A/B pair: 0 on the left, 1 on the right
    pair: str = ""                      # the stem an A/B pair's two takes share ("" for a take alone, older pairs)

    @property
    def speaker(self) -> str:
        """Which model spoke, in words: "Base model", "Fine-tuned · run1 · step 4", "Model folder · mine"."""
        if self.label == BASE_LABEL:
            return "Base model"
        if self.label == MODEL_LABEL:
            return f"Model folder · {Path(self.checkpoint_label).name or self.checkpoint_label}"
        return f"Fine-tuned · {self.checkpoint_label}"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["wav"], data["info"] = self.wav.name, self.info.name
        return data

    @classmethod
    def from_file(cls, info: Path) -> "PreviewResult":
        """Read a preview's JSON file (the wav named in it sits beside it).

        Raises:
            PreviewError: not a preview file, or its wav is gone.
        """
        try:
            data = json.loads(info.read_text(encoding="utf-8"))
            data.pop("base_model", None)
            data["settings"] = GenerationSettings.from_dict(data["settings"])
            data["wav"], data["info"] = safe_paths.resolved_inside(info.parent, data["wav"], "wav", "the previews folder"), info
            result = cls(**data)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise PreviewError(f"{info.name} is not a preview description: {exc}") from exc
        if not result.wav.is_file():
            raise PreviewError(f"The audio of {info.name} ({result.wav.name}) is missing.")
        return result


def load_previews(folder: str | os.PathLike[str], limit: int = 20) -> list[list[PreviewResult]]:
    """The newest ``limit`` preview rows saved in ``folder``, newest first; an A/B pair (the ``pair`` its takes
    share; older pairs: the same stem, each ending in its label ``_base``, ``_fine-tuned``, ``_model``) is one row,
    in the order it was made (older pairs: base first). Unreadable files and files whose wav was deleted are skipped."""
    rows: dict[str, list[PreviewResult]] = {}
    for info in Path(folder).glob("*.json"):
        try:
            result = PreviewResult.from_file(info)
        except PreviewError:
            continue
        key = result.pair or info.stem.removesuffix(f"_{result.label}")  # older pairs: the stem before the label
        rows.setdefault(key, []).append(result)
    ordered = sorted(rows.items(), key=lambda item: max(r.info.stat().st_mtime for r in item[1]), reverse=True)
    return [sorted(results, key=lambda r: (r.position, r.label != BASE_LABEL)) for _key, results in ordered[:limit]]


# -- default sentences --------------------------------------------------------------------------------------------

def _resources_dir() -> Path | None:
    """The ``preview_sentences`` folder's parent in this installation, or None in a broken install."""
    try:
        return resource_path("preview_sentences").parent
    except FileNotFoundError:
        return None


CPU_TAKE_BUDGET_S = 360.0
"""On a computer without a GPU, the most a take with the default settings may need by the engine's estimate for 2
cores: F5-TTS's own 32 sampling steps need about 10 minutes there for one sentence (the walk of 2026-11-26), 16 about
5, 8 about 2.5; the README advises 8-16 on a CPU."""
TYPICAL_REFERENCE_S = 6.0  # a reference clip of the length the app picks (4-10 s)


def affordable_on_cpu(engine: Any, settings: GenerationSettings, language: str) -> GenerationSettings:
    """``settings`` for a computer without a GPU: each option that decides how long a take needs (declared
    ``in_view`` with usual values: F5-TTS's sampling steps) lowered to the largest usual value, no larger than the
    one given, whose take of the language's first preview sentence, from a typical reference, needs at most
    :data:`CPU_TAKE_BUDGET_S` by the engine's estimate; the smallest when none does. Unchanged where the engine
    cannot estimate."""
    sentences = default_sentences(language) or default_sentences("en")
    if not sentences:
        return settings
    text, reference_text = sentences[0], sentences[min(1, len(sentences) - 1)]
    current = settings.engine_options(engine).to_dict()
    values: dict[str, Any] = {}
    for option in declared(engine.generation_options):
        if not (option.setting.in_view and option.setting.choices):
            continue
        usual = sorted(c for c in option.setting.choices if c <= current[option.name]) or [current[option.name]]
        costs = {c: engine.generation_estimate(settings.with_values({option.name: c}), text, TYPICAL_REFERENCE_S,
                                               reference_text) for c in usual}
        if any(cost is None for cost in costs.values()):
            continue
        values[option.name] = max((c for c in usual if costs[c] <= CPU_TAKE_BUDGET_S), default=usual[0])
    return settings.with_values(values)


def default_sentences(language: str) -> list[str]:
    """The preview sentences shipped for ``language`` (``resources/preview_sentences/<code>.txt``, one per line;
    ``de-at`` falls back to ``de``). Empty when there are none: the user types their own."""
    root = _resources_dir()
    if root is None:
        return []
    language = language.lower()
    for code in (language, language.split("-")[0]):
        path = root / "preview_sentences" / f"{code}.txt"
        if path.is_file():
            lines = path.read_text(encoding="utf-8").splitlines()
            return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    return []


# -- generation ---------------------------------------------------------------------------------------------------

def _hears_pieces(engine: Any) -> bool:
    """Whether ``engine.synthesize`` takes ``before_piece`` (the engine API's optional stop between pieces)."""
    return "before_piece" in inspect.signature(engine.synthesize).parameters


class PreviewEngine:
    """Loaded voice models of one engine for previews: the base model and the last fine-tuned checkpoint used.

    Use from one thread at a time. ``device``: ``auto`` (CUDA when available), ``cpu`` or ``cuda``.
    """

    def __init__(self, device: str = "auto", *, engine: str) -> None:
        self.device = device
        self.engine = get_engine(engine)
        self._models: dict[tuple[str, str], Any] = {}
        self._keep: set[tuple[str, str]] = set()  # the two sides of the A/B being made: neither drops the other

    def _resolve_device(self) -> str:
        import torch

        if self.device == "auto":
            return "cuda" if torch.cuda.is_available() else "cpu"
        if self.device == "cuda" and not torch.cuda.is_available():
            raise PreviewError("device is 'cuda' but no CUDA GPU is available; use auto or cpu.")
        return self.device

    def model(self, base_model_dir: Path, weights: Path | None):
        """The inference model for (base, weights), loading it if needed. At most :data:`MAX_LOADED` models stay
        loaded (memory for the real model is about 2 GB each): a new fine-tuned model replaces the previous one and
        the base stays; beyond that the model used longest ago goes (a model folder compared with a checkpoint).

        Raises:
            PreviewError: the base model or weights cannot be loaded.
        """
        import torch

        key = (str(base_model_dir), str(weights) if weights else "")
        if key in self._models:
            self._models[key] = self._models.pop(key)  # the most recently used is last
        else:
            missing = [n for n in self.engine.voice_files if not (base_model_dir / n).is_file()]
            if missing and not base_model_dir.is_dir():  # moved or deleted since it was chosen
                raise PreviewError(f"The model folder {base_model_dir} is not there any more.")
            if missing:
                raise PreviewError(f"The base model folder {base_model_dir} is missing {missing[0]}.")
            # The previous fine-tuned goes first (the base stays), then the model used longest ago; never the other
            # side of the A/B being made (two checkpoints, or two model folders, compared).
            dropped = [k for k in self._models if k[1] and k not in self._keep] if weights is not None else []
            for old in dropped:
                del self._models[old]
            while len(self._models) >= MAX_LOADED:
                dropped.append(next((k for k in self._models if k not in self._keep), next(iter(self._models))))
                del self._models[dropped[-1]]
            if dropped and torch.cuda.is_available():
                torch.cuda.empty_cache()  # give the dropped model's memory back before loading the next
            try:
                self._models[key] = self.engine.load_voice(base_model_dir, weights, self._resolve_device())
            except BaseModelError as exc:
                raise PreviewError(str(exc)) from exc
        return self._models[key]

    def keeping(self, *voices: "Voice") -> "_Keeping":
        """While in this ``with`` block, loading one of ``voices`` never drops another of them."""
        return _Keeping(self, {(str(v.model_dir), str(v.checkpoint.weights) if v.checkpoint else "") for v in voices})

    def unload(self) -> None:
        """Drop the loaded models: their memory goes back (the GPU's to a training run beside them); the next
        synthesis loads again."""
        self._models.clear()

    def synthesize(self, base_model_dir: Path, weights: Path | None, text: str, reference: Reference,
                   language: str, settings: GenerationSettings,
                   before_piece: Callable[[int, int], None] | None = None) -> np.ndarray:
        """Speak ``text``; returns mono float32 at the engine's output rate. ``before_piece(done, total)``: told
        before each piece of a long text; what it raises stops the take there (``Engine.synthesize``).

        Raises:
            PreviewError: empty text, a language or characters the model does not know, bad settings.
        """
        text = " ".join(text.split())
        if not text:
            raise PreviewError("The text is empty: type a sentence to hear.")
        settings.validate(self.engine)
        model = self.model(base_model_dir, weights)
        try:
            # ``before_piece`` is optional for an engine: one written before it (a plugin) speaks the whole text,
            # and a take with it stops before or after.
            pieces = {"before_piece": before_piece} if before_piece is not None and _hears_pieces(self.engine) else {}
            out = self.engine.synthesize(model, text, reference, language, settings, **pieces)
        except EngineError as exc:
            raise PreviewError(str(exc)) from exc
        if out.size == 0 or not np.isfinite(out).all():
            raise PreviewError("The model produced no usable audio for this text (empty or invalid samples).")
        return np.clip(out, -1.0, 1.0).astype(np.float32)


class _Keeping:
    def __init__(self, engine: PreviewEngine, keys: set[tuple[str, str]]) -> None:
        self.engine, self.keys = engine, keys

    def __enter__(self) -> None:
        self.engine._keep = self.keys

    def __exit__(self, *_exc: object) -> None:
        self.engine._keep = set()


def _slug(text: str, limit: int = 32) -> str:
    words = re.sub(r"[^\w]+", "_", text.lower(), flags=re.UNICODE).strip("_")
    return words[:limit].rstrip("_") or "preview"


def _unique_stem(folder: Path, stem: str) -> str:
    candidate, n = stem, 2
    while (folder / f"{candidate}.wav").exists() or (folder / f"{candidate}.json").exists():
        candidate, n = f"{stem}_{n}", n + 1
    return candidate


def generate_preview(engine: PreviewEngine, *, base_model_dir: str | os.PathLike[str],
                     checkpoint: CheckpointInfo | None, text: str, references: list[str | os.PathLike[str]],
                     language: str, settings: GenerationSettings, out_dir: str | os.PathLike[str],
                     stem: str | None = None, checker: Any = None, out_file: str | os.PathLike[str] | None = None,
                     progress: ProgressCallback | None = None, reference_text: str = "",
                     label: str | None = None, position: int = 0, pair: str = "") -> PreviewResult:
    """Generate one preview and save it (wav + JSON) into ``out_dir`` (or exactly ``out_file``).

    Args:
        checkpoint: the fine-tuned checkpoint, or None for the base model alone.
        references: reference clips (see :mod:`alltalk_gui.core.voice.references`), for the engines that speak
            from audio. An engine that reads the clip's words takes the first clip only, with ``reference_text``
            or, when that is empty, the transcript :func:`~alltalk_gui.core.voice.references.reference_text`
            finds for it.
        reference_text: the clip's words, or for an engine that speaks from a speaker name or a description,
            that name or description (``Engine.reference_kind``).
        checker: an :class:`alltalk_gui.core.transcription.wer.IntelligibilityChecker`; None skips the WER.
        stem: file name without extension; default ``<time>_<words of the text>_<label>``.
        label: what the take is called (default "fine-tuned" with a checkpoint, else "base"), e.g. "model" for a
            model folder that is no base model of this project (``preview --model``).
        position: the take's place in an A/B pair (0 left, 1 right), kept in its JSON file.
        pair: the stem the two takes of an A/B share, kept in its JSON file (how :func:`load_previews` pairs them).

    Raises:
        PreviewError: see :meth:`PreviewEngine.synthesize`; ReferenceClipError: a reference cannot be read.
    """
    report = progress or (lambda _what, _fraction: None)
    label = label or (TUNED_LABEL if checkpoint is not None else BASE_LABEL)
    base = Path(base_model_dir)
    if not " ".join(text.split()):
        raise PreviewError("The text is empty: type a sentence to hear.")
    if checkpoint is not None and checkpoint.engine != engine.engine.name:
        raise PreviewError(f"{checkpoint.label} was trained with {get_engine(checkpoint.engine).title}, not "
                           f"{engine.engine.title}.")
    settings.validate(engine.engine)
    references = list(references)
    reference = load_reference(engine.engine, references, reference_text)
    kind = engine.engine.reference_kind
    if kind is not ReferenceKind.CLIPS:
        references = references[:1] if kind is ReferenceKind.CLIP_WITH_WORDS else []
    report(f"Loading the {label} model", 0.1)
    engine.model(base, checkpoint.weights if checkpoint else None)
    report(f"Speaking with the {label} model", 0.3)

    def before_piece(done: int, total: int) -> None:  # a long text: how far it got; a stop (raised) comes here
        if done:
            report(f"Speaking with the {label} model, part {done + 1} of {total}", 0.3 + 0.5 * done / total)

    started = time.perf_counter()
    wav = engine.synthesize(base, checkpoint.weights if checkpoint else None, text, reference, language, settings,
                            before_piece)
    elapsed = time.perf_counter() - started

    if out_file is not None:
        wav_path = Path(out_file)
        wav_path.parent.mkdir(parents=True, exist_ok=True)
        info_path = wav_path.with_suffix(".json")
    else:
        folder = Path(out_dir)
        folder.mkdir(parents=True, exist_ok=True)
        name = _unique_stem(folder, stem or f"{time.strftime('%Y%m%d-%H%M%S')}_{_slug(text)}_{label}")
        wav_path, info_path = folder / f"{name}.wav", folder / f"{name}.json"
    from alltalk_gui.core.audio import decode as audio  # PyAV: not at import (``--help`` reads this module)

    rate = engine.engine.output_sample_rate
    audio.write_wav(wav_path, wav, rate)
    result = PreviewResult(
        wav=wav_path, info=info_path, label=label, text=" ".join(text.split()), language=language,
        checkpoint=str(checkpoint.path) if checkpoint else None,
        checkpoint_label=checkpoint.label if checkpoint else ("base model" if label == BASE_LABEL else str(base)),
        references=[str(r) for r in references], settings=settings, sample_rate=rate,
        duration_s=wav.size / rate, generation_s=elapsed, reference_text=reference.text, position=position,
        pair=pair,
    )
    if checker is not None:
        report("Listening with Whisper", 0.8)
        try:
            heard = checker.check(wav, rate, result.text, language)
            result.wer, result.transcript = heard.wer, heard.transcript
        except Exception as exc:  # the check is an aid: a Whisper failure must not cost the user the take
            result.wer_note = f"Whisper could not transcribe it ({str(exc).strip() or type(exc).__name__})"
    else:
        result.wer_note = "no Whisper model"
    atomic.write_json(info_path, {**result.to_dict(), "base_model": str(base)})
    report("Done", 1.0)
    return result


def load_reference(engine: Any, paths: list[str | os.PathLike[str]], text: str = "") -> Reference:
    """The reference of ``engine``'s kind: the clips' audio at its rate; the first clip and its words (``text``,
    or the transcript found for it); or ``text`` as a speaker name or a description.

    Raises:
        ReferenceClipError: a clip cannot be read, or its words are needed and unknown.
        PreviewError: a speaker name or description is needed and empty.
    """
    from alltalk_gui.core.voice.references import load_references, reference_text

    kind = engine.reference_kind
    text = " ".join(text.split())
    if kind is ReferenceKind.CLIPS:
        return Reference.clips(load_references(paths, engine.sample_rate))
    if kind is ReferenceKind.CLIP_WITH_WORDS:
        first = paths[:1]
        words = text or (reference_text(first[0]) if first else "")
        return Reference.clip_with_words(load_references(first, engine.sample_rate), words)
    if not text:
        wanted = "the name of the speaker" if kind is ReferenceKind.SPEAKER else "a description of the voice"
        raise PreviewError(f"{engine.title} speaks from {wanted}: give it.")
    return Reference.speaker(text) if kind is ReferenceKind.SPEAKER else Reference.description(text)


@dataclass(frozen=True)
class Voice:
    """What speaks a take: the base model, a checkpoint of the project (its base model and its weights), or a model
    folder that is no run of the project (``model_dir`` alone, no weights). ``label`` names the take's kind (and
    ends its file name)."""

    label: str
    model_dir: Path                       # the base model's folder, or the model folder itself
    checkpoint: CheckpointInfo | None = None

    @classmethod
    def base(cls, folder: str | os.PathLike[str]) -> "Voice":
        return cls(BASE_LABEL, Path(folder))

    @classmethod
    def tuned(cls, checkpoint: CheckpointInfo, base_model_dir: str | os.PathLike[str] | None = None) -> "Voice":
        return cls(TUNED_LABEL, Path(base_model_dir or checkpoint.base_model_dir), checkpoint)

    @classmethod
    def model_folder(cls, folder: str | os.PathLike[str]) -> "Voice":
        return cls(MODEL_LABEL, Path(folder))

    def same_as(self, other: "Voice") -> bool:
        """Whether ``other`` speaks with the same model: the same checkpoint, or the same folder (by a link, or
        written another way, too; the base model's folder chosen as a model folder is the base model)."""
        if (self.checkpoint is None) != (other.checkpoint is None):
            return False
        if self.checkpoint is not None and other.checkpoint is not None:
            return _same_path(self.checkpoint.path, other.checkpoint.path)
        return _same_path(self.model_dir, other.model_dir)

    @property
    def title(self) -> str:
        """The voice in words: "the base model", "run1 · step 4", "the model folder mine"."""
        if self.checkpoint is not None:
            return self.checkpoint.label
        return "the base model" if self.label == BASE_LABEL else f"the model folder {self.model_dir.name}"


def _same_path(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one is not there (any more): the same when written the same
        return Path(os.path.abspath(a)) == Path(os.path.abspath(b))


def check_model_folder(engine: Any, folder: str | os.PathLike[str], *, typed: bool = False) -> str:
    """The engine's own check of a model folder to speak with (``Engine.describe_base_model``, which may import
    torch: call it off the GUI thread); returns its one-line description. Only reads the folder.

    ``typed``: the user has just given the path (a command line), so a path that is not there never existed as far
    as the app knows (a typo, say); otherwise it is a folder chosen earlier that has gone since.

    Raises:
        PreviewError: the folder is not there, is a file, holds another engine's model (that engine named), or the
            engine cannot use it (the engine's message, which names what is missing and where it comes from).
    """
    folder = Path(folder)
    if not folder.is_dir():
        if folder.exists():
            raise PreviewError(f"{folder} is a file, not a model folder.")
        raise PreviewError(f"There is no folder {folder}: check the path." if typed
                           else f"The model folder {folder} is not there any more.")
    try:
        return engine.describe_base_model(folder)
    except BaseModelError as exc:
        other = _other_engine_model(engine, folder)
        if other is not None:
            title, description = other
            raise PreviewError(f"{folder} holds a model of another engine, {title} ({description.rstrip('.')}). "
                               f"This voice is {engine.title}: both sides of a preview are {engine.title} "
                               "models.") from exc
        # The engine's message names the folder as a rule ("The Orpheus model folder ... is missing ..."): said
        # once, not after "The Orpheus-TTS 3B model in <the same folder> cannot be used:".
        said = str(exc)
        raise PreviewError(f"{engine.title} cannot speak with this folder. {said}" if str(folder) in said else
                           f"The {engine.title} model in {folder} cannot be used: {said}") from exc


def _other_engine_model(engine: Any, folder: Path) -> tuple[str, str] | None:
    """(title, description) of the other engine whose model ``folder`` holds, by that engine's own check; None when
    none takes it. Asked only once ``engine`` refused the folder, so a refusal can say "that is an F5-TTS model"
    rather than list the files the project's engine misses."""
    from alltalk_gui.core.engine_api.engine import engine_names

    for name in engine_names():
        if name == engine.name:
            continue
        try:
            other = get_engine(name)
            return other.title, other.describe_base_model(folder)
        except Exception:  # noqa: BLE001 - a hint only: any engine that cannot read the folder simply is not it
            continue
    return None


def check_voices(engine: Any, *voices: Voice) -> None:
    """Check each model folder among ``voices`` with the engine (:func:`check_model_folder`): before a take, as it
    may have changed since it was chosen.

    Raises:
        PreviewError: see :func:`check_model_folder`.
    """
    for voice in voices:
        if voice.label == MODEL_LABEL:
            check_model_folder(engine, voice.model_dir)


def generate_take(engine: PreviewEngine, voice: Voice, **preview: Any) -> PreviewResult:
    """One take by ``voice``; ``preview``: :func:`generate_preview`'s other arguments (a model folder is not
    checked again here: :func:`check_voices` first)."""
    return generate_preview(engine, base_model_dir=voice.model_dir, checkpoint=voice.checkpoint, label=voice.label,
                            **preview)


def generate_pair(engine: PreviewEngine, first: Voice, second: Voice, *, text: str,
                  out_dir: str | os.PathLike[str], progress: ProgressCallback | None = None,
                  **preview: Any) -> tuple[PreviewResult, PreviewResult]:
    """The same sentence, references and seed from two voices (an A/B): (first, second), saved as one pair (one
    stem, each take's label at its end; ``position`` keeps their order); ``preview``: :func:`generate_preview`'s
    other arguments (check a model folder first: :func:`check_voices`).

    Any two voices make a pair: the base model, checkpoints, model folders, two of a kind too (two folders: the
    second take's file name ends in ``_model-2``).

    Raises:
        PreviewError: both are the same model (it would be loaded and heard twice), or see :func:`generate_preview`.
    """
    if first.same_as(second):
        raise PreviewError(f"Both sides are {first.title}: choose another model to compare it with.")
    report = progress or (lambda _what, _fraction: None)
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    ends = (first.label, second.label if second.label != first.label else f"{second.label}-2")
    # One free stem for both takes (a number before the label), so the pair is recognisable as a pair later.
    start = stem = f"{time.strftime('%Y%m%d-%H%M%S')}_{_slug(text)}"
    n = 2
    while any((folder / f"{stem}_{end}{ext}").exists() for end in ends for ext in (".wav", ".json")):
        stem, n = f"{start}_{n}", n + 1
    both = []
    with engine.keeping(first, second):
        for i, (voice, end) in enumerate(zip((first, second), ends)):
            both.append(generate_take(engine, voice, text=text, out_dir=folder, stem=f"{stem}_{end}", pair=stem,
                                      progress=lambda what, f, i=i: report(what, (i + f) / 2), position=i,
                                      **preview))
    return both[0], both[1]


def generate_ab(engine: PreviewEngine, *, checkpoint: CheckpointInfo, text: str,
                references: list[str | os.PathLike[str]], language: str, settings: GenerationSettings,
                out_dir: str | os.PathLike[str], checker: Any = None,
                base_model_dir: str | os.PathLike[str] | None = None,
                progress: ProgressCallback | None = None, reference_text: str = ""
                ) -> tuple[PreviewResult, PreviewResult]:
    """The same sentence, references and seed from the base model and from ``checkpoint``: (base, fine-tuned)."""
    base = Path(base_model_dir) if base_model_dir else checkpoint.base_model_dir
    return generate_pair(engine, Voice.base(base), Voice.tuned(checkpoint, base), text=text, out_dir=out_dir,
                         progress=progress, references=references, language=language, settings=settings,
                         checker=checker, reference_text=reference_text)


def checkpoint_previews_by_default(gpu_memory_gib: float | None) -> bool:
    """Whether "a preview at each checkpoint" should start switched on: only with a GPU of at least
    :data:`CHECKPOINT_PREVIEW_MIN_GPU_GIB`. Loading the inference model beside a training run costs about 2 GB of
    GPU memory (and, on a CPU, minutes per checkpoint), which a small card does not have to spare."""
    return gpu_memory_gib is not None and gpu_memory_gib >= CHECKPOINT_PREVIEW_MIN_GPU_GIB


def checkpoint_preview(checkpoint_dir: str | os.PathLike[str], text: str,
                       references: list[str | os.PathLike[str]], *, language: str | None = None,
                       out_dir: str | os.PathLike[str] | None = None, engine: PreviewEngine | None = None,
                       settings: GenerationSettings | None = None, checker: Any = None) -> PreviewResult:
    """A preview of one training checkpoint, for the training loop or the Train page to call after a save.

    Written to ``out_dir`` (default: the project's ``previews/<run>/``) as ``step_<N>.wav`` + ``.json``. Pass the
    same ``engine`` every time: the base model's vocoder stays loaded and only the GPT weights change. The
    caller decides whether to call it at all (it costs a model load per checkpoint: off by default on small GPUs).
    """
    checkpoint = read_checkpoint(checkpoint_dir)
    if out_dir is None:
        project = Path(checkpoint.config.get("project_dir") or checkpoint.path.parents[3])
        out_dir = project / "previews" / checkpoint.run
    engine = engine or PreviewEngine(engine=checkpoint.engine)
    return generate_preview(
        engine, base_model_dir=checkpoint.base_model_dir, checkpoint=checkpoint, text=text, references=references,
        language=language or checkpoint.language or "en",
        settings=settings or GenerationSettings.for_engine(engine.engine, checkpoint.base_model_dir), out_dir=out_dir,
        stem=f"step_{checkpoint.step:07d}", checker=checker,
        reference_text=engine.engine.reference_suggestion(checkpoint),
    )
