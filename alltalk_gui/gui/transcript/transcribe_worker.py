"""Worker threads for the Transcribe step: check a model, download it, transcribe, re-transcribe one clip.

They reuse :class:`alltalk_gui.gui.common.workers.Worker` (its thread, ``finished``/``failed`` and cancel event) and add
two signals for what its ``(done, total, label)`` progress cannot carry: the core's ``Progress`` reports and
download bytes. Signals emitted from the worker thread reach GUI slots queued, so no widget is ever touched
off the GUI thread.

torch, whisper and faster_whisper are imported only inside the jobs (the main window must open without them);
:mod:`alltalk_gui.core.transcription.model_files` and :mod:`alltalk_gui.core.transcription.transcribe` import neither at module level.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from PySide6.QtCore import QObject, Signal

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.gui.common.workers import Worker


@dataclass(frozen=True)
class ModelCheck:
    """Whether the chosen model is on disk; if not, what downloading it means and whether the server answers."""

    resolved: Any        # whisper_models.ResolvedModel
    online: bool | None  # None: not checked (the model is on disk)


@dataclass(frozen=True)
class Outcome:
    """How a transcription ended: ``report`` when it finished, ``message`` when it was stopped or refused."""

    report: Any = None   # transcribe.TranscriptionReport
    cancelled: bool = False
    message: str = ""


class TranscribeWorker(Worker):
    """A Worker with the transcription's own progress signals."""

    report = Signal(object)          # transcribe.Progress
    download_progress = Signal(int, int)  # bytes done, bytes expected


def check_model_worker(backend: str, model: str, parent: QObject | None = None) -> TranscribeWorker:
    """``finished`` carries a :class:`ModelCheck`; ``failed`` a traceback. A model that is neither a known name
    nor a usable path gives a ``ModelCheck`` whose ``resolved`` is the ModelError (shown to the user)."""

    def job(_j) -> ModelCheck:
        from alltalk_gui.core.transcription import model_files as whisper_models

        try:
            resolved = whisper_models.resolve(backend, model)
        except whisper_models.ModelError as exc:
            return ModelCheck(exc, None)
        if resolved.on_disk:
            return ModelCheck(resolved, None)
        # Ask the server the files would come from: the configured Hub (HF_ENDPOINT) for faster-whisper,
        # openai's own server for openai-whisper.
        host, port = whisper_models.endpoint_address(resolved.download.urls[0])
        return ModelCheck(resolved, whisper_models.network_available(host, port))

    return TranscribeWorker(job, parent)


def transcribe_worker(project: VoiceProject, options: Any, resolved: Any,
                      parent: QObject | None = None) -> TranscribeWorker:
    """Download the model if ``resolved`` says it is missing, then transcribe every source of ``project``.

    ``finished`` carries an :class:`Outcome`. Cancel stops a download between chunks and a transcription within
    a fraction of a second: the core runs the recogniser in a child process and terminates it.
    """

    def job(_j) -> Outcome:
        from alltalk_gui.core.transcription import transcribe
        from alltalk_gui.core.transcription import model_files as whisper_models

        stop = worker.cancel_event.is_set
        opts = options
        try:
            if not resolved.on_disk:
                path = whisper_models.download(resolved, worker.download_progress.emit, stop)
                opts = replace(options, model=str(path))
            result = transcribe.transcribe_project(project, opts, progress=worker.report.emit, should_stop=stop,
                                                   in_worker_process=True)
        except (transcribe.Cancelled, whisper_models.DownloadCancelled) as exc:
            return Outcome(cancelled=True, message=str(exc))
        except (transcribe.TranscriptionError, whisper_models.ModelError) as exc:
            return Outcome(message=str(exc))
        return Outcome(report=result)

    worker = TranscribeWorker(job, parent)
    return worker


class TranscriberCache:
    """Keeps the last loaded recogniser, so re-transcribing clip after clip does not reload the model.

    Used from one worker thread at a time (the page runs one re-transcription at a time).
    """

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._transcriber: Any = None

    def get(self, options: Any) -> Any:
        from alltalk_gui.core.transcription import transcribe

        key = (options.backend, options.model, options.device)
        if key != self._key:
            self._transcriber = None  # free the old model before loading another
            self._transcriber = transcribe.make_transcriber(options)
            self._key = key
        return self._transcriber


def retranscribe_worker(project: VoiceProject, segment: Any, options: Any, cache: TranscriberCache,
                        parent: QObject | None = None) -> TranscribeWorker:
    """Run the recogniser on one clip's audio. ``finished`` carries an :class:`Outcome` whose ``report`` is the
    ``Recognised`` result with word times moved into the source's timeline."""

    def job(_j) -> Outcome:
        from alltalk_gui.core.audio import decode as audio
        from alltalk_gui.core.transcription import transcribe
        from alltalk_gui.core.transcription import model_files as whisper_models
        from alltalk_gui.core.audio.clips import ClipAudio, ClipAudioError

        stop = worker.cancel_event.is_set
        try:
            samples, rate = ClipAudio(project).clip(segment.source_id, segment.start_ms, segment.end_ms)
            mono16k = audio.resample(samples, rate, transcribe.WHISPER_RATE)
            recogniser = cache.get(options)
            language = None if options.language == "auto" else options.language
            recognised = recogniser.transcribe(mono16k, language, lambda _f: None, stop)
        except transcribe.Cancelled as exc:
            return Outcome(cancelled=True, message=str(exc))
        except (ClipAudioError, transcribe.TranscriptionError, whisper_models.ModelError) as exc:
            return Outcome(message=str(exc))
        words = [replace(w, start_ms=w.start_ms + segment.start_ms, end_ms=w.end_ms + segment.start_ms)
                 for w in recognised.words]
        return Outcome(report=replace(recognised, words=words))

    worker = TranscribeWorker(job, parent)
    return worker
