"""Transcription: turn a project's recordings into word timelines and then into training clips.

Two backends implement the :class:`Transcriber` protocol: openai-whisper (the default; PyTorch, fp16 on CUDA)
and faster-whisper (CTranslate2: int8 on CPU, float16 on GPU, less memory). Both run with word timestamps;
faster-whisper also runs its Silero voice-activity filter. The language is detected or given.

:func:`transcribe_project` runs a backend over every source, reports :class:`Progress` (per file and
overall, with an ETA), stops when ``should_stop()`` becomes true, cuts the words into clips
(:mod:`alltalk_gui.core.transcript.segmentation`) and saves them as the project's segments.json. It is written for a
worker thread: it never touches the GUI, and ``should_stop`` can be ``threading.Event().is_set`` set from any
thread. With ``in_worker_process=True`` the recogniser runs in a child process that Cancel terminates, so
stopping takes well under a second even in the middle of a long model call.

Models are never downloaded here: :mod:`alltalk_gui.core.transcription.model_files` says what is missing first. torch,
whisper and faster_whisper are imported only inside the backends.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from alltalk_gui.core import atomic
from alltalk_gui.core.audio import decode as audio
from alltalk_gui.core.audio.clips import ClipAudio, ClipAudioError
from alltalk_gui.core.transcript.flags import DEFAULT_MAX_S, DEFAULT_MIN_S, ClipChecker
from alltalk_gui.core.transcript.known_text import apply_known_text, load_known_text
from alltalk_gui.core.transcript.segmentation import segments_from_words
from alltalk_gui.core.transcript.segments import Segment, SegmentList, Word, read_file
from alltalk_gui.core.transcription.model_files import BACKENDS, FASTER, OPENAI
from alltalk_gui.core.transcription.languages import detected_note, whisper_option

DEFAULT_BACKEND = OPENAI
WHISPER_RATE = audio.WHISPER_SAMPLE_RATE
DEVICES = ("auto", "cpu", "cuda")


class TranscriptionError(Exception):
    """Transcription cannot start or a file cannot be transcribed; the message says why."""


class Cancelled(Exception):
    """``should_stop()`` became true; nothing was saved and the previous transcript is untouched."""


@dataclass(frozen=True)
class TranscribeOptions:
    backend: str = DEFAULT_BACKEND
    model: str | None = None       # a model name or a local path; None picks default_model(backend, device)
    language: str = "auto"         # "auto" detects it per file; otherwise a Whisper language code
    device: str = "auto"           # auto | cpu | cuda
    beam_size: int = 5
    download_root: str | None = None


@dataclass(frozen=True)
class Recognised:
    """What a backend returns for one recording."""

    words: list[Word]
    windows: list[tuple[int, int, float]]  # the recogniser's own segments: (start_ms, end_ms, no_speech_prob)
    language: str


@dataclass(frozen=True)
class Progress:
    """One progress report. Fractions are 0-1; ``eta_s`` is None until there is enough to estimate from."""

    stage: str              # "loading" (the model) | "transcribing" | "saving" | "done"
    file_index: int         # 0-based index of the current file
    file_count: int
    file_name: str
    file_fraction: float
    overall_fraction: float
    elapsed_s: float
    eta_s: float | None


ProgressCallback = Callable[[Progress], None]
StopCallback = Callable[[], bool]


class Transcriber(Protocol):
    """A loaded speech recogniser. ``transcribe`` takes mono float32 audio at 16 kHz."""

    backend: str
    model: str
    device: str

    def transcribe(self, samples: np.ndarray, language: str | None, on_progress: Callable[[float], None],
                   should_stop: StopCallback) -> Recognised:
        """Recognise ``samples``; call ``on_progress(fraction of the file)`` as windows finish; raise
        :class:`Cancelled` soon after ``should_stop()`` turns true."""
        ...


@dataclass
class TranscriptionReport:
    segments: SegmentList
    transcribed: list[str] = field(default_factory=list)        # source names
    failed: list[tuple[str, str]] = field(default_factory=list)  # (source name, reason)
    languages: dict[str, str] = field(default_factory=dict)     # source name -> language used
    # A sentence when Whisper heard another language than the project's in some recording (else None).
    language_note: str | None = None
    seconds: float = 0.0
    audio_seconds: float = 0.0


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when a CUDA GPU is usable, else ``cpu``.

    Raises:
        TranscriptionError: unknown device, or ``cuda`` asked for on a machine without one.
    """
    if device not in DEVICES:
        raise TranscriptionError(f"Unknown device '{device}'; use {', '.join(DEVICES)}.")
    if device == "cpu":
        return "cpu"
    try:
        import ctranslate2

        has_cuda = ctranslate2.get_cuda_device_count() > 0
    except Exception:  # ctranslate2 missing or built without CUDA: ask torch, which the backend needs anyway
        import torch

        has_cuda = torch.cuda.is_available()
    if device == "cuda" and not has_cuda:
        raise TranscriptionError("No CUDA GPU is available here; use --device cpu (or auto).")
    return "cuda" if has_cuda else "cpu"


