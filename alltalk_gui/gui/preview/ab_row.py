"""One row of the preview list: the sentence, and its takes side by side (any two of the base model, a checkpoint
and a model folder), each named by the model that spoke (a model folder by its name, and the folder above it when
both have one name), with a play button, its waveform and the word error rate of what Whisper heard."""

from __future__ import annotations

from html import escape
from pathlib import Path

import numpy as np
import pyqtgraph as pg
import soundfile as sf
from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import (
    QFrame, QHBoxLayout, QLabel, QSizePolicy, QStyle, QToolButton, QVBoxLayout, QWidget,
)

from alltalk_gui.core.voice.preview import MODEL_LABEL, PreviewResult
from alltalk_gui.gui.common.status_colours import GOOD, NOTE, QUIET, WARNING, colour as status_colour, span
from alltalk_gui.gui.preview.model_folder_choice import folder_names

WAVE_POINTS = 600   # min/max pairs drawn: enough for a sharp outline, cheap to draw
WAVE_HEIGHT = 64
# The waveform's colour by the take's label, as a meaning of status_colours (the light and the dark look's).
COLOURS = {"base": QUIET, "fine-tuned": GOOD, "model": NOTE}
SECOND_COLOUR = WARNING  # the right take of a pair of one kind (two folders, two checkpoints): told apart at a glance


