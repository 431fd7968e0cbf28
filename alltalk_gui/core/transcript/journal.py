"""segments.json plus its edit journal: each edit is on disk when it returns, without rewriting the whole file.

Rewriting segments.json after every edit costs time in proportion to the number of clips (about 30 ms at 1,000
clips with word timings, and the fsync on top), on the GUI thread. Instead, :class:`SegmentStore.append` writes
one line to ``segments.journal`` beside it (the ids the edit removed and the clips it put, as JSON) and returns.
A ``write()`` that returned is in the operating system's page cache, so killing the app (even ``kill -9``) keeps
every edit that was reported as saved. A background thread then folds the journal into segments.json a moment
later (atomic replace with fsync, see :mod:`alltalk_gui.core.atomic`) and drops the lines it folded in. A power
cut can lose the edits of about the last second (the journal is not fsynced line by line; the snapshot is).

The snapshot names its journal: ``"journal": {"id": ..., "seq": N}``. A journal line applies only when it
carries the same id and a sequence number above N, so a stale journal (another transcript replaced the file)
is ignored. :func:`read_lines` and :func:`replay` are how every reader sees the edits not yet folded in; read the
journal *before* the snapshot (see :func:`alltalk_gui.core.transcript.segments.read_file`), because a
compaction in between then only makes the snapshot newer, never the journal shorter than needed.

Nothing here knows what a clip means: clips are JSON objects with an ``"id"``, ordered by keys the caller gives.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import threading
import time
import uuid
import weakref
from pathlib import Path
from typing import Any, Callable

from alltalk_gui.core import atomic

SUFFIX = ".journal"
COMPACT_AFTER_IDLE_S = 1.0   # fold the journal in once edits pause this long...
COMPACT_AFTER_LINES = 500    # ...or when this many lines wait, even during a burst of edits


class Retry(Exception):
    """The journal and the snapshot were read across a compaction; read both again."""


def journal_path(snapshot: Path) -> Path:
    return snapshot.with_name(snapshot.name + SUFFIX)


def new_journal_id() -> str:
    return uuid.uuid4().hex[:12]


def read_lines(snapshot: Path) -> list[str]:
    """The journal's lines (empty when there is none). Read it before the snapshot."""
    try:
        return journal_path(snapshot).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError):
        return []  # an unreadable journal loses its edits but never the snapshot


def replay(data: dict[str, Any], lines: list[str]) -> int:
    """Apply the journal ``lines`` that belong to snapshot ``data`` to ``data["segments"]`` in place.

    Lines from another journal id, or already folded in (seq <= the snapshot's), are skipped; a torn or
    malformed line is skipped too (a power cut mid-line), and replay stops at the first gap in the sequence
    numbers after it. Returns the sequence number of the last line applied (the snapshot's when none).

    Raises:
        Retry: the first line after the snapshot is missing while later ones are there: the journal was read
            before a compaction and the snapshot after another; read both again.
    """
    head = data.get("journal") if isinstance(data.get("journal"), dict) else {}
    journal_id, seq = head.get("id"), head.get("seq", 0)
    if not isinstance(seq, int):
        return 0  # a hand-edited head: the journal cannot be placed, the snapshot stands alone
    if journal_id is None:
        return seq  # written before journals existed, or by create(): no line belongs to it
    entries = []
    for line in lines:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if _well_formed(entry) and entry["id"] == journal_id and entry["seq"] > seq:
            entries.append(entry)
    if entries and entries[0]["seq"] != seq + 1:
        raise Retry
    clips = {str(c.get("id")): c for c in data["segments"] if isinstance(c, dict)}
    others = [c for c in data["segments"] if not isinstance(c, dict)]  # left for the validator to refuse
    for entry in entries:
        if entry["seq"] != seq + 1:
            break
        for clip_id in entry["remove"]:
            clips.pop(clip_id, None)
        for clip in entry["put"]:
            clips[str(clip["id"])] = clip
        if isinstance(data.get("next_number"), int):
            data["next_number"] = max(data["next_number"], entry["next_number"])
        seq = entry["seq"]
    data["segments"] = list(clips.values()) + others
    data["journal"] = {"id": journal_id, "seq": seq}
    return seq


