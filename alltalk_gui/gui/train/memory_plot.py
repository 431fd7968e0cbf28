"""Memory during training: what the run allocated and reserved on the GPU, what the whole card holds (other
programs included) and the card's total as a limit line; on a CPU-only machine, the training process's RSS.

The card-wide line is the one that decides whether the run fits: allocated memory can look safe while the
desktop or another program holds the rest of the card.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt

from alltalk_gui.gui.train.training_history import Series, TrainingHistory
from alltalk_gui.gui.train.live_plot import LivePlot


class MemoryPlot(LivePlot):
    def __init__(self, parent=None) -> None:
        super().__init__("Memory", "GiB", " GiB", parent)
        self.add_curve("allocated", "#2b6fd6")
        self.add_curve("reserved", "#8e5bd6")
        self.add_curve("card used (all programs)", "#e08a00")
        self.add_curve("process RSS (CPU)", "#2e9e5b")
        self.total_line = pg.InfiniteLine(angle=0, movable=False, pen=pg.mkPen("#c62828", width=1.5,
                                                                                style=Qt.PenStyle.DashLine),
                                          label="card total {value:.1f} GiB",
                                          labelOpts={"position": 0.05, "color": "#c62828", "anchors": [(0, 1), (0, 1)]})
        self.total_line.hide()
        self.plot.addItem(self.total_line)
        # Invisible, but counted by auto-range: the axis starts at 0 and reaches the card's total, so a few MB of
        # change never fill the plot as if memory were climbing, and the limit line is always in view.
        self.scale_anchor = pg.PlotDataItem([], [], pen=pg.mkPen(None))
        self.plot.addItem(self.scale_anchor)

    def series(self, history: TrainingHistory) -> dict[str, Series]:
        return {"allocated": history.allocated, "reserved": history.reserved,
                "card used (all programs)": history.device_used, "process RSS (CPU)": history.rss}

    def after_refresh(self, history: TrainingHistory) -> None:
        if history.device_total:
            self.total_line.setValue(history.device_total)
            self.total_line.show()
        else:
            self.total_line.hide()
        first = (history.allocated.x or history.rss.x or [None])[0]
        if first is None:
            self.scale_anchor.setData([], [])
        else:
            self.scale_anchor.setData([first, first], [0.0, history.device_total or 0.0])

    def clear(self) -> None:
        super().clear()
        self.total_line.hide()
        self.scale_anchor.setData([], [])
