"""Play one audio file at a time (QMediaPlayer + QAudioOutput).

QSoundEffect deadlocked once with Qt's audio thread here, so playback uses QMediaPlayer. The player is
created on first use: pages that never play anything never start Qt's audio back-end.

Without a sound output device Qt still "plays" (the position moves, silently), so Play turned into Stop and
nothing said why there was no sound: each play then also sends ``error`` a sentence that says so.

The back-end keeps the file it played open until it is given another source. On Windows an open file cannot be
replaced, renamed or deleted, so a take played once would block its regeneration, a working copy its remaking,
a checkpoint's sample the pruning of its folder: the player lets go of the file when playback stops or ends.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, QTimer, QUrl, Signal


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
        self.release()
        self._set_current("")

    def holds(self) -> str:
        """The file the media back-end has open, or '' (none: nothing plays)."""
        if self._player is None:
            return ""
        return self._player.source().toLocalFile()

    def release(self) -> None:
        """Stop and let go of the file, so that other code (or another program) may replace or delete it."""
        if self._player is not None:
            self._player.stop()
            if not self._player.source().isEmpty():
                self._player.setSource(QUrl())

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
            # Let go of the file once Qt has finished with this signal (a new source set inside it is fragile);
            # only if nothing else was started meanwhile.
            ended = self._player.source()
            QTimer.singleShot(0, self, lambda: self._release_if_still(ended))

    def _release_if_still(self, source: QUrl) -> None:
        if self._player is not None and self._player.source() == source and not self._current:
            self.release()

    def _set_current(self, path: str) -> None:
        if path != self._current:
            self._current = path
            self.playing_changed.emit(path)