def envelope(samples: np.ndarray, points: int = WAVE_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of a min/max outline: for each of ``points`` chunks its minimum then its maximum."""
    if samples.size == 0:
        return np.zeros(0), np.zeros(0)
    chunks = np.array_split(samples, min(points, samples.size))
    y = np.ravel([(c.min(), c.max()) for c in chunks])
    x = np.repeat(np.linspace(0.0, samples.size, len(chunks)), 2)
    return x, y


def take_titles(results: list[PreviewResult]) -> list[str]:
    """Each take's name by the model that spoke it; two model folders of one name (exports/2026-11-20/mine and
    exports/2026-11-27/mine) are told apart by the folder above (:func:`.model_folder_choice.folder_names`)."""
    titles = [r.speaker for r in results]
    folders = [Path(r.checkpoint_label) for r in results]
    if len(set(titles)) == len(titles) or len(set(folders)) < len(folders):
        return titles
    return [f"{title.rsplit(' · ', 1)[0]} · {name}" if r.label == MODEL_LABEL else title
            for title, name, r in zip(titles, folder_names(folders), results)]


def wer_text(result: PreviewResult) -> str:
    if result.wer is None:
        return f"WER: – ({result.wer_note})" if result.wer_note else "WER: –"
    heard = result.transcript or "(nothing)"
    return f"WER {result.wer:.2f} · heard: “{heard}”"


def peak_text(peak: float) -> str:
    """A take's peak as people read levels: "peak -19 dBFS", "peak 0 dBFS" at full scale (rounded first: a peak just
    under full scale read "-0 dBFS"), "silent"."""
    if peak <= 0:
        return "silent"
    return f"peak {int(round(20 * float(np.log10(peak))))} dBFS"  # an int: round(-0.2) is 0, never -0


class TakeView(QFrame):
    """One take: label, play button, waveform, WER. ``play_requested`` carries the wav path; ``kind``: the
    waveform's colour as a meaning of :mod:`~alltalk_gui.gui.common.status_colours` (default: by the label)."""

    play_requested = Signal(str)

    def __init__(self, result: PreviewResult, parent: QWidget | None = None, title: str = "",
                 kind: str = "") -> None:
        super().__init__(parent)
        self.result = result
        self.setObjectName("take")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.title = QLabel(f"<b>{escape(title or result.speaker, quote=False)}</b>")
        self.title.setWordWrap(True)
        if result.checkpoint is None and result.label != "base":  # a model folder: where it is
            self.title.setToolTip(result.checkpoint_label)
        self.play_button = QToolButton()
        self.play_button.setAutoRaise(True)
        self.play_button.setToolTip(f"Play {result.wav.name}")
        self.play_button.clicked.connect(lambda: self.play_requested.emit(str(result.wav)))
        self.set_playing(False)
        samples, _rate = sf.read(str(result.wav), dtype="float32", always_2d=True)
        samples = samples[:, 0]
        peak = float(np.abs(samples).max()) if samples.size else 0.0
        self.info = QLabel(f"{result.duration_s:.1f} s · {peak_text(peak)} · made in {result.generation_s:.1f} s")
        self.wer_label = QLabel(wer_text(result))
        self.wer_label.setObjectName("wer")
        self.wer_label.setWordWrap(True)
        self.wer_label.setToolTip("Word error rate of Whisper's transcript against the sentence: 0 = every word "
                                  "heard right. A number to compare takes by, not a verdict.")

        self.plot = pg.PlotWidget(background=None)
        self.plot.setFixedHeight(WAVE_HEIGHT)
        self.plot.setMenuEnabled(False)
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.hideButtons()
        self.plot.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # nothing to do in it by keyboard: no invisible Tab stop
        self.plot.hideAxis("left")
        self.plot.hideAxis("bottom")
        # Scaled to the take's own peak (the level is in the label): a quiet take still shows its shape.
        self.plot.setYRange(-max(peak, 1e-4), max(peak, 1e-4), padding=0.05)
        x, y = envelope(samples)
        self.kind = kind or COLOURS.get(result.label, NOTE)
        self.curve = self.plot.plot(x, y, pen=pg.mkPen(self.colour, width=1))
        self.plot.setXRange(0, max(samples.size, 1), padding=0)

        self.info.setWordWrap(True)
        self.info.setStyleSheet("font-size: 9pt;")
        self.plot.setMinimumWidth(120)
        # Equal halves whatever the titles say: the size hint is ignored, the row's stretch shares the width
        # (the fine-tuned card's long title made it wider than the base card and gave the list a scroll bar).
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setMinimumWidth(200)
        top = QHBoxLayout()
        top.addWidget(self.play_button)
        top.addWidget(self.title, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.addLayout(top)
        layout.addWidget(self.info)
        layout.addWidget(self.plot)
        layout.addWidget(self.wer_label)

    @property
    def colour(self) -> str:
        """The waveform's colour on the palette in use."""
        return status_colour(self.kind, self)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt's name)
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "curve"):  # light/dark: the dark look's
            self.curve.setPen(pg.mkPen(self.colour, width=1))

    def set_playing(self, playing: bool) -> None:
        icon = QStyle.StandardPixmap.SP_MediaStop if playing else QStyle.StandardPixmap.SP_MediaPlay
        self.play_button.setIcon(self.style().standardIcon(icon))


class AbRow(QFrame):
    """The sentence over its takes (one, or the two of an A/B side by side, the model compared with on the left)."""

    play_requested = Signal(str)

    def __init__(self, results: list[PreviewResult], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("abRow")
        self.results = results
        # The quiet grey of the palette in use (palette(mid), the frames' grey, read at 1.7-1.8:1 on either look)
        text = QLabel(f"“{escape(results[0].text, quote=False)}” {span(QUIET, f'({results[0].language})', self)}")
        text.setTextFormat(Qt.TextFormat.RichText)
        text.setWordWrap(True)
        one_kind = len(results) == 2 and results[0].label == results[1].label
        self.takes = [TakeView(r, title=title, kind=SECOND_COLOUR if one_kind and i == 1 else "")
                      for i, (r, title) in enumerate(zip(results, take_titles(results)))]
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        for take in self.takes:
            take.play_requested.connect(self.play_requested)
            row.addWidget(take, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 6, 0, 6)
        layout.addWidget(text)
        layout.addLayout(row)

    def update_playing(self, path: str) -> None:
        for take in self.takes:
            take.set_playing(bool(path) and path == str(take.result.wav))
