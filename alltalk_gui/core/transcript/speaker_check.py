"""The speaker check of one clip list: each clip's embedding (cached), the main voice, and measuring what is missing.

A :class:`~alltalk_gui.core.transcript.segments.SegmentList` holds a :class:`SpeakerCheck`; its flags read a clip's
likeness to the main voice from it (milliseconds: a dictionary look-up and a dot product). Measuring is the slow
part (the encoder loads torch, ~2 s, then ~0.1 s a clip on a CPU) and never runs on the GUI thread: the CLI calls
:func:`measure` after transcribing; the GUI calls :func:`measure_in_child` from a worker thread, which runs it in a
child process, because importing torch in the GUI's process, even on another thread, stalls the GUI (the text
check's child process exists for the same reason). Either writes the project's store (:mod:`.speaker_store`), and
the list then takes the new embeddings with
:meth:`~alltalk_gui.core.transcript.segments.SegmentList.speakers_measured`.

Where the encoder's packages are missing (the optional ``judge`` extra), nothing is measured and
:attr:`SpeakerCheck.off_reason` says why; embeddings already in the store still count.
"""

from __future__ import annotations

import multiprocessing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from alltalk_gui.core.audio import speaker
from alltalk_gui.core.transcript.flags import OTHER_SPEAKER, OTHER_SPEAKER_BELOW, SHORT_VOICE_LINE
from alltalk_gui.core.transcript.speaker_store import SpeakerStore, clip_key
from alltalk_gui.core.transcript.speakers import NO_MAIN_VOICE, MainVoice, find_main_voice

MIN_VOICE_S = 1.0  # less voice than this (after the encoder's own pause trimming) says too little about who speaks

Progress = Callable[[int, int], None]   # (clips measured, clips to measure)
Stop = Callable[[], bool]


@dataclass(frozen=True)
class Request:
    """One clip to measure: its store key, the working audio file and the span."""

    key: str
    audio_path: str
    start_ms: int
    end_ms: int


class SpeakerCheck:
    """The speaker facts of one project's clips (see the module docstring)."""

    def __init__(self, store: SpeakerStore, sources: dict[str, tuple[str, str]], off_reason: str | None) -> None:
        self.store = store
        self.sources = sources  # source id -> (sha256 of the original, working audio path)
        self.off_reason = off_reason
        self.main: MainVoice = NO_MAIN_VOICE

    @classmethod
    def for_project(cls, project: Any) -> "SpeakerCheck":
        sources = {s.id: (s.sha256, str(project.path(s.audio_file))) for s in project.sources}
        return cls(SpeakerStore.of(project.root), sources, speaker.unavailable_reason())

    def key(self, segment: Any) -> str | None:
        source = self.sources.get(segment.source_id)
        return None if source is None else clip_key(source[0], segment.start_ms, segment.end_ms)

    def embedding(self, segment: Any) -> np.ndarray | None:
        key = self.key(segment)
        return None if key is None else self.store.get(key)

    def voice_seconds(self, segment: Any) -> float | None:
        """The seconds of voice the clip's embedding was measured on; None when not known."""
        key = self.key(segment)
        return None if key is None else self.store.seconds(key)

    def likeness(self, segment: Any) -> float | None:
        """The clip's likeness to the main voice; None when either is unknown."""
        return self.main.likeness(self.embedding(segment))

    def find_main_voice(self, segments: Iterable[Any], chosen: str | None = None) -> MainVoice:
        """The main voice of the kept, measured clips (``chosen``: a clip the user said is theirs)."""
        kept = []
        for s in segments:
            if not s.deleted and (embedding := self.embedding(s)) is not None:
                kept.append((s.id, embedding, s.duration_ms / 1000))
        self.main = find_main_voice(kept, chosen)
        return self.main

    def missing(self, segments: Iterable[Any]) -> list[Request]:
        """The kept clips not measured yet (nothing when measuring is off)."""
        if self.off_reason:
            return []
        out, seen = [], set()
        for s in segments:
            key = self.key(s)
            if s.deleted or key is None or key in seen or self.store.known(key):
                continue
            seen.add(key)
            out.append(Request(key, self.sources[s.source_id][1], s.start_ms, s.end_ms))
        return out

    def status(self, segments: Sequence[Any]) -> str:
        """One line for the page and the CLI: off and why, waiting, or what the check found."""
        kept = [s for s in segments if not s.deleted]
        measured = sum(1 for s in kept if self.embedding(s) is not None)
        if self.off_reason and not measured:
            return f"Speaker check off: {self.off_reason}"
        waiting = len(self.missing(kept))
        if self.main.note:
            return f"Speaker check: {self.main.note}"
        still = f"{waiting} of {len(kept)} clips still to measure" if waiting else ""
        if self.main.centre is None:
            return f"Speaker check: {still}." if still else "Speaker check: no clip could be measured." if kept else ""
        others = sum(1 for s in kept if OTHER_SPEAKER in s.flag_codes)
        found = (f"{others} clip{'s' if others != 1 else ''} may hold another voice (likeness under "
                 f"{OTHER_SPEAKER_BELOW:.2f} to the main voice, less for clips with under "
                 f"{SHORT_VOICE_LINE[-1][0]:g} s of voice)" if others else "all clips sound like one voice")
        return (f"Speaker check: {found}; the main voice holds {self.main.share:.0%} of the measured audio "
                f"({measured} of {len(kept)} clips measured{'; ' + still if still else ''}).")


