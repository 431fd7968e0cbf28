"""The waveform of the selected clip with its neighbouring audio, draggable boundaries and a cursor.

A cut word is fixed by dragging the clip's edge over it: the plot shows a few seconds either side of the clip,
the neighbouring clips shaded (their edges are the limits a drag can reach) and the clip itself as a region
whose two edges, or whole body, can be dragged. ``bounds_changed`` fires once when a drag ends. The red
cursor is where a split happens: click in the plot to place it, or drag it; playback moves it.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QVBoxLayout, QWidget

from alltalk_gui.core.transcript.segments import Segment

CONTEXT_S = 2.0          # audio shown either side of the clip
CLIP_BRUSH = (46, 125, 50, 45)
CLIP_PEN = pg.mkPen("#2e7d32", width=2)
CLIP_HOVER_PEN = pg.mkPen("#66bb6a", width=4)
NEIGHBOUR_BRUSH = (120, 120, 120, 40)
CURSOR_PEN = pg.mkPen("#d32f2f", width=2)


class ClipWaveform(QWidget):
    """``show_clip`` draws a clip; ``bounds_changed(id, start_ms, end_ms)`` reports a finished drag."""

    bounds_changed = Signal(str, int, int)
    cursor_moved = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.segment: Segment | None = None
        self._duration_s = 0.0
        self.plot = pg.PlotWidget(background=self.palette().color(QPalette.ColorRole.Base))
        self.plot.setMenuEnabled(False)
        self.plot.setMouseEnabled(x=True, y=False)
        self.plot.hideButtons()
        self.plot.setYRange(-1, 1, padding=0.02)
        self.plot.getPlotItem().hideAxis("left")
        self.plot.setLabel("bottom", "seconds in the recording")
        # Minutes of audio at 22 kHz are millions of points: draw only what is visible, at screen resolution.
        self.plot.setDownsampling(auto=True, mode="peak")
        self.plot.setClipToView(True)
        self.curve = self.plot.plot(pen=self._wave_pen())
        self.neighbours: list[pg.LinearRegionItem] = []
        self.region = pg.LinearRegionItem(brush=CLIP_BRUSH, pen=CLIP_PEN, hoverPen=CLIP_HOVER_PEN, swapMode="block")
        self.region.setZValue(10)
        self.region.sigRegionChangeFinished.connect(self._on_region_finished)
        self.cursor = pg.InfiniteLine(angle=90, movable=True, pen=CURSOR_PEN)
        self.cursor.setZValue(20)
        self.cursor.sigPositionChangeFinished.connect(lambda line: self.cursor_moved.emit(self.cursor_ms))
        self.plot.addItem(self.region)
        self.plot.addItem(self.cursor)
        self.plot.scene().sigMouseClicked.connect(self._on_click)
        self.placeholder = pg.TextItem("Select a clip to see its waveform", anchor=(0.5, 0.5), color="#888")
        self.plot.addItem(self.placeholder)
        self.placeholder.setPos(0.5, 0)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot)
        self.clear()

    def _wave_pen(self):
        return pg.mkPen(self.palette().color(QPalette.ColorRole.WindowText), width=1)

    def changeEvent(self, event: QEvent) -> None:
        # The app follows the desktop's light/dark switch: the wave is drawn in the text colour of the moment.
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "curve"):
            self.curve.setPen(self._wave_pen())
            self.plot.setBackground(self.palette().color(QPalette.ColorRole.Base))
        super().changeEvent(event)

    # -- what is shown --------------------------------------------------------------------------------------
    def clear(self) -> None:
        self.segment = None
        self.curve.setData([], [])
        for item in self.neighbours:
            self.plot.removeItem(item)
        self.neighbours = []
        self.region.hide()
        self.cursor.hide()
        self.placeholder.show()
        self.plot.getPlotItem().hideAxis("bottom")  # an axis with nothing on it looks like a broken plot
        self.plot.setXRange(0, 1, padding=0)

    def show_clip(self, samples: np.ndarray, rate: int, segment: Segment, neighbours: list[Segment]) -> None:
        """Draw ``segment`` of a source (``samples`` at ``rate``) with ``neighbours`` (its kept neighbours in
        the same source) shaded; a drag can reach up to their edges."""
        self.placeholder.hide()
        self.plot.getPlotItem().showAxis("bottom")
        self._duration_s = samples.size / rate
        start, end = segment.start_ms / 1000, segment.end_ms / 1000
        lo = max(0.0, start - CONTEXT_S)
        hi = min(self._duration_s, end + CONTEXT_S)
        first, last = int(lo * rate), int(hi * rate)
        window = samples[first:last]
        self.curve.setData(np.arange(first, first + window.size) / rate, window)
        for item in self.neighbours:
            self.plot.removeItem(item)
        self.neighbours = []
        before = [s.end_ms / 1000 for s in neighbours if s.end_ms <= segment.start_ms]
        after = [s.start_ms / 1000 for s in neighbours if s.start_ms >= segment.end_ms]
        for other in neighbours:
            item = pg.LinearRegionItem((other.start_ms / 1000, other.end_ms / 1000), movable=False,
                                       brush=NEIGHBOUR_BRUSH, pen=pg.mkPen(None))
            self.plot.addItem(item)
            self.neighbours.append(item)
        self.region.blockSignals(True)
        self.region.setBounds((max(before, default=0.0), min(after, default=self._duration_s)))
        self.region.setRegion((start, end))
        self.region.blockSignals(False)
        self.region.show()
        self.segment = segment
        if not (segment.start_ms <= self.cursor_ms <= segment.end_ms) or not self.cursor.isVisible():
            self.set_cursor_ms((segment.start_ms + segment.end_ms) // 2)
        self.cursor.show()
        self.plot.setXRange(lo, hi, padding=0)

    # -- cursor ---------------------------------------------------------------------------------------------
    @property
    def cursor_ms(self) -> int:
        return int(round(self.cursor.value() * 1000))

    def set_cursor_ms(self, ms: int) -> None:
        self.cursor.setValue(ms / 1000)

    def _on_click(self, event) -> None:
        if self.segment is None or event.button() != Qt.MouseButton.LeftButton:
            return
        x = self.plot.getPlotItem().vb.mapSceneToView(event.scenePos()).x()
        self.set_cursor_ms(int(round(min(max(x, 0.0), self._duration_s) * 1000)))
        self.cursor_moved.emit(self.cursor_ms)

    # -- drags ----------------------------------------------------------------------------------------------
    def _on_region_finished(self) -> None:
        if self.segment is None:
            return
        start, end = (int(round(v * 1000)) for v in self.region.getRegion())
        if (start, end) != (self.segment.start_ms, self.segment.end_ms):
            self.bounds_changed.emit(self.segment.id, start, end)
