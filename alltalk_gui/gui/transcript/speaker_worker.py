"""Measuring whose voice each clip holds, off the GUI thread, for the Transcribe & Edit page.

After a transcript opens or is made, and shortly after edits that make new clip spans (a trim, a split), the
clips not yet measured go to a child process (``core.transcript.speaker_check.measure_in_child``: the encoder
imports torch, which would stall the GUI even from a thread of its own); a worker thread waits for it. When it is
done, the list reads the new embeddings and reflags its clips (``SegmentList.speakers_measured``), on the GUI
thread. :attr:`SpeakerMeasurer.changed` carries the line the page shows: off and why, how far measuring is, two
voices of equal share, or what was found.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from alltalk_gui.gui.common.wording import plural
from alltalk_gui.gui.common.failure import failure_message
from alltalk_gui.gui.common.workers import Worker

SETTLE_MS = 1500  # after an edit, wait this long for more edits before measuring the new spans


class SpeakerMeasurer(QObject):
    changed = Signal(str)  # the speaker check's line for the page
    # False: nothing is measured (the page shows what the store already holds). The GUI tests' conftest turns it off
    # for the pages they open, so that each does not start a child importing torch; its own tests turn it on.
    enabled = True

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.segments: Any = None
        self.worker: Worker | None = None
        self._unsubscribe: Any = None
        self._again = QTimer(self, singleShot=True, interval=SETTLE_MS)
        self._again.timeout.connect(self.measure)

    def follow(self, segments: Any) -> None:
        """Measure ``segments``' clips (None: none) now and after its edits."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self.segments = segments
        if segments is not None and not segments.read_only:
            self._unsubscribe = segments.subscribe(lambda _change: self._again.start())
        self.measure()

    def measure(self) -> None:
        segments = self.segments
        if segments is None:
            self.changed.emit("")
            return
        if self.worker is not None and self.worker.is_running():
            self._again.start()  # after this run: the edits made meanwhile
            return
        requests = [] if segments.read_only or not self.enabled else segments.speakers_to_measure()
        if not requests:
            if not segments.read_only:
                try:
                    segments.refresh_speaker_flags()  # measured while the list was closed
                except OSError as exc:
                    self.changed.emit(f"Speaker check: the clips' flags could not be saved: {exc}")
                    return
            self.changed.emit(segments.speaker_status())
            return
        from alltalk_gui.core.transcript.speaker_check import measure_in_child

        store_path = segments.speakers.store.path
        self.changed.emit(f"Speaker check: measuring the voice of {plural(len(requests), 'clip')}…")
        worker = Worker(lambda job: measure_in_child(
            requests, store_path, progress=lambda i, n: job.progress.emit(i, n, ""),
            stop=lambda: worker.cancel_event.is_set()), self)
        worker.progress.connect(lambda i, n, _label: self.changed.emit(
            f"Speaker check: measuring the voice of each clip, {i} of {n}…"))
        worker.finished.connect(lambda _count: self._measured(segments))
        worker.failed.connect(lambda trace: self.changed.emit(
            f"Speaker check stopped: {failure_message(trace)}"))
        self.worker = worker
        worker.start()

    def _measured(self, segments: Any) -> None:
        if segments is not self.segments:
            return  # another list (project) since
        try:
            segments.speakers_measured()
        except OSError as exc:  # the journal cannot be written (a full disk): the flags stay as they were
            self.changed.emit(f"Speaker check: the clips' flags could not be saved: {exc}")
            return
        self.changed.emit(segments.speaker_status())

    def stop_soon(self) -> None:
        """Ask a running measurement to end (its child is stopped between clips) and measure nothing more; the
        window closing waits for ``worker`` with its event loop running."""
        self._again.stop()
        if self.worker is not None and self.worker.is_running():
            self.worker.cancel()

    def stop(self) -> None:
        """End a running measurement and wait for it (a project change, quitting)."""
        self.stop_soon()
        if self.worker is not None and self.worker.is_running():
            self.worker.wait(10000)
