"""The base of the Train page's live plots: a pyqtgraph plot whose curves are created once and refreshed from
a display timer, plus a read-out line that shows the values under the mouse.

pyqtgraph's own advice for live data is followed: ``setData`` is called at most once per display tick (not
per event), and every curve draws only what is in view (``setClipToView``) with peak-preserving downsampling
(``setDownsampling(mode='peak')``), so a 20 000-step run draws about as fast as a 200-step one.

The key (which colour is which line) sits in a line under the plot, not in pyqtgraph's legend box, which
covered the curves it names; it keeps two lines' height in every plot, so the three step axes stay level when one
key wraps. Before any data the axes show a plain 0-10 steps by 0-1, and only the major ticks of the step axis are
labelled (minor labels of a short run ran together as "10111213"). The step axis never goes below 0, and a line
with a single point (a run stopped after its first step) is drawn as a dot: a line needs two points to show.
"""

from __future__ import annotations

from bisect import bisect_left

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from alltalk_gui.gui.train.training_history import Series, TrainingHistory

PLOT_MIN_HEIGHT = 132  # px of plot (axes included): below this the curves of a run cannot be read; the four plots
# sit two by two, and at 132 both rows, the log and the controls fit a 1024x700 window during a run


class LivePlot(QWidget):
    """A titled plot of named :class:`Series`; subclasses add curves in ``__init__`` and say which series feed
    them in :meth:`series`."""

    def __init__(self, title: str, y_label: str, unit: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.unit = unit
        self.plot = pg.PlotWidget()
        self.plot.setBackground(None)  # the palette's window colour, light or dark
        self.plot.setTitle(title)
        self.plot.setLabel("left", y_label)
        self.plot.setLabel("bottom", "step")
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.plot.setMouseEnabled(x=True, y=False)
        self.plot.getAxis("bottom").setStyle(maxTextLevel=0)  # label major steps only
        self._empty_range()
        # Plain numbers on the value axis: SI scaling turned 0.78 GiB into "780 (x0.001)".
        self.plot.getAxis("left").enableAutoSIPrefix(False)
        self.plot.getViewBox().setLimits(xMin=0)  # no negative steps, also when auto-range pads a short run
        self.plot.setMinimumHeight(PLOT_MIN_HEIGHT)
        # Read-only pictures: no Tab stop (four of them sat between "Speak a preview" and the log, each showing no
        # focus and doing nothing with the keys). The mouse still pans and zooms.
        self.plot.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        small = QFont(self.font())
        small.setPointSizeF(8)
        self.readout = QLabel(" ")
        self.readout.setStyleSheet("color: palette(mid);")
        self.readout.setFont(small)
        self.key = QLabel()
        self.key.setWordWrap(True)
        self.key.setTextFormat(Qt.TextFormat.RichText)
        self.key.setFont(small)
        # Two lines of its font under every plot, set before the first layout: the three step axes stay level
        # when one key wraps, and the page's minimum counts the key (set later, it did not reach the splitter).
        self.key.setMinimumHeight(2 * QFontMetrics(small).lineSpacing())
        self.key.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.curves: dict[str, pg.PlotDataItem] = {}
        self._dot_for_one: set[str] = set()  # lines drawn as a dot while they hold a single point
        self._colours: dict[str, tuple[str, bool]] = {}  # name -> (colour, drawn as dots)
        self._in_legend: set[str] = set()
        self._version = -1
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.key)
        layout.addWidget(self.readout)
        self._proxy = pg.SignalProxy(self.plot.scene().sigMouseMoved, rateLimit=30, slot=self._hover)
        self._history: TrainingHistory | None = None

    def add_curve(self, name: str, colour: str, width: float = 1.5, style=None, symbol=None) -> pg.PlotDataItem:
        pen = pg.mkPen(colour, width=width, style=style) if style is not None else pg.mkPen(colour, width=width)
        # No name here: a curve joins the legend when it has data, so a CPU run lists no GPU lines.
        curve = self.plot.plot([], [], pen=pen if symbol is None else None, symbol=symbol,
                               symbolBrush=colour, symbolPen=colour, symbolSize=7)
        curve.setClipToView(True)
        curve.setDownsampling(auto=True, method="peak")
        self.curves[name] = curve
        self._colours[name] = (colour, symbol is not None)
        return curve

    def series(self, history: TrainingHistory) -> dict[str, Series]:
        raise NotImplementedError

    def refresh(self, history: TrainingHistory) -> None:
        """Redraw from ``history`` when it changed since the last call (the display timer calls this)."""
        self._history = history
        if history.version == self._version:
            return
        self._version = history.version
        had_data = bool(self._in_legend)
        for name, data in self.series(history).items():
            curve = self.curves[name]
            if data.x:
                curve.setData(data.x, data.y)
                self._one_point_dot(name, len(data.x) == 1)
                self._in_legend.add(name)
            elif curve.xData is not None and len(curve.xData):
                curve.setData([], [])
                self._in_legend.discard(name)
        if self._in_legend and not had_data:
            self.plot.enableAutoRange()  # data arrived: follow it from now on
        self._show_key()
        self.after_refresh(history)

    def _one_point_dot(self, name: str, single: bool) -> None:
        """Give a line a dot while it has one point only (pyqtgraph draws nothing for a one-point line)."""
        colour, dots = self._colours[name]
        if dots or single == (name in self._dot_for_one):
            return
        curve = self.curves[name]
        if single:
            curve.setSymbol("o")
            curve.setSymbolSize(6)
            curve.setSymbolBrush(colour)
            curve.setSymbolPen(colour)
            self._dot_for_one.add(name)
        else:
            curve.setSymbol(None)
            self._dot_for_one.discard(name)

    def after_refresh(self, history: TrainingHistory) -> None:
        """Hook for extras that follow the data (a limit line)."""

    def clear(self) -> None:
        self._version = -1
        for curve in self.curves.values():
            curve.setData([], [])
        for name in list(self._dot_for_one):
            self._one_point_dot(name, False)
        self._in_legend.clear()
        self._show_key()
        self._empty_range()
        self.readout.setText(" ")

    def _empty_range(self) -> None:
        """Plain axes while there is nothing to draw (auto-range of nothing gave -20..20)."""
        self.plot.setRange(xRange=(0, 10), yRange=(0, 1), padding=0)

    def _show_key(self) -> None:
        """The names of the lines that have data, each after a mark in its colour."""
        parts = []
        for name in self.curves:
            if name in self._in_legend:
                colour, dots = self._colours[name]
                parts.append(f"<span style='color:{colour}'>{'●' if dots else '━━'}</span> {name}")
        self.key.setText("&nbsp;&nbsp; ".join(parts))

    # -- hover --------------------------------------------------------------------------------------------------
    def values_at(self, step: float) -> str:
        """The values of each curve at the data point nearest to ``step``, as one line."""
        if self._history is None:
            return ""
        parts = []
        for name, data in self.series(self._history).items():
            if not data.x:
                continue
            i = min(bisect_left(data.x, step), len(data.x) - 1)
            if i > 0 and abs(data.x[i - 1] - step) < abs(data.x[i] - step):
                i -= 1
            parts.append(f"{name} {self.format_value(data.y[i])}")
        return f"step {int(round(step))}: " + ", ".join(parts) if parts else ""

    def format_value(self, value: float) -> str:
        return f"{value:.4g}{self.unit}"

    def _hover(self, args) -> None:
        pos = args[0]
        view = self.plot.getPlotItem().vb
        if not self.plot.sceneBoundingRect().contains(pos):
            return
        point = view.mapSceneToView(pos)
        self.readout.setText(self.values_at(point.x()) or " ")