def whisper_languages() -> list[str]:
    """The language codes Whisper knows (from faster-whisper's tokenizer table: no torch import)."""
    from faster_whisper.tokenizer import _LANGUAGE_CODES

    return sorted(_LANGUAGE_CODES)


def check_language(language: str) -> None:
    """Raises TranscriptionError unless ``language`` is "auto" or a Whisper language code."""
    if language != "auto" and language not in whisper_languages():
        raise TranscriptionError(f"Unknown language '{language}'; use auto or a Whisper language code such as "
                                 "en, de, fr, es, it, pt, pl, nl, ru, zh, ja, ko.")


def english_only_refusal(model: str, language: str | None) -> str | None:
    """The message for asking an English-only model (tiny.en...) for another language, else None."""
    if language in (None, "en"):
        return None
    return (f"The model {model} understands English only, but the language is '{language}'. Choose a multilingual "
            "model (one without .en), or language auto.")


def default_model(backend: str, device: str) -> str:
    """turbo on a GPU (best accuracy for its speed); small on a CPU, where turbo takes many minutes."""
    return "turbo" if device == "cuda" else "small"


def make_transcriber(options: TranscribeOptions) -> Transcriber:
    """Load the backend's model (from disk only).

    Raises:
        TranscriptionError: unknown backend or device.
        whisper_models.ModelError: unknown model or missing path; ModelNotDownloaded when a named model is not
            on disk yet (its ``.download`` says what to fetch).
    """
    if options.backend not in BACKENDS:
        raise TranscriptionError(f"Unknown transcription backend '{options.backend}'; use {' or '.join(BACKENDS)}.")
    check_language(options.language)
    device = resolve_device(options.device)
    model = options.model or default_model(options.backend, device)
    if options.backend == FASTER:
        from alltalk_gui.core.transcription.faster_whisper_backend import FasterWhisperTranscriber

        return FasterWhisperTranscriber(model, device, options.beam_size, options.download_root)
    from alltalk_gui.core.transcription.openai_whisper_backend import OpenAIWhisperTranscriber

    return OpenAIWhisperTranscriber(model, device, options.beam_size, options.download_root)


def load_for_whisper(path: Any, name: str) -> np.ndarray:
    """A working copy (``path``; ``name`` is the original file name, for messages) as mono float32 at 16 kHz.

    Raises:
        TranscriptionError: the file is missing or unreadable.
    """
    if not Path(path).is_file():
        raise TranscriptionError(f"The working audio of '{name}' ({path}) is missing; import the file again.")
    try:
        samples, rate = audio.load(path)
    except audio.AudioError as exc:
        raise TranscriptionError(str(exc)) from exc
    return audio.resample(audio.to_mono(samples), rate, WHISPER_RATE)


def transcribe_project(project: Any, options: TranscribeOptions = TranscribeOptions(),
                       progress: ProgressCallback | None = None, should_stop: StopCallback | None = None,
                       transcriber: Transcriber | None = None, in_worker_process: bool = False,
                       min_s: float = DEFAULT_MIN_S, max_s: float = DEFAULT_MAX_S,
                       vocab_file: str | None = None) -> TranscriptionReport:
    """Transcribe every source of ``project`` and save the clips as segments.json.

    The previous segments.json (with any edits) is kept as ``segments.json.bak``; segments of sources that
    failed this time are carried over from it. A file that fails is reported and the others go on.

    Args:
        transcriber: an already loaded backend (tests, or a GUI that keeps the model loaded); else one is
            made from ``options``.
        in_worker_process: run the recogniser in a child process that a stop request terminates at once.

    Raises:
        TranscriptionError: the project has no sources, or every file failed (nothing is written then).
        Cancelled: ``should_stop()`` became true (nothing is written).
        whisper_models.ModelError: the model cannot be found or loaded.
    """
    if not project.sources:
        raise TranscriptionError("The project has no recordings yet; import some audio first.")
    options = replace(options, language=whisper_option(options.language))  # zh-cn -> zh
    check_language(options.language)
    try:
        ClipChecker(project.language, min_s, max_s)  # a bad length range fails now, not after the long part
    except ValueError as exc:
        raise TranscriptionError(str(exc)) from exc
    if options.model is None and transcriber is None:  # name the default now, so the transcript records it
        options = replace(options, model=default_model(options.backend, resolve_device(options.device)))
    elif transcriber is not None:
        options = replace(options, backend=transcriber.backend, model=transcriber.model, device=transcriber.device)
    stop = should_stop or (lambda: False)
    report = _Reporter(project.sources, progress)
    if in_worker_process:
        from alltalk_gui.core.transcription.child_process import run_in_worker

        results, failures = run_in_worker(project, options, report, stop)
    else:
        results, failures = _run_here(project, options, transcriber, report, stop)
    if stop():
        raise Cancelled("Transcription stopped; the previous transcript was kept.")
    if not results:
        details = "; ".join(f"{name}: {reason}" for name, reason in failures)
        raise TranscriptionError(f"No recording could be transcribed ({details}). Nothing was changed.")
    report.emit("saving", len(project.sources) - 1, 1.0)
    saved = _save(project, options, results, failures, min_s, max_s, vocab_file)
    report.emit("done", len(project.sources) - 1, 1.0)
    heard = {project.source(sid).name: r.language for sid, r in results.items()}
    return TranscriptionReport(
        segments=saved, transcribed=[project.source(sid).name for sid in results], failed=failures,
        languages=heard, language_note=detected_note(project.language, heard),
        seconds=time.monotonic() - report.started, audio_seconds=report.total_s)


