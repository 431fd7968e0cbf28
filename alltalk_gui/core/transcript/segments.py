"""The transcript of a project as training clips: :class:`Segment` and the editable :class:`SegmentList`.

A segment is a span of one source's working audio plus the text spoken in it. The transcript editor (GUI) and
the ``segments`` command (CLI) both work on a :class:`SegmentList`, which

* offers every edit as a method (split, merge, trim/move, text, delete/restore, find and replace) that
  returns a :class:`Change`. A change holds the affected segments before and after, so undo is
  ``segment_list.undo(change)`` and redo ``segment_list.redo(change)`` - exactly what a ``QUndoCommand`` needs;
* recomputes the flags of the clips an edit can affect (the edited ones, and those whose duplicate-text
  original changed; see :mod:`alltalk_gui.core.transcript.flags` and :mod:`.duplicates`), so an edit costs the
  same at 50 clips and at 5,000;
* saves each edit before it returns as one line of ``segments.journal`` (see :mod:`.journal`), folded into
  ``segments.json`` by a background thread: killing the app at any moment loses at most the edit in progress,
  and the GUI thread never rewrites the whole file;
* tells subscribers about each change (plain callbacks; the Qt table model turns them into signals).

This module stays light to import (no torch, no Qt): the GUI imports it at start-up.
"""

from __future__ import annotations

import bisect
import json
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from alltalk_gui.core.audio.clips import AudioStats, ClipAudio, ClipAudioError
from alltalk_gui.core.transcript import journal
from alltalk_gui.core.transcript.duplicates import DuplicateIndex
from alltalk_gui.core.transcript.flags import (
    BLOCKING, OTHER_SPEAKER, ClipChecker, ClipFacts, Flag, another_voice, normalise_for_duplicates,
)
from alltalk_gui.core.engine_api.languages import is_spaced
from alltalk_gui.core.project.duration_guidance import Guidance, guidance

SCHEMA_VERSION = 1
CLIP_ID = re.compile(r"c\d{1,12}")
"""The only clip ids accepted from segments.json: the app's own form (c00001). Ids become file names on export."""
FILTERS = ("all", "kept", "flagged", "other_voice", "deleted")
SORT_KEYS = ("time", "duration", "text", "flags", "confidence")


class SegmentsError(Exception):
    """segments.json cannot be read or does not validate. It is never overwritten when this is raised."""


class SegmentEditError(ValueError):
    """An edit is impossible (unknown clip, split outside the clip, overlap...). Nothing was changed."""


@dataclass(frozen=True)
class Word:
    """One recognised word with its time span in the source (ms) and the recogniser's confidence (0-1)."""

    start_ms: int
    end_ms: int
    text: str
    probability: float = 1.0

    def to_list(self) -> list[Any]:
        return [self.start_ms, self.end_ms, self.text, round(self.probability, 4)]

    @classmethod
    def from_list(cls, data: list[Any]) -> "Word":
        start, end, text, probability = data
        return cls(int(start), int(end), str(text), float(probability))