def _well_formed(entry: Any) -> bool:
    return (isinstance(entry, dict) and isinstance(entry.get("seq"), int) and isinstance(entry.get("next_number"), int)
            and isinstance(entry.get("remove"), list) and all(isinstance(i, str) for i in entry["remove"])
            and isinstance(entry.get("put"), list) and all(isinstance(c, dict) and "id" in c for c in entry["put"]))


def snapshot_text(head: dict[str, Any], clip_lines: list[str]) -> str:
    """segments.json's text: ``head`` indented, then one clip per line (readable, diff-friendly, quick to write:
    Python encodes indented JSON in pure Python, several times slower than one compact line per clip)."""
    head_text = json.dumps(head, indent=2, ensure_ascii=False)
    clips = ",\n    ".join(clip_lines)
    body = f'"segments": [\n    {clips}\n  ]' if clip_lines else '"segments": []'
    return f"{head_text[:-2]},\n  {body}\n}}\n"


def clip_line(clip: dict[str, Any]) -> str:
    return json.dumps(clip, ensure_ascii=False)


class SegmentStore:
    """Keeps one segments.json up to date: journal lines now, a compacted snapshot in the background.

    Args:
        path: segments.json.
        head: everything but the clips (settings, transcription, next_number); a ``journal`` key is added.
        clips: ``{clip id: (order key, clip)}`` as on disk now; a clip is anything ``to_json`` turns into a JSON
            object (serialised lazily, by the background thread, so creating a store costs no encoding).
        journal_id / seq: the snapshot's journal, as read (None: the file has none yet; the first append then
            writes a snapshot with one, synchronously, once).

    Thread-safe: :meth:`append` runs on the caller's thread (the GUI thread), compaction on a daemon thread.
    """

    def __init__(self, path: Path, head: dict[str, Any], clips: dict[str, tuple[Any, Any]],
                 to_json: Callable[[Any], dict[str, Any]], journal_id: str | None, seq: int) -> None:
        self.path = path
        self.journal = journal_path(path)
        self._to_json = to_json
        self._head = dict(head)
        self._clips: dict[str, tuple[Any, Any, str | None]] = {k: (key, c, None) for k, (key, c) in clips.items()}
        self._journal_id = journal_id
        self._seq = seq              # last line appended
        self._folded = seq           # last line contained in the snapshot on disk
        self._pending: list[tuple[int, str]] = []  # lines not yet folded in, with their seq
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._last_append = 0.0
        self._file: Any = None
        self._thread: threading.Thread | None = None
        self._closed = False
        self._keep_alive = False  # set by start(): the thread waits for the next edit instead of ending
        self.error: Exception | None = None  # the last background failure (the journal still holds the edits)
        _LIVE.add(self)

    # -- the caller's side -----------------------------------------------------------------------------------
    def position(self) -> dict[str, Any]:
        """``{"id": journal id, "seq": last line appended}``: where a new store for the same file carries on."""
        with self._lock:
            return {"id": self._journal_id, "seq": self._seq}

    def write_snapshot(self, journal_id: str | None = None, head: dict[str, Any] | None = None) -> None:
        """Write segments.json now, synchronously, and start a fresh journal (``create``, first edit of an old
        file, a new ``head``). Costs time in proportion to the clips."""
        with self._lock:
            self._head.update(head or {})
            self._journal_id = journal_id or self._journal_id or new_journal_id()
            self._write_snapshot_locked(self._seq, self._encoded_locked())
            self._pending = []
            self._reset_journal_locked()

    def append(self, remove: list[str], put: list[tuple[Any, Any]], head: dict[str, Any] | None = None) -> None:
        """Record one edit: clips ``remove``d by id and ``put`` ((order key, clip), replacing same ids); returns
        when the line is written. ``head`` updates the snapshot head (next_number).

        Raises:
            OSError: the journal could not be written; the edit is not recorded (undo it in memory).
        """
        encoded = [(key, clip, clip_line(self._to_json(clip))) for key, clip in put]
        if self._journal_id is None:
            self.write_snapshot()
        with self._lock:
            if self._closed:
                raise OSError(f"{self.path.name} is closed; the edit was not saved.")
            seq = self._seq + 1
            line = (f'{{"id": "{self._journal_id}", "seq": {seq}, "next_number": {int((head or self._head).get("next_number", 1))}, '
                    f'"remove": {json.dumps(remove)}, "put": [{", ".join(e[2] for e in encoded)}]}}\n')
            self._write_line_locked(line)
            self._seq = seq
            self._pending.append((seq, line))
            for clip_id in remove:
                self._clips.pop(clip_id, None)
            for key, clip, text in encoded:
                self._clips[self._id_of(text, clip)] = (key, clip, text)
            if head:
                self._head.update(head)
            self._last_append = time.monotonic()
            self._start_thread_locked()
            self._wake.notify()

    def start(self) -> None:
        """Start the background thread now and keep it until :meth:`close`. Starting a thread waits until it runs,
        which, while another thread holds the GIL (importing torch, say), took 13-120 ms: the GUI calls this when
        it opens a list, so no edit ever starts one."""
        with self._lock:
            self._keep_alive = True
            self._start_thread_locked()

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Fold the journal into segments.json now and wait for it; True when done within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            target = self._seq
            self.error = None
            self._last_append = 0.0  # no more waiting for a pause
            self._start_thread_locked()
            self._wake.notify_all()
            while self._folded < target:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._wake.wait(min(left, 0.5))
                if self.error is not None:
                    break
            return self._folded >= target

    def close(self) -> None:
        """Flush and stop the background thread; later appends raise OSError."""
        self.flush()
        with self._lock:
            self._closed = True
            self._wake.notify_all()
            if self._file is not None:
                self._file.close()
                self._file = None
        _LIVE.discard(self)

    # -- the background side ---------------------------------------------------------------------------------
    def _run(self) -> None:
        """Fold the journal in whenever it is due; the thread ends when nothing is left to fold (after
        :meth:`start`, when the store is closed)."""
        while True:
            with self._lock:
                while not self._closed:
                    if self._folded < self._seq:
                        if self._due_locked():
                            break
                        self._wake.wait(max(0.01, COMPACT_AFTER_IDLE_S - (time.monotonic() - self._last_append)))
                    elif self._keep_alive:
                        self._wake.wait()  # the next append or close notifies
                    else:
                        break
                if self._folded >= self._seq:
                    self._thread = None
                    self._wake.notify_all()
                    return
                seq, clips, head = self._seq, dict(self._clips), dict(self._head)
            try:
                self._compact(seq, clips, head)
                self.error = None
            except Exception as exc:  # noqa: BLE001 - the journal still holds every edit; try again later
                with self._lock:
                    self.error = exc
                    self._thread = None
                    self._wake.notify_all()
                return  # the next append (or flush) starts a new attempt

    def _due_locked(self) -> bool:
        return (len(self._pending) >= COMPACT_AFTER_LINES
                or time.monotonic() - self._last_append >= COMPACT_AFTER_IDLE_S)

    def _compact(self, seq: int, clips: dict[str, tuple[Any, Any, str | None]], head: dict[str, Any]) -> None:
        """Write the snapshot at ``seq`` from a copy of the clips (encoding the ones never encoded), then drop the
        journal lines it contains. Only the journal swap at the end holds the lock."""
        lines = []
        for clip_id, (key, clip, text) in sorted(clips.items(), key=lambda item: item[1][0]):
            if text is None:
                text = clip_line(self._to_json(clip))
                clips[clip_id] = (key, clip, text)
            lines.append(text)
        with self._lock:
            for clip_id, (key, clip, text) in clips.items():  # keep the encodings for the next compaction
                current = self._clips.get(clip_id)
                if current is not None and current[1] is clip and current[2] is None:
                    self._clips[clip_id] = (key, clip, text)
            journal_id = self._journal_id
        if not self._still_ours(journal_id):
            raise RuntimeError(f"{self.path.name} was replaced by another transcript; edits stay in "
                               f"{self.journal.name} only.")
        atomic.write_text(self.path, snapshot_text(_with_journal(head, journal_id, seq), lines))
        with self._lock:
            self._folded = max(self._folded, seq)
            self._pending = [(s, line) for s, line in self._pending if s > seq]
            self._reset_journal_locked()
            self._wake.notify_all()

    # -- internals -------------------------------------------------------------------------------------------
    def _encoded_locked(self) -> list[str]:
        lines = []
        for clip_id, (key, clip, text) in sorted(self._clips.items(), key=lambda item: item[1][0]):
            if text is None:
                text = clip_line(self._to_json(clip))
                self._clips[clip_id] = (key, clip, text)
            lines.append(text)
        return lines

    def _write_snapshot_locked(self, seq: int, lines: list[str]) -> None:
        atomic.write_text(self.path, snapshot_text(_with_journal(self._head, self._journal_id, seq), lines))
        self._folded = seq

    def _reset_journal_locked(self) -> None:
        """Replace the journal with the lines not yet folded in (usually none); atomic, so a kill keeps either."""
        if self._file is not None:
            self._file.close()
            self._file = None
        try:
            if self._pending:  # no fsync: this runs under the lock, and the lines were not fsynced before either
                tmp = self.journal.with_name(f".{self.journal.name}.tmp")
                tmp.write_text("".join(line for _seq, line in self._pending), encoding="utf-8")
                os.replace(tmp, self.journal)
            else:
                self.journal.unlink(missing_ok=True)
        except OSError:
            pass  # the old journal stays; its folded lines are skipped by seq

    def _write_line_locked(self, line: str) -> None:
        if self._file is None:
            self._file = open(self.journal, "a", encoding="utf-8")
        start = self._file.tell()
        try:
            self._file.write(line)
            self._file.flush()  # into the kernel now: this is what survives kill -9
        except OSError:
            try:  # a torn line would swallow the next one: cut it off
                self._file.close()
                os.truncate(self.journal, start)
            except OSError:
                pass
            self._file = None
            raise

    def _start_thread_locked(self) -> None:
        if self._thread is None and not self._closed:
            self._thread = threading.Thread(target=self._run, name=f"save {self.path.name}", daemon=True)
            self._thread.start()

    def _still_ours(self, journal_id: str | None) -> bool:
        try:
            with open(self.path, encoding="utf-8") as f:
                head = f.read(4096)
        except FileNotFoundError:
            return True
        except OSError:
            return True  # let the write report it
        found = re.search(r'"journal":\s*\{\s*"id":\s*"([0-9a-f]+)"', head)
        return found is None or found.group(1) == journal_id

    @staticmethod
    def _id_of(text: str, clip: Any) -> str:
        clip_id = getattr(clip, "id", None)
        return str(clip_id) if clip_id is not None else str(json.loads(text)["id"])


def _with_journal(head: dict[str, Any], journal_id: str | None, seq: int) -> dict[str, Any]:
    # The journal goes near the top, where _still_ours finds it without reading the whole file.
    first = {k: head[k] for k in ("schema_version",) if k in head}
    return {**first, "journal": {"id": journal_id, "seq": seq}, **{k: v for k, v in head.items() if k not in first}}


_LIVE: "weakref.WeakSet[SegmentStore]" = weakref.WeakSet()


@atexit.register
def _flush_all() -> None:
    """A normal exit folds every journal in (a killed process leaves the journal, which readers replay)."""
    for store in list(_LIVE):
        try:
            store.flush(timeout_s=10.0)
        except Exception:  # noqa: BLE001 - the journal keeps the edits
            pass
