"""The learning rate per step: the short warm-up ramp, then the flat (or cosine) schedule the run follows."""

from __future__ import annotations

from alltalk_gui.gui.train.training_history import Series, TrainingHistory
from alltalk_gui.gui.train.live_plot import LivePlot


class LrPlot(LivePlot):
    def __init__(self, parent=None) -> None:
        super().__init__("Learning rate", "lr", "", parent)
        self.add_curve("learning rate", "#2e9e5b", width=2)

    def series(self, history: TrainingHistory) -> dict[str, Series]:
        return {"learning rate": history.lr}

    def format_value(self, value: float) -> str:
        return f"{value:.3g}"