def measure(requests: Sequence[Request], store: SpeakerStore, encoder: Any = None, progress: Progress | None = None,
            stop: Stop | None = None, save_every: int = 25) -> int:
    """Embed each requested clip into ``store`` and save it (every ``save_every`` clips and at the end); returns
    how many were measured. A clip without enough voice is kept as unmeasurable, with the reason. An audio file
    that cannot be read leaves its clips unmeasured (tried again next time)."""
    from alltalk_gui.core.audio import decode

    encoder = encoder or speaker.SpeakerEncoder("cpu")
    loaded: dict[str, tuple[np.ndarray, int] | None] = {}
    done = 0
    for i, request in enumerate(requests):
        if stop is not None and stop():
            break
        if request.audio_path not in loaded:
            loaded.clear()  # one recording in memory at a time (requests come in source order)
            try:
                data, rate = decode.load(Path(request.audio_path))
                loaded[request.audio_path] = (decode.to_mono(data), int(rate))
            except (decode.AudioError, OSError):
                loaded[request.audio_path] = None
        source = loaded[request.audio_path]
        if source is not None:
            samples, rate = source
            clip = samples[request.start_ms * rate // 1000: request.end_ms * rate // 1000]
            try:
                embedding, voice_s = encoder.embed_with_voice(clip, rate, min_speech_s=MIN_VOICE_S)
                store.put(request.key, embedding, voice_s=voice_s)
            except speaker.SpeakerAudioError as exc:
                store.put(request.key, None, str(exc))
            done += 1
        if progress is not None:
            progress(i + 1, len(requests))
        if done and done % save_every == 0:
            store.save()
    store.save()
    return done


def measure_in_child(requests: Sequence[Request], store_path: Path, progress: Progress | None = None,
                     stop: Stop | None = None) -> int:
    """:func:`measure` in a child process (``spawn``) writing the store at ``store_path``; call from a worker
    thread. ``stop`` ends the child (what it measured so far is saved every 25 clips). Returns how many clips it
    measured; raises RuntimeError with the child's error."""
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    child = context.Process(target=_child_main, args=(theirs, list(requests), str(store_path)), daemon=True)
    child.start()
    theirs.close()
    try:
        while True:
            if stop is not None and stop():
                child.terminate()
                return 0
            if not ours.poll(0.2):
                if not child.is_alive() and not ours.poll(0):
                    raise RuntimeError(f"The speaker check stopped unexpectedly (exit code {child.exitcode}).")
                continue
            kind, *values = ours.recv()
            if kind == "progress" and progress is not None:
                progress(*values)
            elif kind == "done":
                return int(values[0])
            elif kind == "error":
                raise RuntimeError(str(values[0]))
    finally:
        child.join(5)
        if child.is_alive():
            child.kill()
        ours.close()


def _child_main(connection: Any, requests: list[Request], store_path: str) -> None:
    try:
        store = SpeakerStore(Path(store_path))
        store.reload()
        done = measure(requests, store, progress=lambda i, n: connection.send(("progress", i, n)))
        connection.send(("done", done))
    except Exception as exc:  # noqa: BLE001 - told to the parent, in words
        connection.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        connection.close()
