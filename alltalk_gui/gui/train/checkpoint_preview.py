"""A spoken preview of each checkpoint while training runs: one sentence in the voice as it is so far, with a
play button.

Off by default unless the GPU has room for the inference model beside the training run
(:func:`alltalk_gui.core.voice.preview.checkpoint_previews_by_default`); on a CPU each preview takes minutes. The
work is :func:`alltalk_gui.core.voice.preview.checkpoint_preview` in a worker thread (it loads torch and the model
into this process, once, for the run's engine; it is kept for the next checkpoint). When checkpoints come faster than
previews, only the newest waiting one is spoken.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QPushButton, QWidget

from alltalk_gui.gui.common.audio_player import AudioPlayer
from alltalk_gui.gui.common.failure import failure_message
from alltalk_gui.gui.common.workers import Worker

SENTENCE = "This is how my voice sounds after this part of the training."


class CheckpointPreview(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.enabled = QCheckBox("Speak a preview at each checkpoint")
        self.enabled.setToolTip("Loads the inference model beside the training (about 2 GB of GPU memory; "
                                "minutes per preview on a CPU)")
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.play_button = QPushButton("▶ Play")
        self.play_button.setToolTip("Play the newest checkpoint's preview")
        self.play_button.hide()
        self.play_button.clicked.connect(self._toggle)
        self.player = AudioPlayer(self)
        self.player.playing_changed.connect(
            lambda path: self.play_button.setText("■ Stop" if path else "▶ Play"))
        self.worker: Worker | None = None
        self.pending: str | None = None
        self.wav: Path | None = None
        self.language = "en"
        self._engine = None
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.enabled)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.play_button)

    def set_default(self, gpu_memory_gib: float | None) -> None:
        from alltalk_gui.core.voice.preview import checkpoint_previews_by_default

        self.enabled.setChecked(checkpoint_previews_by_default(gpu_memory_gib))

    def checkpoint_saved(self, path: str) -> None:
        """Called for each new checkpoint; speaks it when enabled (the newest one if a preview is running)."""
        if not self.enabled.isChecked():
            return
        self.pending = path
        if self.worker is None or not self.worker.is_running():
            self._next()

    def _next(self) -> None:
        path, self.pending = self.pending, None
        if path is None:
            return
        from alltalk_gui.core.voice.preview import PreviewEngine, checkpoint_preview
        from alltalk_gui.core.voice.references import choose_references

        dataset = Path(path).parents[3] / "dataset"  # <project>/runs/<run>/checkpoints/<step>

        def job(_j):
            from alltalk_gui.core.training.checkpoints import read_checkpoint

            engine = read_checkpoint(path).engine  # the run's engine (F5-TTS speaks from the first clip's words)
            if self._engine is None or self._engine.engine.name != engine:
                self._engine = PreviewEngine(engine=engine)
            refs = [c.path for c in choose_references(dataset)]
            return checkpoint_preview(path, SENTENCE, refs, language=self.language, engine=self._engine)

        self.label.setText(f"Speaking a preview of {Path(path).name}…")
        self.worker = Worker(job, self)
        self.worker.finished.connect(self._done)
        self.worker.failed.connect(lambda tb: (self.label.setText(
            f"The preview failed: {failure_message(tb)}"), self._next()))
        self.worker.start()

    def _done(self, result) -> None:
        self.wav = result.wav
        self.label.setText(f"Preview of step {Path(result.checkpoint).name.split('_')[-1].lstrip('0') or '0'}: "
                           f"“{result.text}” ({result.duration_s:.1f} s)")
        self.play_button.show()
        self._next()

    def _toggle(self) -> None:
        if self.wav is not None:
            self.player.toggle(self.wav)

    def shutdown(self) -> None:
        self.player.stop()
        self.pending = None
        if self.worker is not None and self.worker.is_running():
            self.worker.wait(10 * 60 * 1000)