# -- internals -------------------------------------------------------------------------------------------------
class _Reporter:
    """Turns per-file fractions into overall progress (weighted by duration) and an ETA."""

    def __init__(self, sources: Sequence[Any], callback: ProgressCallback | None) -> None:
        self.sources = list(sources)
        self.callback = callback
        self.durations = [max(s.duration_s, 0.1) for s in self.sources]
        self.total_s = sum(self.durations)
        self.started = time.monotonic()
        self.work_started: float | None = None

    def emit(self, stage: str, index: int, file_fraction: float) -> None:
        if stage == "transcribing" and self.work_started is None:
            self.work_started = time.monotonic()  # model loading is not part of the rate the ETA uses
        done_s = sum(self.durations[:index]) + self.durations[index] * file_fraction
        overall = min(1.0, done_s / self.total_s)
        now = time.monotonic()
        eta = None
        if stage in ("saving", "done"):
            eta = 0.0
        elif self.work_started is not None and overall > 0.01:
            working = now - self.work_started
            eta = working / overall * (1.0 - overall)
        if self.callback is not None:
            self.callback(Progress(stage, index, len(self.sources), self.sources[index].name,
                                   min(1.0, file_fraction), overall, now - self.started, eta))


def _run_here(project: Any, options: TranscribeOptions, transcriber: Transcriber | None, report: _Reporter,
              stop: StopCallback) -> tuple[dict[str, Recognised], list[tuple[str, str]]]:
    if transcriber is None:
        report.emit("loading", 0, 0.0)
        transcriber = make_transcriber(options)
    language = None if options.language == "auto" else options.language
    results: dict[str, Recognised] = {}
    failures: list[tuple[str, str]] = []
    for index, source in enumerate(project.sources):
        if stop():
            raise Cancelled("Transcription stopped; the previous transcript was kept.")
        report.emit("transcribing", index, 0.0)
        try:
            samples = load_for_whisper(project.path(source.audio_file), source.name)
        except TranscriptionError as exc:
            failures.append((source.name, str(exc)))
            continue
        results[source.id] = transcriber.transcribe(
            samples, language, lambda f, i=index: report.emit("transcribing", i, f), stop)
        report.emit("transcribing", index, 1.0)
    return results, failures


def _save(project: Any, options: TranscribeOptions, results: dict[str, Recognised],
          failures: list[tuple[str, str]], min_s: float, max_s: float, vocab_file: str | None) -> SegmentList:
    old: list[Segment] = []
    if project.segments_file.exists():
        backup = project.root / "segments.json.bak"
        try:
            data = read_file(project.segments_file)  # with the edits still in its journal
            old = [Segment.from_dict(s) for s in data["segments"]]
            atomic.write_json(backup, data)
        except Exception:  # an unreadable old file is kept as the .bak; the new transcript replaces it
            atomic.copy_file(project.segments_file, backup)
            old = []
    # Clips of sources that failed this time are kept; clips of sources removed from the project are not.
    present = {source.id for source in project.sources}
    kept_old = [s for s in old if s.source_id not in results and s.source_id in present]
    number = 1 + max([int(s.id[1:]) for s in kept_old if s.id[1:].isdigit()] or [0])
    segments = list(kept_old)
    clip_audio = ClipAudio(project)
    for source in project.sources:
        if source.id not in results:
            continue
        recognised = results[source.id]
        try:
            samples, rate = clip_audio.source_samples(source.id)
            duration_ms = samples.size * 1000 // rate
        except ClipAudioError:  # vanished since it was transcribed: plan from the words alone
            samples, rate = None, 0
            duration_ms = max((w.end_ms for w in recognised.words), default=0) + 500
        new = segments_from_words(source.id, recognised.words, duration_ms, number, recognised.windows, min_s, max_s,
                                  samples=samples, rate=rate, language=project.language)
        known = load_known_text(project, source)  # the user's own text wins over Whisper's words
        if known:
            new = apply_known_text(new, known, project.language)
        number += len(new)
        segments.extend(new)
    from alltalk_gui.core.engines.xtts.text_check import TextChecker

    checker = ClipChecker(project.language, min_s, max_s, TextChecker(project.language, vocab_file))
    languages = sorted({r.language for r in results.values()})
    meta = {"backend": options.backend, "model": options.model, "language": options.language,
            "detected_languages": languages, "device": options.device,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "failed": [{"source": name, "reason": reason} for name, reason in failures]}
    return SegmentList.create(project, segments, meta=meta, checker=checker, audio=clip_audio)