@dataclass(frozen=True)
class Segment:
    """One training clip: ``[start_ms, end_ms)`` of source ``source_id`` and its text.

    ``words`` are the recogniser's word timings (hints for splitting; kept unchanged by text edits).
    ``flags`` are recomputed by the SegmentList after every edit; ``deleted`` clips stay in the list so that
    they can be restored, but are not exported. ``accepted`` names the warnings a person listened to and said
    "looks fine" to: they are not raised again for this clip (the blocking flags cannot be accepted).
    """

    id: str
    source_id: str
    start_ms: int
    end_ms: int
    text: str
    words: tuple[Word, ...] = ()
    no_speech_prob: float | None = None
    audio: AudioStats | None = None
    flags: tuple[Flag, ...] = ()
    deleted: bool = False
    accepted: tuple[str, ...] = ()

    @property
    def duration_ms(self) -> int:
        return self.end_ms - self.start_ms

    @property
    def flag_codes(self) -> tuple[str, ...]:
        return tuple(f.code for f in self.flags)

    @property
    def blocking_flags(self) -> tuple[Flag, ...]:
        """Flags that keep this clip out of a dataset (too long, empty text, unencodable)."""
        return tuple(f for f in self.flags if f.code in BLOCKING)

    def words_inside(self) -> tuple[Word, ...]:
        """Words whose middle lies inside the clip's current span."""
        return tuple(w for w in self.words if self.start_ms <= (w.start_ms + w.end_ms) // 2 < self.end_ms)

    @property
    def confidence(self) -> float | None:
        inside = self.words_inside()
        return sum(w.probability for w in inside) / len(inside) if inside else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "source_id": self.source_id, "start_ms": self.start_ms, "end_ms": self.end_ms,
            "text": self.text, "deleted": self.deleted,
            "flags": [f.to_dict() for f in self.flags],
            "no_speech_prob": self.no_speech_prob,
            "audio": self.audio.to_dict() if self.audio else None,
            "words": [w.to_list() for w in self.words],
            "accepted": list(self.accepted),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Segment":
        return cls(
            id=str(data["id"]), source_id=str(data["source_id"]), start_ms=int(data["start_ms"]),
            end_ms=int(data["end_ms"]), text=str(data["text"]), deleted=bool(data.get("deleted", False)),
            flags=tuple(Flag.from_dict(f) for f in data.get("flags", [])),
            no_speech_prob=None if data.get("no_speech_prob") is None else float(data["no_speech_prob"]),
            audio=AudioStats.from_dict(data["audio"]) if data.get("audio") else None,
            words=tuple(Word.from_list(w) for w in data.get("words", [])),
            accepted=_flag_codes(data.get("accepted", [])),
        )


def _flag_codes(value: Any) -> tuple[str, ...]:
    """A list of flag codes from segments.json (a malformed value raises, naming the clip in the caller)."""
    if not isinstance(value, list) or not all(isinstance(code, str) for code in value):
        raise TypeError(f"'accepted' must be a list of flag names, not {value!r}")
    return tuple(value)


def checker_for(project: Any, settings: dict[str, Any] | None = None,
                vocab_file: str | os.PathLike[str] | None = None) -> ClipChecker:
    """The flag checker of ``project``'s clips: its engine's, with the language and length range of ``settings``
    (segments.json's; the project's language and the engine's range where they say nothing). A saved range the
    engine cannot take (a minimum above its limit) gives way to the engine's own range."""
    settings = settings or {}
    language = settings.get("language", project.language)
    wanted = {k: float(settings[k]) for k in ("min_s", "max_s") if k in settings}
    try:
        return ClipChecker(project.engine, language, vocab_file=vocab_file, **wanted)
    except ValueError:  # e.g. a minimum above a new engine's limit: its own range rather than no list at all
        return ClipChecker(project.engine, language, vocab_file=vocab_file)


def join_words(words: Sequence[Word]) -> str:
    """The text of recognised words. Whisper gives each word its leading space (none in languages written
    without spaces), so joining as they are keeps both kinds right."""
    return " ".join("".join(w.text for w in words).split())


@dataclass(frozen=True)
class Change:
    """One edit: the segments it removed (``before``) and the ones it put in their place (``after``).

    Segments are matched by id. ``list.undo(change)`` puts ``before`` back; ``list.redo(change)`` applies it
    again. An edit that changed nothing has both tuples empty. ``reflagged`` names other clips whose flags the
    edit changed (a duplicate's original was edited): shown again, but not part of undo.
    """

    description: str
    before: tuple[Segment, ...] = ()
    after: tuple[Segment, ...] = ()
    reflagged: tuple[str, ...] = ()

    def inverse(self) -> "Change":
        return Change(f"Undo {self.description}", self.after, self.before)

    @property
    def is_empty(self) -> bool:
        return not self.before and not self.after

    @property
    def ids(self) -> set[str]:
        return {s.id for s in self.before} | {s.id for s in self.after} | set(self.reflagged)


@dataclass(frozen=True)
class Summary:
    clips: int               # all clips, deleted included
    kept: int                # not deleted
    deleted: int
    flagged: int             # kept clips with at least one flag
    blocked: int             # kept clips the dataset export would refuse
    kept_duration_s: float
    guidance: Guidance       # kept duration against the 3-10 minute guidance


@dataclass
class SegmentList:
    """The editable list of clips of one project. Build with :meth:`open` or :meth:`create`.

    Args:
        segments: the clips, any order (kept sorted by source, then start time).
        checker: computes flags for the project's engine; its language and length range are saved with the list.
        path: where to save (``project/segments.json``); None keeps the list in memory only (tests).
        audio: reads clip audio for the audio-based flags; None skips those flags.
        source_order: source ids in project order (sorting); source_names: id -> original file name.
        meta: how the list was made (backend, model, language...), saved as "transcription".

    Not thread-safe: use one list from one thread (the GUI thread); saving runs on a thread of its own. The
    first flag computation imports coqui's text cleaning (about 2 s); call :meth:`warm_up` from a worker thread
    beforehand to keep the first edit quick. Call :meth:`close` (or :meth:`flush`) when done with a list that was
    edited, to fold its journal into segments.json at once (a normal exit does it too).
    """

    segments: list[Segment]
    checker: ClipChecker
    path: Path | None = None
    audio: ClipAudio | None = None
    source_order: list[str] = field(default_factory=list)
    source_names: dict[str, str] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    next_number: int = 1
    read_only: bool = False  # the project is open read-only (another program holds its lock): edits are refused
    read_only_reason: str = ""  # why, in words (the project's read_only_reason)
    # Whose voice each clip holds (speaker_check.SpeakerCheck): the other_speaker flag; None leaves it out.
    speakers: Any = None
    main_voice: str | None = None  # a clip the user said holds their voice (the main speaker's), if any

    def __post_init__(self) -> None:
        self._listeners: list[Callable[[Change], None]] = []
        self._by_id = {s.id: s for s in self.segments}
        self._ranked: list[str] | None = None  # the source_order the ranks were computed for
        self._rank: dict[str, int] = {}
        self._sort()
        self._dups: DuplicateIndex | None = None  # built on the first edit
        self._store: journal.SegmentStore | None = None  # created on the first save
        self._journal_head: dict[str, Any] = {}  # the journal segments.json named when it was read
        self._checked_with: Any = self._checker_identity()  # what the saved flags were computed with
        # Set by check_text_in_background: clips whose text it has not answered yet are flagged without the text
        # check and noted here; finish_text_checks gives them their text flags once answered.
        self._text_source: Any = None
        self._on_answers: Callable[[], None] | None = None
        self._stop_listening: Callable[[], None] | None = None
        self._unchecked: set[str] = set()
        numbers = [int(m.group(1)) for s in self.segments if (m := re.fullmatch(r"c(\d+)", s.id))]
        self.next_number = max([self.next_number, *(n + 1 for n in numbers)])

    # -- construction and persistence ------------------------------------------------------------------------
    @classmethod
    def create(cls, project: Any, segments: Iterable[Segment], meta: dict[str, Any] | None = None,
               checker: ClipChecker | None = None, audio: ClipAudio | None = None) -> "SegmentList":
        """A new list for ``project`` (replacing any previous transcript), flagged and saved; ``checker`` defaults to
        the project's engine's for its language."""
        checker = checker or ClipChecker(project.engine, project.language)
        result = cls(list(segments), path=project.segments_file, checker=checker,
                     audio=audio if audio is not None else ClipAudio(project),
                     source_order=[s.id for s in project.sources],
                     source_names={s.id: s.name for s in project.sources}, meta=dict(meta or {}),
                     speakers=_speaker_check(project))
        result._refresh(set(result.ids()), {})
        result.save(fresh=True)
        return result

    @classmethod
    def open(cls, project: Any, checker: ClipChecker | None = None, audio: ClipAudio | None = None,
             vocab_file: str | os.PathLike[str] | None = None) -> "SegmentList":
        """Load ``project``'s segments.json; an empty list if the project has not been transcribed yet.

        The flags are judged for the project's engine (:attr:`VoiceProject.engine`), with the length range and
        language saved in the file; ``vocab_file`` (the engine's base-model vocabulary) makes its text check exact.
        Flags saved for another engine or range are stale until :meth:`recheck`
        (:meth:`is_checked_with_current_checker` says so).

        Raises:
            SegmentsError: the file is unreadable, not JSON, from a newer app or malformed (left untouched).
        """
        path = project.segments_file
        data = read_file(path) if path.exists() else {"segments": [], "settings": {}}
        settings = data.get("settings", {})
        if checker is None:
            checker = checker_for(project, settings, vocab_file)
        result = cls([Segment.from_dict(s) for s in data["segments"]], path=path, checker=checker,
                     audio=audio if audio is not None else ClipAudio(project),
                     source_order=[s.id for s in project.sources],
                     source_names={s.id: s.name for s in project.sources},
                     meta=data.get("transcription", {}), next_number=int(data.get("next_number", 1)),
                     read_only=bool(getattr(project, "read_only", False)),
                     read_only_reason=str(getattr(project, "read_only_reason", "")),
                     speakers=_speaker_check(project), main_voice=settings.get("main_voice"))
        result._journal_head = data.get("journal") or {}
        if result.speakers is not None:  # the main voice of the stored embeddings (milliseconds, no model)
            result.speakers.find_main_voice(result.segments, result.main_voice)
        if path.exists():  # no file yet: nothing was flagged, nothing to recheck (and no file to create)
            result._checked_with = data.get("checked_with")
        return result

    def to_dict(self) -> dict[str, Any]:
        return {**self._head(), "segments": [s.to_dict() for s in self.segments]}

    def _head(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "settings": {"language": self.checker.language, "min_s": self.checker.min_ms / 1000,
                         "max_s": self.checker.max_s,  # the wish: another engine may allow more of it
                         **({"main_voice": self.main_voice} if self.main_voice else {})},
            "transcription": self.meta,
            "next_number": self.next_number,
            "checked_with": self._checked_with,  # what every clip's flags were last computed with
        }

    def save(self, fresh: bool = False) -> None:
        """Write segments.json now, synchronously, with every edit in it (no-op for an in-memory list).

        Edits do not need this: each is journalled when it returns. ``fresh`` starts a new journal (a new
        transcript replaces the file, so lines of the old journal must no longer apply).
        """
        if self.path is None:
            return
        self._refuse_if_read_only()
        if self._store is not None:  # its mirror may predate changes made to ``segments`` directly: start anew
            self._store.close()
            self._journal_head = self._store.position()
            self._store = None
        self._storage().write_snapshot(journal.new_journal_id() if fresh else None)

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Fold the journal of this list's edits into segments.json now and wait; True when done."""
        return self._store.flush(timeout_s) if self._store is not None else True

    def close(self) -> None:
        """Flush and stop saving (later edits raise OSError), and end a background text check. Call when the list
        is no longer used."""
        if self._store is not None:
            self._store.close()
        if self._stop_listening is not None:
            self._stop_listening()  # the child stays for the next list of the same settings (text_check_process)
            self._stop_listening = None

    def _refuse_if_read_only(self) -> None:
        if self.read_only:
            raise SegmentEditError(f"The project is open read-only, so nothing was changed: {self.read_only_reason}"
                                   if self.read_only_reason else
                                   "The project is open read-only (another program holds it); nothing was changed.")

    def warm_up(self) -> None:
        """Load what the flag checks need (coqui's text cleaning, the vocabulary) now; safe from any thread."""
        self.checker.text_checker.warm_up()

    def check_text_in_background(self, on_answers: Callable[[], None] | None = None) -> None:
        """Answer the engine's text check in a child process from now on (:mod:`.text_check_process`): its first
        use imports coqui and torch (2-3 s), and an import in this process, even on another thread, stalls this
        one. An edit is then saved at once with its other flags and the clip is noted; :meth:`finish_text_checks`,
        called after ``on_answers`` (which comes from a background thread), adds its text flags. The GUI calls
        this when it opens a list; without it every edit checks the text at once (the CLI). :meth:`close` stops
        listening (the child serves the next list of the same settings)."""
        if self._text_source is not None:
            return
        from alltalk_gui.core.transcript.text_check_process import shared_check

        text = self.checker.text_checker
        self._text_source = shared_check(self.checker.engine.name, self.checker.language,
                                         getattr(text, "vocab_file", None))
        self._on_answers = on_answers  # kept for a checker of another engine (follow_engine)
        self._stop_listening = self._text_source.listen(on_answers) if on_answers is not None else None
        self.checker.text_checker = self._text_source

    @property
    def text_checks_pending(self) -> bool:
        """Some edited clips still wait for their text check's answer (a dataset export waits for them)."""
        return bool(self._unchecked)

    def finish_text_checks(self) -> Change:
        """Flag the clips whose text check has been answered since they were edited (call on the list's thread).
        Saves and notifies when a flag changed; not an edit to undo (the returned Change names the clips whose
        flags changed). Clips still unanswered stay noted."""
        source = self._text_source
        ids = sorted(i for i in self._unchecked if i in self._by_id and (source is None
                                                                          or source.known(self._by_id[i].text)))
        self._unchecked.difference_update(ids)
        self._unchecked.intersection_update(self._by_id)
        before = {i: self._by_id[i] for i in ids}
        dups = self._duplicates()
        changed = [i for i in ids if self._set_flags(self._by_id[i], dups)]
        change = Change("check text", tuple(before[i] for i in changed), tuple(self._by_id[i] for i in changed))
        if changed:
            self._journal([], list(change.after))
            for listener in list(self._listeners):
                listener(change)
        return change

    def prepare_edits(self) -> None:
        """Build what edits use (the duplicate-text index, the save mirror) now, on the list's own thread, so the
        first edit costs what the later ones cost (at 5,000 clips the index takes some 50 ms to build)."""
        self._check_order()
        self._duplicates()
        if self.path is not None:
            store = self._storage()
            if not self.read_only:
                store.start()  # its saving thread too: starting one can wait for the GIL

    def subscribe(self, callback: Callable[[Change], None]) -> Callable[[], None]:
        """Call ``callback(change)`` after every applied and saved change; returns a function that unsubscribes."""
        self._listeners.append(callback)
        return lambda: self._listeners.remove(callback)

    # -- queries ---------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.segments)

    def __iter__(self) -> Iterator[Segment]:
        return iter(self.segments)

    def __getitem__(self, segment_id: str) -> Segment:
        try:
            return self._by_id[segment_id]
        except KeyError:
            raise SegmentEditError(f"There is no clip {segment_id}.") from None

    def ids(self) -> list[str]:
        return [s.id for s in self.segments]

    def index_of(self, segment_id: str) -> int:
        self._check_order()
        return self._position(self[segment_id])

    def source_name(self, source_id: str) -> str:
        return self.source_names.get(source_id, source_id)

    def view(self, filter: str = "all", sort_by: str = "time", descending: bool = False) -> list[Segment]:
        """The clips to show: ``filter`` is all | kept | flagged (kept with flags) | other_voice (kept, flagged as
        another speaker's) | deleted; sorted by
        time (source order, then start) | duration | text | flags (most first) | confidence."""
        if filter not in FILTERS:
            raise ValueError(f"Unknown filter '{filter}'; use one of {', '.join(FILTERS)}.")
        if sort_by not in SORT_KEYS:
            raise ValueError(f"Unknown sort key '{sort_by}'; use one of {', '.join(SORT_KEYS)}.")
        self._check_order()
        chosen = [s for s in self.segments if filter == "all"
                  or (filter == "kept" and not s.deleted)
                  or (filter == "flagged" and not s.deleted and s.flags)
                  or (filter == "other_voice" and not s.deleted and OTHER_SPEAKER in s.flag_codes)
                  or (filter == "deleted" and s.deleted)]
        if sort_by == "time":  # the list's own order: no sort needed
            return chosen[::-1] if descending else chosen
        keys: dict[str, Callable[[Segment], Any]] = {
            "time": self._order_key,
            "duration": lambda s: s.duration_ms,
            "text": lambda s: s.text.casefold(),
            "flags": lambda s: -len(s.flags),
            "confidence": lambda s: s.confidence if s.confidence is not None else 2.0,
        }
        return sorted(chosen, key=keys[sort_by], reverse=descending)

    def find(self, needle: str, case_sensitive: bool = False, whole_word: bool = False,
             include_deleted: bool = False) -> list[str]:
        """Ids of the clips whose text contains ``needle``."""
        pattern = _pattern(needle, case_sensitive, whole_word)
        return [s.id for s in self.segments if (include_deleted or not s.deleted) and pattern.search(s.text)]

    def next_in_source(self, segment_id: str) -> Segment | None:
        """The clip after ``segment_id`` in the same source (deleted or not), or None at the end."""
        i = self.index_of(segment_id)
        if i + 1 < len(self.segments) and self.segments[i + 1].source_id == self.segments[i].source_id:
            return self.segments[i + 1]
        return None

    def previous_in_source(self, segment_id: str) -> Segment | None:
        i = self.index_of(segment_id)
        if i > 0 and self.segments[i - 1].source_id == self.segments[i].source_id:
            return self.segments[i - 1]
        return None

    def summary(self) -> Summary:
        kept = flagged = blocked = kept_ms = 0
        for s in self.segments:  # one plain pass: the editor asks after every edit
            if s.deleted:
                continue
            kept += 1
            kept_ms += s.end_ms - s.start_ms
            if s.flags:
                flagged += 1
                blocked += any(f.code in BLOCKING for f in s.flags)
        seconds = kept_ms / 1000
        return Summary(clips=len(self.segments), kept=kept, deleted=len(self.segments) - kept, flagged=flagged,
                       blocked=blocked, kept_duration_s=seconds, guidance=guidance(seconds))

    def suggest_split(self, segment_id: str) -> tuple[int, int]:
        """Where to split a clip: (time in ms, character position) at the longest pause between its words.

        When the words no longer match the (edited) text, the time is the middle of the clip and the text is
        split at the space nearest its middle.
        """
        segment = self[segment_id]
        words = segment.words_inside()
        if len(words) >= 2 and _words_match(words, segment.text):
            gaps = [(words[i + 1].start_ms - words[i].end_ms, i) for i in range(len(words) - 1)]
            gap, i = max(gaps)
            at_ms = (words[i].end_ms + words[i + 1].start_ms) // 2
            return at_ms, _char_after_words(segment.text, i + 1)
        middle = len(segment.text) // 2
        # At a space; in text without spaces (Chinese, Japanese) just after a punctuation mark.
        spaces = [m.start() for m in re.finditer(r"\s|(?<=[。！？，、；：])", segment.text)]
        char = min(spaces, key=lambda p: abs(p - middle)) if spaces else middle
        return (segment.start_ms + segment.end_ms) // 2, char

    # -- edits: each returns the Change it made, already flagged, saved and announced ------------------------
    def set_text(self, segment_id: str, text: str) -> Change:
        old = self[segment_id]
        text = " ".join(text.split())
        if text == old.text:
            return Change("edit text")
        return self._commit(Change(f"edit text of {segment_id}", (old,), (replace(old, text=text),)))

    def split(self, segment_id: str, at_ms: int, char_pos: int) -> Change:
        """Split a clip at ``at_ms`` (inside it) with its text split at character ``char_pos``.

        The first part keeps the id; the second gets a new one. Words go to the side their middle falls on.
        """
        old = self[segment_id]
        if not old.start_ms < at_ms < old.end_ms:
            raise SegmentEditError(f"Cannot split clip {segment_id} at {at_ms / 1000:.2f} s: the split must lie "
                                   f"inside it ({old.start_ms / 1000:.2f}-{old.end_ms / 1000:.2f} s).")
        if not 0 <= char_pos <= len(old.text):
            raise SegmentEditError(f"Cannot split the text of clip {segment_id} at character {char_pos}: it has "
                                   f"{len(old.text)} characters.")
        left_words = tuple(w for w in old.words if (w.start_ms + w.end_ms) // 2 < at_ms)
        right_words = tuple(w for w in old.words if (w.start_ms + w.end_ms) // 2 >= at_ms)
        first = replace(old, end_ms=at_ms, text=old.text[:char_pos].strip(), words=left_words)
        second = replace(old, id=self._new_id(), start_ms=at_ms, text=old.text[char_pos:].strip(),
                         words=right_words)
        return self._commit(Change(f"split {segment_id}", (old,), (first, second)))

    def merge_with_next(self, segment_id: str) -> Change:
        """Join a clip with the next kept clip of the same source (its text appended with a space).

        Raises:
            SegmentEditError: no next clip in this source, or a deleted clip lies between (its audio would be
            inside the merged clip: restore it or trim first).
        """
        first = self[segment_id]
        following = self.next_in_source(segment_id)
        if following is None:
            raise SegmentEditError(f"Clip {segment_id} is the last of '{self.source_name(first.source_id)}'; "
                                   "there is nothing after it to merge with.")
        if following.deleted:
            raise SegmentEditError(f"The clip after {segment_id} ({following.id}) is deleted; restore it to merge, "
                                   "or trim instead.")
        space = " " if is_spaced(self.checker.language) else ""  # Chinese and Japanese join without one
        text = f"{first.text}{space}{following.text}".strip()
        probs = [p for p in (first.no_speech_prob, following.no_speech_prob) if p is not None]
        merged = replace(first, end_ms=following.end_ms, text=text, words=first.words + following.words,
                         no_speech_prob=min(probs) if probs else None)
        return self._commit(Change(f"merge {segment_id} with {following.id}", (first, following), (merged,)))

    def set_bounds(self, segment_id: str, start_ms: int | None = None, end_ms: int | None = None) -> Change:
        """Trim or extend a clip (either end); it may not overlap a kept neighbour or leave its source."""
        old = self[segment_id]
        start = old.start_ms if start_ms is None else int(start_ms)
        end = old.end_ms if end_ms is None else int(end_ms)
        if start < 0 or end <= start:
            raise SegmentEditError(f"Clip {segment_id} cannot run from {start / 1000:.2f} s to {end / 1000:.2f} s: "
                                   "the start must be at least 0 and before the end.")
        limit = self._source_duration_ms(old.source_id)
        if limit is not None and end > limit:
            raise SegmentEditError(f"Clip {segment_id} cannot end at {end / 1000:.2f} s: "
                                   f"'{self.source_name(old.source_id)}' is only {limit / 1000:.2f} s long.")
        for other in self.segments:
            if (other.id != segment_id and not other.deleted and other.source_id == old.source_id
                    and other.start_ms < end and start < other.end_ms):
                raise SegmentEditError(f"Clip {segment_id} would overlap clip {other.id} "
                                       f"({other.start_ms / 1000:.2f}-{other.end_ms / 1000:.2f} s).")
        if (start, end) == (old.start_ms, old.end_ms):
            return Change("trim")
        return self._commit(Change(f"trim {segment_id}", (old,), (replace(old, start_ms=start, end_ms=end),)))

    def move(self, segment_id: str, delta_ms: int) -> Change:
        """Shift both ends of a clip by ``delta_ms`` (same checks as :meth:`set_bounds`)."""
        old = self[segment_id]
        return self.set_bounds(segment_id, old.start_ms + delta_ms, old.end_ms + delta_ms)

    def delete(self, segment_id: str) -> Change:
        """Mark a clip deleted (kept in the file, left out of the dataset, restorable)."""
        old = self[segment_id]
        if old.deleted:
            return Change("delete")
        return self._commit(Change(f"delete {segment_id}", (old,), (replace(old, deleted=True),)))

    def accept_flags(self, segment_id: str) -> Change:
        """A person listened and the clip "looks fine": its warnings (not the flags that keep it out of a dataset)
        are accepted and not raised again for it. Undoable like every edit."""
        old = self[segment_id]
        warnings = tuple(code for code in old.flag_codes if code not in BLOCKING and code not in old.accepted)
        if not warnings:
            return Change("accept")
        return self._commit(Change(f"mark {segment_id} as fine", (old,),
                                   (replace(old, accepted=old.accepted + warnings),)))

    def restore(self, segment_id: str) -> Change:
        """Bring a deleted clip back; refused if a kept clip now overlaps it."""
        old = self[segment_id]
        if not old.deleted:
            return Change("restore")
        for other in self.segments:
            if (not other.deleted and other.source_id == old.source_id
                    and other.start_ms < old.end_ms and old.start_ms < other.end_ms):
                raise SegmentEditError(f"Cannot restore clip {segment_id}: clip {other.id} now covers part of its "
                                       "audio. Trim that clip first.")
        return self._commit(Change(f"restore {segment_id}", (old,), (replace(old, deleted=False),)))

    def replace_all(self, needle: str, replacement: str, case_sensitive: bool = False, whole_word: bool = False,
                    include_deleted: bool = False) -> Change:
        """Replace ``needle`` by ``replacement`` in every clip's text; one Change covering all of them."""
        if not needle:
            raise SegmentEditError("Type the text to find.")
        pattern = _pattern(needle, case_sensitive, whole_word)
        before, after = [], []
        for segment in self.segments:
            if segment.deleted and not include_deleted:
                continue
            text = " ".join(pattern.sub(lambda _m: replacement, segment.text).split())
            if text != segment.text:
                before.append(segment)
                after.append(replace(segment, text=text))
        if not before:
            return Change("replace")
        return self._commit(Change(f"replace '{needle}' with '{replacement}' in {len(before)} clip(s)",
                                   tuple(before), tuple(after)))

    def is_checked_with_current_checker(self) -> bool:
        """Whether the saved flags were computed with this list's checker (language, length range, the same
        vocab.json). Then :meth:`recheck` would change nothing, and listing needs no text check at all (which
        imports coqui and torch, seconds)."""
        return self._checked_with == self._checker_identity()

    def set_recognition(self, segment_id: str, words: Sequence[Word],
                        windows: Sequence[tuple[int, int, float]]) -> Change:
        """Put a re-transcription of one clip into it: its words (on the source's timeline), their text, and the
        recogniser's lowest no-speech probability over ``windows`` (its own segments: start, end, probability)."""
        old = self[segment_id]
        probs = [p for _start, _end, p in windows]
        new = replace(old, text=join_words(words), words=tuple(words),
                      no_speech_prob=min(probs) if probs else old.no_speech_prob)
        return self._commit(Change(f"re-transcribe {segment_id}", (old,), (new,)))

    def follow_engine(self, engine: str, vocab_file: str | os.PathLike[str] | None = None, *,
                      complete: bool = False, notify: bool = True) -> Change:
        """Judge the clips for ``engine`` (the project's, after a switch, or when the list was made for another): its
        checker, with this list's language and length range, then :meth:`recheck` if the flags were judged under
        other terms. Returns the clips whose flags changed (nothing to undo: the clips themselves do not change).

        A list whose text check answers in the background (:meth:`check_text_in_background`) keeps doing so with
        the new engine's check; its text flags then follow as answers come, unless ``complete``: then the text is
        checked here, now, every flag is final when this returns (a dataset export follows; call it off the GUI
        thread, the check may import torch). ``notify`` False leaves telling the listeners to the caller
        (:meth:`announce`, on the list's thread)."""
        background, on_answers = self._text_source is not None, self._on_answers
        if self.checker.engine.name != engine or vocab_file is not None or (background and complete):
            if background:
                self._stop_background()
            self.checker = self.checker.for_engine(engine, vocab_file)
            if background and not complete:
                self.check_text_in_background(on_answers)
        change = Change("recheck flags") if self.is_checked_with_current_checker() else self.recheck(notify=notify)
        if background and complete:
            self._unchecked.clear()  # every text was checked here
            self.check_text_in_background(on_answers)
        return change

    def announce(self, change: Change) -> None:
        """Tell the listeners about ``change`` (made with ``notify=False`` on another thread)."""
        if not change.is_empty:
            for listener in list(self._listeners):
                listener(change)

    def _stop_background(self) -> None:
        if self._stop_listening is not None:
            self._stop_listening()
        self._text_source = self._stop_listening = None

    def recheck(self, notify: bool = True) -> Change:
        """Recompute every clip's flags with the current checker (e.g. after a base model was chosen, whose
        vocabulary makes the text check exact). Saves and notifies (unless ``notify`` is False) only if some flag
        changed. Not an edit to undo: the returned Change lists the clips whose flags changed."""
        before = {s.id: s for s in self.segments}
        self._refresh(set(), {})
        changed = [s for s in self.segments if s.flags != before[s.id].flags]
        change = Change("recheck flags", tuple(before[s.id] for s in changed), tuple(changed))
        if changed:
            self._journal([], changed)
        if not self.is_checked_with_current_checker():
            self._checked_with = self._checker_identity()
            if self.path is not None:
                self._storage().write_snapshot(head=self._head())  # once per new checker: record it
        if changed and notify:
            self.announce(change)
        return change

    # -- the speaker check (speaker_check.py) ----------------------------------------------------------------
    def speakers_to_measure(self) -> list[Any]:
        """The kept clips whose voice is not measured yet (``speaker_check.Request``s; none when the check is off)."""
        return self.speakers.missing(self.segments) if self.speakers is not None else []

    def speakers_measured(self, notify: bool = True) -> Change:
        """The project's speaker embeddings were measured (by a worker or a child process): read them, find the main
        voice again and reflag every clip. Not an edit to undo; the Change names the clips whose flags changed."""
        if self.speakers is None:
            return Change("speaker check")
        self.speakers.store.reload()
        return self.recheck(notify=notify)

    def refresh_speaker_flags(self, notify: bool = True) -> Change:
        """Reflag the clips if their ``other_speaker`` flags do not match the stored embeddings (measured while the
        list was closed, or by another program); otherwise nothing (a look at each clip, no flag computed)."""
        if self.speakers is None:
            return Change("speaker check")
        main = self.speakers.main
        for s in self.segments:
            if s.deleted:
                continue
            expected = (another_voice(main.likeness(self.speakers.embedding(s)), self.speakers.voice_seconds(s))
                        and OTHER_SPEAKER not in s.accepted)
            if expected != (OTHER_SPEAKER in s.flag_codes):
                return self.recheck(notify=notify)
        return Change("speaker check")

    def speaker_status(self) -> str:
        """One line about the speaker check: off and why, still measuring, two voices of equal share, or its result."""
        return self.speakers.status(self.segments) if self.speakers is not None else ""

    def choose_main_voice(self, segment_id: str | None) -> Change:
        """The user says clip ``segment_id`` holds their voice (None: let the clips decide again): the main voice is
        found from it, and clips of other voices are flagged. Saved with the list; not an edit to undo."""
        self._refuse_if_read_only()
        if segment_id is not None:
            segment = self[segment_id]
            if self.speakers is None or self.speakers.embedding(segment) is None:
                raise SegmentEditError(f"The voice of clip {segment_id} has not been measured (too short, silent, or "
                                       "the speaker check is off or still measuring); choose another clip.")
        self.main_voice = segment_id
        change = self.recheck(notify=True)
        if self.path is not None:
            self._storage().write_snapshot(head=self._head())
        return change

    def undo(self, change: Change) -> Change:
        """Reverse ``change`` (which must be the latest change to its clips); returns the inverse applied."""
        return self._commit(change.inverse())

    def redo(self, change: Change) -> Change:
        return self._commit(change)

    # -- internals -------------------------------------------------------------------------------------------
    def _commit(self, change: Change) -> Change:
        """Apply a change, recompute the flags it can affect, journal it, tell subscribers. All or nothing in
        memory and on disk. Costs O(clips touched + their duplicate groups), plus O(log n) list positions."""
        if change.is_empty:
            return change
        self._refuse_if_read_only()
        for old in change.before:
            if old.id not in self._by_id:
                raise SegmentEditError(f"Clip {old.id} is no longer in the list; this change cannot be applied.")
        added_ids = {s.id for s in change.after} - {s.id for s in change.before}
        clash = added_ids & self._by_id.keys()
        if clash:
            raise SegmentEditError(f"Clip(s) {', '.join(sorted(clash))} already exist; this change cannot be "
                                   "applied.")
        self._check_order()
        dups = self._duplicates()
        saved = (list(self.segments), self.next_number)
        previous = {s.id: self._by_id[s.id] for s in change.before}
        try:
            keys: set[str] = set()
            old_first: dict[str, str | None] = {}
            for old in previous.values():
                self._take_out(old, dups, keys, old_first)
            for new in change.after:
                self._put_in(replace(new, audio=self._measure(new, previous.get(new.id))), dups, keys, old_first)
            after_ids = [s.id for s in change.after]
            reflagged = self._reflag(after_ids, keys, old_first, dups)
            put = [self._by_id[i] for i in after_ids] + [self._by_id[i] for i in reflagged]
            self._journal([i for i in previous if i not in self._by_id], put)
        except BaseException:
            self.segments, self.next_number = saved
            self._by_id = {s.id: s for s in self.segments}
            self._dups = None  # rebuilt on the next edit
            raise
        applied = Change(change.description, change.before, tuple(self._by_id[i] for i in after_ids),
                         tuple(reflagged))
        for listener in list(self._listeners):
            listener(applied)
        return applied

    def _take_out(self, segment: Segment, dups: DuplicateIndex, keys: set[str],
                  old_first: dict[str, str | None]) -> None:
        del self.segments[self._position(segment)]
        del self._by_id[segment.id]
        self._note_key(segment, dups, keys, old_first)
        dups.remove(segment.id)

    def _put_in(self, segment: Segment, dups: DuplicateIndex, keys: set[str],
                old_first: dict[str, str | None]) -> None:
        self._note_key(segment, dups, keys, old_first)
        bisect.insort(self.segments, segment, key=self._order_key)
        self._by_id[segment.id] = segment
        if not segment.deleted:
            dups.add(self._order_key(segment), segment.id, segment.text)

    @staticmethod
    def _note_key(segment: Segment, dups: DuplicateIndex, keys: set[str], old_first: dict[str, str | None]) -> None:
        """Remember a text group the edit touches, and its original before the edit."""
        key = normalise_for_duplicates(segment.text)
        if key and key not in old_first:
            old_first[key] = dups.first(key)
        if key:
            keys.add(key)

    def _reflag(self, edited: list[str], keys: set[str], old_first: dict[str, str | None],
                dups: DuplicateIndex) -> list[str]:
        """Recompute the flags of the edited clips, and of the clips whose duplicate original changed; returns
        the ids of the latter whose flags changed."""
        for clip_id in edited:
            self._set_flags(self._by_id[clip_id], dups)
        others = []
        edited_set = set(edited)
        for key in keys:
            if dups.first(key) == old_first.get(key):
                continue  # same original: the other members' flags still name it
            for clip_id in dups.members(key):
                if clip_id not in edited_set and self._set_flags(self._by_id[clip_id], dups):
                    others.append(clip_id)
        return others

    def _set_flags(self, segment: Segment, dups: DuplicateIndex) -> bool:
        flags = self._flags_for(segment, dups.duplicate_of(segment.id))
        if flags == segment.flags:
            return False
        updated = replace(segment, flags=flags)
        self.segments[self._position(segment)] = updated
        self._by_id[segment.id] = updated
        return True

    def _flags_for(self, segment: Segment, duplicate_of: str | None) -> tuple[Flag, ...]:
        inside = segment.words_inside()
        audio = segment.audio
        facts = ClipFacts(
            duration_ms=segment.duration_ms, text=segment.text,
            word_probabilities=tuple(w.probability for w in inside), no_speech_prob=segment.no_speech_prob,
            peak=audio.peak if audio else None, clipped_fraction=audio.clipped_fraction if audio else None,
            flatness=audio.flatness if audio else None, low_energy_ratio=audio.low_energy_ratio if audio else None,
            # All its recognised words, not only those inside: a trim changes the span, not the text.
            text_corrected=bool(segment.words) and _norm(join_words(segment.words)) != _norm(segment.text),
            speaker_likeness=self.speakers.likeness(segment) if self.speakers is not None else None,
            speaker_voice_s=self.speakers.voice_seconds(segment) if self.speakers is not None else None)
        source = self._text_source
        check_text = source is None or source.known(segment.text)
        if not check_text:  # asked for now, answered in the background (check_text_in_background)
            self._unchecked.add(segment.id)
            source.request([segment.text])
        flags = self.checker.flags(facts, duplicate_of, check_text=check_text)
        return tuple(f for f in flags if f.code in BLOCKING or f.code not in segment.accepted)

    def _refresh(self, touched: set[str], previous: dict[str, Segment]) -> None:
        """Re-measure the audio of touched clips whose span changed, then recompute every clip's flags (a new
        list, or a new checker; edits use the incremental path in :meth:`_commit`)."""
        for i, segment in enumerate(self.segments):
            if segment.id in touched:
                self.segments[i] = replace(segment, audio=self._measure(segment, previous.get(segment.id)))
        self._check_order()
        if self.speakers is not None:  # the main voice of the clips as they are now
            self.speakers.find_main_voice(self.segments, self.main_voice)
        dups = self._dups = DuplicateIndex((self._order_key(s), s.id, s.text) for s in self.segments if not s.deleted)
        for i, segment in enumerate(self.segments):
            flags = self._flags_for(segment, dups.duplicate_of(segment.id))
            if flags != segment.flags:
                self.segments[i] = replace(segment, flags=flags)
        self._by_id = {s.id: s for s in self.segments}

    def _duplicates(self) -> DuplicateIndex:
        if self._dups is None:
            self._dups = DuplicateIndex((self._order_key(s), s.id, s.text) for s in self.segments if not s.deleted)
        return self._dups

    def _checker_identity(self) -> dict[str, Any]:
        checker = getattr(self, "checker", None)
        text = getattr(checker, "text_checker", None)
        vocab = getattr(text, "vocab_file", None)
        engine = getattr(checker, "engine", None)
        identity: dict[str, Any] = {"engine": getattr(engine, "name", None),
                                    "language": getattr(checker, "language", None),
                                    "min_ms": getattr(checker, "min_ms", None),
                                    "max_ms": getattr(checker, "max_ms", None), "vocab": None}
        if vocab is not None:
            try:
                stat = Path(vocab).stat()
                identity["vocab"] = [str(Path(vocab).resolve()), stat.st_size, stat.st_mtime_ns]
            except OSError:
                identity["vocab"] = [str(vocab)]
        return identity

    def _journal(self, removed: list[str], put: list[Segment]) -> None:
        if self.path is not None:
            self._storage().append(removed, [(self._order_key(s), s) for s in put],
                                   {"next_number": self.next_number})

    def _storage(self) -> journal.SegmentStore:
        assert self.path is not None
        if self._store is None:
            self._store = journal.SegmentStore(
                self.path, self._head(), {s.id: (self._order_key(s), s) for s in self.segments}, Segment.to_dict,
                self._journal_head.get("id"), int(self._journal_head.get("seq", 0)))
        return self._store

    def _measure(self, segment: Segment, previous: Segment | None) -> AudioStats | None:
        same_span = (previous is not None and previous.source_id == segment.source_id
                     and (previous.start_ms, previous.end_ms) == (segment.start_ms, segment.end_ms))
        if same_span and previous is not None and previous.audio is not None:
            return previous.audio
        if self.audio is None:
            return segment.audio if same_span else None
        try:
            return self.audio.stats(segment.source_id, segment.start_ms, segment.end_ms)
        except ClipAudioError:
            return None  # audio gone: the audio-based flags cannot be computed; text edits still work

    def _source_duration_ms(self, source_id: str) -> int | None:
        if self.audio is None:
            return None
        try:
            return self.audio.duration_ms(source_id)
        except ClipAudioError:
            return None

    def _new_id(self) -> str:
        self.next_number += 1
        return new_segment_id(self.next_number - 1)

    def _order_key(self, segment: Segment) -> tuple[int, str, int, str]:
        return self._rank.get(segment.source_id, len(self._rank)), segment.source_id, segment.start_ms, segment.id

    def _position(self, segment: Segment) -> int:
        """Where ``segment`` (as in the list) sits, by binary search on the order key."""
        i = bisect.bisect_left(self.segments, self._order_key(segment), key=self._order_key)
        if i < len(self.segments) and self.segments[i].id == segment.id:
            return i
        raise SegmentEditError(f"There is no clip {segment.id}.")

    def _check_order(self) -> None:
        """Re-sort when the project's source order changed (the page updates ``source_order`` in place)."""
        if self._ranked != self.source_order:
            self._sort()
            if self._dups is not None:
                self._dups = None  # order keys changed: rebuilt on the next edit

    def _sort(self) -> None:
        self._ranked = list(self.source_order)
        self._rank = {source_id: rank for rank, source_id in enumerate(self.source_order)}
        self.segments.sort(key=self._order_key)


def _speaker_check(project: Any) -> Any:
    """The speaker check of ``project``'s clips: its stored embeddings (imported here: lists made in memory by
    tests and tools need none)."""
    from alltalk_gui.core.transcript.speaker_check import SpeakerCheck

    return SpeakerCheck.for_project(project)


def new_segment_id(number: int) -> str:
    """The id of the ``number``-th clip of a fresh list (c00001, c00002...)."""
    return f"c{number:05d}"


def read_file(path: Path) -> dict[str, Any]:
    """Read and validate segments.json, with the edits of its journal applied (see :mod:`.journal`).

    Raises:
        SegmentsError: with the file name and what is wrong; the file is left as it is.
    """
    for _attempt in range(5):
        lines = journal.read_lines(path)  # before the snapshot: a compaction in between only makes it newer
        try:
            return _read_snapshot(path, lines)
        except journal.Retry:
            continue  # read across a compaction: read both again
    raise SegmentsError(f"{path} keeps changing while being read; try again.")


def _read_snapshot(path: Path, journal_lines: list[str]) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise SegmentsError(f"Cannot read {path}: {exc}. The file was left as it is.") from exc
    except json.JSONDecodeError as exc:
        raise SegmentsError(f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}). It was "
                            "left as it is; fix it by hand or transcribe again.") from exc
    if not isinstance(data, dict) or not isinstance(data.get("segments"), list):
        raise SegmentsError(f"{path} must hold an object with a 'segments' list. It was left as it is.")
    version = data.get("schema_version", 1)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise SegmentsError(f"{path} was written by a newer AllTalk GUI (schema {version}); update the app. It was "
                            "left as it is.")
    _check_types(path, data)
    journal.replay(data, journal_lines)  # the edits not yet folded in; validated below like the rest
    seen: set[str] = set()
    for number, item in enumerate(data["segments"], start=1):
        try:
            segment = Segment.from_dict(item)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SegmentsError(f"{path}: clip number {number} is malformed ({type(exc).__name__}: {exc}). The "
                                "file was left as it is.") from exc
        if segment.end_ms <= segment.start_ms or segment.start_ms < 0:
            raise SegmentsError(f"{path}: clip {segment.id} has an impossible span {segment.start_ms}-"
                                f"{segment.end_ms} ms. The file was left as it is.")
        if not CLIP_ID.fullmatch(segment.id):
            raise SegmentsError(f"{path}: clip number {number} has the id {segment.id!r}; clip ids are 'c' followed "
                                "by digits (c00001). The file was left as it is.")
        if segment.id in seen:
            raise SegmentsError(f"{path}: clip id {segment.id} appears twice. The file was left as it is.")
        seen.add(segment.id)
    return data


# Top-level fields besides "segments": name -> (accepted types, what to call them in a message).
_FIELD_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "settings": ((dict,), "an object"),
    "transcription": ((dict,), "an object"),
    "next_number": ((int,), "a whole number"),
}
_SETTING_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "language": ((str,), "a text"),
    "min_s": ((int, float), "a number"),
    "max_s": ((int, float), "a number"),
    "main_voice": ((str,), "a clip id"),
}


