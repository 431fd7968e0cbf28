"""The learning rate per step: the short warm-up ramp, then the flat (or cosine) schedule the run follows."""

from __future__ import annotations

import pyqtgraph as pg

from alltalk_gui.gui.train.training_history import Series, TrainingHistory
from alltalk_gui.gui.train.live_plot import LivePlot


class LrPlot(LivePlot):
    def __init__(self, parent=None) -> None:
        super().__init__("Learning rate", "lr", "", parent)
        self.add_curve("learning rate", "#2e9e5b", width=2)
        # Invisible, but counted by auto-range: the axis starts at 0, so the warm-up reads as the ramp from nothing
        # it is and a constant rate as a flat line, not as a jump across the whole plot.
        self.scale_anchor = pg.PlotDataItem([], [], pen=pg.mkPen(None))
        self.plot.addItem(self.scale_anchor)

    def series(self, history: TrainingHistory) -> dict[str, Series]:
        return {"learning rate": history.lr}

    def after_refresh(self, history: TrainingHistory) -> None:
        self.scale_anchor.setData(history.lr.x[:1], [0.0] if history.lr.x else [])

    def format_value(self, value: float) -> str:
        return f"{value:.3g}"
