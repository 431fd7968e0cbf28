"""Play a span of a recording and report where playback is, in milliseconds of that recording.

The transcript editor plays clips, which are spans of a source's working copy. The span is written to a
small temporary wav and played with QMediaPlayer (see audio_player.py for why not QSoundEffect), so playback
starts and ends exactly at the clip's edges without seeking. A timer reads the position while it plays:
the editor's cursor follows it, and split uses where it stopped.
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf
from PySide6.QtCore import QObject, QTimer, Signal

from alltalk_gui.gui.common.audio_player import AudioPlayer

POLL_MS = 40


class ClipPlayer(QObject):
    """``play(samples, rate, offset_ms, key)``; ``position(ms)`` while playing; ``playing_changed(key or '')``."""

    position = Signal(int)
    playing_changed = Signal(str)
    error = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._audio = AudioPlayer(self)
        self._audio.playing_changed.connect(self._on_playing_changed)
        self._audio.error.connect(self.error)
        self._files = _ClipFolder()
        # Removed with the player, not whenever Python collects the wrapper (which may be never before exit).
        self.destroyed.connect(functools.partial(_ClipFolder.remove, self._files))
        self._count = 0
        self._offset_ms = 0
        self._timer = QTimer(self, interval=POLL_MS)
        self._timer.timeout.connect(self._poll)

    @property
    def current(self) -> str:
        return self._audio.current

    def play(self, samples: np.ndarray, rate: int, offset_ms: int, key: str) -> None:
        """Play ``samples`` (which start ``offset_ms`` into the recording); ``key`` names what plays."""
        # A fresh name each time: the media back-end may still hold the previous file open.
        self._count += 1
        path = self._files.path() / f"clip{self._count % 4}.wav"
        sf.write(path, samples, rate, subtype="PCM_16")
        self._offset_ms = offset_ms
        self._audio.play(path, key)
        self._timer.start()

    def stop(self) -> None:
        self._audio.stop()
        self._timer.stop()

    def _poll(self) -> None:
        if self._audio.current:
            self.position.emit(self._offset_ms + self._audio.position_ms())

    def _on_playing_changed(self, key: str) -> None:
        if not key:
            self._timer.stop()
        self.playing_changed.emit(key)


class _ClipFolder:
    """The player's temporary folder for the clips it plays, made when the first clip plays: a page that never
    plays one (most do not) leaves nothing behind, even from a process that ends without Python's clean-up."""

    def __init__(self) -> None:
        self._tmp: tempfile.TemporaryDirectory | None = None

    def path(self) -> Path:
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="alltalk-clip-", ignore_cleanup_errors=True)
        return Path(self._tmp.name)

    def remove(self, *_: object) -> None:
        if self._tmp is not None:
            try:
                self._tmp.cleanup()
            except OSError:  # Windows: the media back-end still holds a clip; the system's temporary folder keeps it
                pass
            self._tmp = None
