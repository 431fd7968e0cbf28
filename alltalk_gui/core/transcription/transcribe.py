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
from typing import Any, Sequence

from alltalk_gui.core import atomic
from alltalk_gui.core.audio.clips import ClipAudio, ClipAudioError
from alltalk_gui.core.transcript.flags import DEFAULT_MIN_S, ClipChecker
from alltalk_gui.core.transcript.known_text import apply_known_text, load_known_text
from alltalk_gui.core.transcript.segmentation import segments_from_words
from alltalk_gui.core.transcript.segments import Segment, SegmentList, Word, read_file
from alltalk_gui.core.transcription.languages import detected_note, whisper_option
from alltalk_gui.core.transcription.factory import (  # noqa: F401  (re-exported: callers name them here)
    check_language,
    default_model,
    load_for_whisper,
    make_transcriber,
    resolve_device,
    whisper_languages,
)
from alltalk_gui.core.transcription.types import (  # noqa: F401  (re-exported: callers name them here)
    DEFAULT_BACKEND,
    DEVICES,
    WHISPER_RATE,
    Cancelled,
    ProgressCallback,
    Progress,
    Recognised,
    StopCallback,
    TranscribeOptions,
    Transcriber,
    TranscriptionError,
    english_only_refusal,
)


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


def check_request(project: Any, language: str, min_s: float = DEFAULT_MIN_S, max_s: float | None = None,
                  vocab_file: str | None = None) -> ClipChecker:
    """What needs no Whisper model checked first (recordings to transcribe, a language Whisper knows, a clip length
    range the engine can use), so that a request that cannot run fails before a model is loaded or downloaded
    (the default openai-whisper model is 484 MB). Returns the clip checker the transcription cuts with.

    Raises:
        TranscriptionError: the project has no recordings, or the language or length range is refused.
    """
    if not project.sources:
        raise TranscriptionError("The project has no recordings yet; import some audio first.")
    check_language(whisper_option(language))
    try:
        return ClipChecker(project.engine, project.language, min_s, max_s, vocab_file=vocab_file)
    except ValueError as exc:
        raise TranscriptionError(str(exc)) from exc


def transcribe_project(project: Any, options: TranscribeOptions = TranscribeOptions(),
                       progress: ProgressCallback | None = None, should_stop: StopCallback | None = None,
                       transcriber: Transcriber | None = None, in_worker_process: bool = False,
                       min_s: float = DEFAULT_MIN_S, max_s: float | None = None,
                       vocab_file: str | None = None) -> TranscriptionReport:
    """Transcribe every source of ``project`` and save the clips as segments.json.

    The clips are cut for the project's engine: ``min_s``-``max_s`` long (``max_s`` None: the engine's default,
    capped at its limit) and with no more text than it reads; ``vocab_file`` (its base-model vocabulary) makes its
    text check exact.

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
    checker = check_request(project, options.language, min_s, max_s, vocab_file)
    options = replace(options, language=whisper_option(options.language))  # zh-cn -> zh
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
    saved = _save(project, options, results, failures, checker)
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
          failures: list[tuple[str, str]], checker: ClipChecker) -> SegmentList:
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
        new = segments_from_words(source.id, recognised.words, duration_ms, number, checker, recognised.windows,
                                  samples=samples, rate=rate)
        known = load_known_text(project, source)  # the user's own text wins over Whisper's words
        if known:
            new = apply_known_text(new, known, project.language)
        number += len(new)
        segments.extend(new)
    languages = sorted({r.language for r in results.values()})
    meta = {"backend": options.backend, "model": options.model, "language": options.language,
            "detected_languages": languages, "device": options.device,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "failed": [{"source": name, "reason": reason} for name, reason in failures]}
    return SegmentList.create(project, segments, meta=meta, checker=checker, audio=clip_audio)
