"""Background jobs of the Preview & Export page: generating previews (one take or an A/B pair) and exporting.

A take is spoken by a :class:`~alltalk_gui.core.voice.preview.Voice` (a checkpoint, the base model or a model
folder); a model folder is checked by its engine again first, in the job, as the CLI's ``preview --model`` does.

The models stay loaded between previews in a :class:`PreviewSession`, which lives as long as the page (a
checkpoint of the other engine replaces them); the jobs run one at a time in
:class:`alltalk_gui.gui.common.workers.Worker` threads. torch, coqui, f5-tts and Whisper are only imported inside
the jobs, so opening the app never loads them.

F5-TTS speaks from a reference clip and its words. The page passes the words as shown (the user may have
corrected the dataset's transcript) to the preview and, as ``ExportOptions.reference_texts``, to the export;
the user's own files are never written to.

A take can be stopped (Stop, or the window closes during it): the job stops at its next step (loading a model,
the next piece of a long text, speaking the other side of an A/B, listening with Whisper, saving), never inside the
model's synthesis of one piece, which cannot be cut short safely, and removes what it had written of the take, so
previews/ holds whole takes only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject

from alltalk_gui.core.training.checkpoints import CheckpointInfo
from alltalk_gui.core.voice.export import ExportOptions, ExportResult, export_voice
from alltalk_gui.core.voice.preview import GenerationSettings, PreviewResult, Voice
from alltalk_gui.gui.common.workers import Worker, _Job


@dataclass
class PreviewRequest:
    engine: str                          # the registry name of the engine that speaks
    voice: Voice                         # what speaks (the take on the right of an A/B)
    text: str
    references: list[Path]
    language: str
    settings: GenerationSettings
    out_dir: Path
    against: Voice | None = None         # an A/B: what it is compared with (on the left), same seed
    whisper_model: str | None = None     # None: the transcription step's default, if it is on disk
    reference_text: str = ""            # the clip's words, the speaker's name or the description (by the engine)


@dataclass
class PreviewSession:
    """What stays loaded between previews: one engine's models (base and a checkpoint) and the Whisper checker."""

    device: str = "auto"
    engine: Any = None
    checker: Any = None
    checker_note: str = ""
    _checker_for: Any = field(default=False, repr=False)  # the whisper_model the checker was made for


TAKE_STOPPED = "The take was stopped."


class TakeStopped(Exception):
    """The take was stopped before it was made (``Worker.cancel``); nothing of it was kept."""


def preview_worker(session: PreviewSession, request: PreviewRequest, parent: QObject | None = None) -> Worker:
    """``finished`` carries the list of PreviewResults: [the take] or [compared with, the take]; ``failed`` a
    traceback ending in :class:`TakeStopped` when the worker was cancelled before the take was made."""

    def job(j: _Job) -> list[PreviewResult]:
        started, before = time.time(), _names(request.out_dir)
        try:
            return make_take(j)
        except BaseException:
            _remove_new_takes(request.out_dir, before, started)  # a stopped (or failed) take leaves nothing of it
            raise

    def make_take(j: _Job) -> list[PreviewResult]:
        from alltalk_gui.core.voice.preview import PreviewEngine, check_voices, generate_pair, generate_take
        from alltalk_gui.core.transcription.wer import find_checker

        def progress(what: str, fraction: float) -> None:
            if worker.cancel_event.is_set():  # between two steps of the take: stop here
                raise TakeStopped(TAKE_STOPPED)
            j.progress.emit(int(fraction * 100), 100, what)

        engine = request.engine
        if session.engine is None or session.engine.engine.name != engine:  # the other engine's models go
            session.engine = None
            session.engine = PreviewEngine(session.device, engine=engine)
            progress(f"Loading {session.engine.engine.title}", 0.0)
        voices = (request.voice,) if request.against is None else (request.against, request.voice)
        check_voices(session.engine.engine, *voices)  # a model folder may have changed or gone since its check
        if session._checker_for != request.whisper_model:
            progress("Loading Whisper for the intelligibility check", 0.02)
            session.checker, session.checker_note = find_checker(request.whisper_model, "cpu")
            session._checker_for = request.whisper_model
        common = dict(text=request.text, references=request.references, language=request.language,
                      settings=request.settings, out_dir=request.out_dir, checker=session.checker,
                      progress=progress, reference_text=request.reference_text)
        if request.against is not None:
            results = list(generate_pair(session.engine, request.against, request.voice, **common))
        else:
            results = [generate_take(session.engine, request.voice, **common)]
        for result in results:
            if result.wer is None:
                result.wer_note = session.checker_note or result.wer_note
        progress("Done", 1.0)  # a stop asked for while the last side was saved: that pair is not kept either
        return results

    worker = Worker(job, parent)
    return worker


def _names(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()} if folder.is_dir() else set()


def _remove_new_takes(folder: Path, before: set[str], started: float) -> None:
    """Remove the take files (wav and JSON) this job wrote into ``folder``: those that were not there at its start,
    named from a time since then (a take's name begins with it; another program's take of another time stays)."""
    earliest = time.strftime("%Y%m%d-%H%M%S", time.localtime(started - 1))
    for name in _names(folder) - before:
        if name.endswith((".wav", ".json")) and name[:15] >= earliest:
            (folder / name).unlink(missing_ok=True)


def release_worker(session: PreviewSession, parent: QObject | None = None) -> Worker:
    """Drop the models ``session`` keeps loaded and give their memory back, the graphics card's above all: a
    training run that sizes its profile and micro-batch from the card's free memory would otherwise find it taken
    (two Orpheus voices in bf16 hold about 13 GB; two XTTS ones about 4 GB). The next preview loads again."""

    def job(_j) -> None:
        engine, session.engine = session.engine, None
        if engine is None:
            return
        engine.unload()  # an engine's child process (Parler's) ends with its voice
        del engine
        import gc

        import torch

        gc.collect()
        if torch.cuda.is_available():  # the allocator's cache is this process's until emptied
            torch.cuda.empty_cache()

    return Worker(job, parent)


def export_worker(checkpoint: CheckpointInfo, out_dir: Path, options: ExportOptions, project_name: str,
                  parent: QObject | None = None, reference_text: str = "") -> Worker:
    """``finished`` carries the ExportResult. ``reference_text``: as the page shows it, the words of the (one)
    reference clip, for an engine that exports them; without reference clips, the speaker's name or the voice's
    description."""

    def job(j: _Job) -> ExportResult:
        def progress(what: str, fraction: float) -> None:
            j.progress.emit(int(fraction * 100), 100, what)

        words = {str(options.references[0]): reference_text} if reference_text and options.references else {}
        prompt = reference_text if not options.references else ""
        return export_voice(checkpoint, out_dir, replace(options, reference_texts=words, voice_prompt=prompt),
                            project_name=project_name, progress=progress)

    return Worker(job, parent)
