"""Play a span of a recording and report where playback is, in milliseconds of that recording.

The transcript editor plays clips, which are spans of a source's working copy. The span is written to a
small temporary wav and played with QMediaPlayer (see audio_player.py for why not QSoundEffect), so playback
starts and ends exactly at the clip's edges without seeking. A timer reads the position while it plays:
the editor's cursor follows it, and split uses where it stopped.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf
from PySide6.QtCore import QObject, QTimer, QUrl, Signal

POLL_MS = 40


class ClipPlayer(QObject):
    """``play(samples, rate, offset_ms, key)``; ``position(ms)`` while playing; ``playing_changed(key or '')``."""

    position = Signal(int)
    playing_changed = Signal(str)
    error = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._player = None
        self._output = None
        self._tmp = tempfile.TemporaryDirectory(prefix="alltalk-clip-")
        self._count = 0
        self._offset_ms = 0
        self._key = ""
        self._timer = QTimer(self, interval=POLL_MS)
        self._timer.timeout.connect(self._poll)

    @property
    def current(self) -> str:
        return self._key

    def play(self, samples: np.ndarray, rate: int, offset_ms: int, key: str) -> None:
        """Play ``samples`` (which start ``offset_ms`` into the recording); ``key`` names what plays."""
        player = self._ensure_player()
        player.stop()
        # A fresh name each time: the media back-end may still hold the previous file open.
        self._count += 1
        path = Path(self._tmp.name) / f"clip{self._count % 4}.wav"
        sf.write(path, samples, rate, subtype="PCM_16")
        self._offset_ms = offset_ms
        player.setSource(QUrl())
        player.setSource(QUrl.fromLocalFile(str(path)))
        player.play()
        self._set_key(key)
        self._timer.start()

    def stop(self) -> None:
        if self._player is not None:
            self._player.stop()
        self._timer.stop()
        self._set_key("")

    def _ensure_player(self):
        if self._player is None:
            from PySide6.QtMultimedia import QAudioOutput, QMediaPlayer

            self._output = QAudioOutput(self)
            self._player = QMediaPlayer(self)
            self._player.setAudioOutput(self._output)
            self._player.mediaStatusChanged.connect(self._on_status)
            self._player.errorOccurred.connect(lambda _e, text: self.error.emit(text or "Playback failed."))
        return self._player

    def _poll(self) -> None:
        if self._player is not None and self._key:
            self.position.emit(self._offset_ms + int(self._player.position()))

    def _on_status(self, status) -> None:
        from PySide6.QtMultimedia import QMediaPlayer

        if status in (QMediaPlayer.MediaStatus.EndOfMedia, QMediaPlayer.MediaStatus.InvalidMedia):
            self._timer.stop()
            self._set_key("")

    def _set_key(self, key: str) -> None:
        if key != self._key:
            self._key = key
            self.playing_changed.emit(key)