def _check_types(path: Path, data: dict[str, Any]) -> None:
    """Refuse fields of the wrong JSON type with a SegmentsError (bool is not accepted as a number)."""
    for where, fields, values in (("", _FIELD_TYPES, data), ("settings.", _SETTING_TYPES, data.get("settings", {}))):
        for key, (types, words) in fields.items():
            if key in values and (not isinstance(values[key], types) or isinstance(values[key], bool)):
                raise SegmentsError(f"{path}: '{where}{key}' must be {words}, found {type(values[key]).__name__}. "
                                    "The file was left as it is.")


def _pattern(needle: str, case_sensitive: bool, whole_word: bool) -> re.Pattern[str]:
    body = re.escape(needle)
    if whole_word:
        body = rf"(?<!\w){body}(?!\w)"
    return re.compile(body, 0 if case_sensitive else re.IGNORECASE)


def _norm(text: str) -> str:
    return re.sub(r"[^\w]", "", text.casefold())


def _words_match(words: tuple[Word, ...], text: str) -> bool:
    # Same letters and one recognised word per whitespace-separated token: word i is token i of the text.
    return len(words) == len(text.split()) and _norm("".join(w.text for w in words)) == _norm(text)


def _char_after_words(text: str, count: int) -> int:
    """Character position in ``text`` just after its ``count``-th whitespace-separated word."""
    spans = [m.end() for m in re.finditer(r"\S+", text)]
    return spans[count - 1] if 0 < count <= len(spans) else len(text)
