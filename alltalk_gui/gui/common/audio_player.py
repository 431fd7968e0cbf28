"""Play one audio file at a time (QMediaPlayer + QAudioOutput).

QSoundEffect deadlocked once with Qt's audio thread here, so playback uses QMediaPlayer. The player is
created on first use: pages that never play anything never start Qt's audio back-end.

Without a sound output device Qt still "plays" (the position moves, silently), so Play turned into Stop and
nothing said why there was no sound: each play then also sends ``error`` a sentence that says so.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, QUrl, Signal


NO_OUTPUT = ("No sound output was found on this computer: playback runs silently. Connect speakers or "
             "headphones, or check the system's sound settings.")


def has_sound_output() -> bool:
    """Whether the system offers an audio output device to play on."""
    from PySide6.QtMultimedia import QMediaDevices

    return not QMediaDevices.defaultAudioOutput().isNull()


class AudioPlayer(QObject):
    """``play(path)`` starts a file (stopping any other); ``playing_changed`` carries what plays, or ''.

    What plays is named by ``key``, the path itself unless the caller names it otherwise (the transcript
    editor plays temporary files and names them after the clip).
    """

    playing_changed = Signal(str)
    error = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._player = None
        self._output = None
        self._current = ""

    @property
    def current(self) -> str:
        return self._current

    def toggle(self, path: str | Path) -> None:
        if self._current and Path(self._current) == Path(path):
            self.stop()
        else:
            self.play(path)

    def play(self, path: str | Path, key: str | None = None) -> None:
        player = self._ensure_player()
        player.stop()
        # Clearing the source first makes the back-end let go of the previous file.
        player.setSource(QUrl())
        player.setSource(QUrl.fromLocalFile(str(path)))
        player.play()
        self._set_current(str(path) if key is None else key)
        if not has_sound_output():
            self.error.emit(NO_OUTPUT)

    def position_ms(self) -> int:
        """Playback position in the current file, in milliseconds (0 when nothing was played)."""
        return int(self._player.position()) if self._player is not None else 0

    def stop(self) -> None:
        if self._player is not None:
            self._player.stop()
        self._set_current("")

    def _ensure_player(self):
        if self._player is None:
            from PySide6.QtMultimedia import QAudioOutput, QMediaPlayer

            self._output = QAudioOutput(self)
            self._player = QMediaPlayer(self)
            self._player.setAudioOutput(self._output)
            self._player.mediaStatusChanged.connect(self._on_status)
            self._player.errorOccurred.connect(lambda _e, text: self.error.emit(text or "Playback failed."))
        return self._player

    def _on_status(self, status) -> None:
        from PySide6.QtMultimedia import QMediaPlayer

        if status in (QMediaPlayer.MediaStatus.EndOfMedia, QMediaPlayer.MediaStatus.InvalidMedia):
            self._set_current("")

    def _set_current(self, path: str) -> None:
        if path != self._current:
            self._current = path
            self.playing_changed.emit(path)
