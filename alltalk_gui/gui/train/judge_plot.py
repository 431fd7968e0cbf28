"""The checkpoint judge's scores over the run: likeness to the speaker and the word error rate on the left axis
(0 to 1), the predicted MOS on the right (1 to 5), one point per judged step, the base model at step 0.

Points come from the training child's Judged events (:mod:`alltalk_gui.core.voice.judge.in_training`); the line
under the plot names the judge's best checkpoint so far and why.
"""

from __future__ import annotations

import pyqtgraph as pg

from alltalk_gui.gui.train.live_plot import LivePlot
from alltalk_gui.gui.train.training_history import Series, TrainingHistory

LIKENESS, ERROR, MOS = "likeness", "WER", "MOS (right axis)"


class JudgePlot(LivePlot):
    def __init__(self, parent=None) -> None:
        super().__init__("Checkpoint judge", "likeness · WER", "", parent)
        self._line(LIKENESS, "#2e7bd6", self.plot.getPlotItem())
        self._line(ERROR, "#d65a2e", self.plot.getPlotItem())
        # MOS has its own scale (1-5): a second view on the right axis, moving with the step axis.
        item = self.plot.getPlotItem()
        self.mos_view = pg.ViewBox()
        item.showAxis("right")
        item.scene().addItem(self.mos_view)
        item.getAxis("right").linkToView(self.mos_view)
        item.getAxis("right").setLabel("MOS")
        self.mos_view.setXLink(item)
        self.mos_view.setYRange(1, 5, padding=0.05)
        self.mos_view.setMouseEnabled(x=False, y=False)
        item.vb.sigResized.connect(lambda: self.mos_view.setGeometry(item.vb.sceneBoundingRect()))
        self._line(MOS, "#2e9e5b", self.mos_view)
        self.best = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen("#888", style=pg.QtCore.Qt.PenStyle.DashLine))
        self.best.hide()
        item.addItem(self.best)

    def _line(self, name: str, colour: str, where) -> None:
        curve = pg.PlotDataItem([], [], pen=pg.mkPen(colour, width=2), symbol="o", symbolBrush=colour,
                                symbolPen=colour, symbolSize=7)
        where.addItem(curve)
        self.curves[name] = curve
        self._colours[name] = (colour, False)

    def series(self, history: TrainingHistory) -> dict[str, Series]:
        return {LIKENESS: history.likeness, ERROR: history.judge_error, MOS: history.mos}

    def after_refresh(self, history: TrainingHistory) -> None:
        self.curves[ERROR].opts["name"] = history.judge_measure.upper()
        if history.likeness.x or history.judge_error.x:
            self.plot.setYRange(0, max(1.0, *history.judge_error.y, *history.likeness.y), padding=0.05)
        if history.judge_best is not None:
            step, reason = history.judge_best
            self.best.setValue(step)
            self.best.show()
            self.key.setText(self.key.text() + f"<br>Best so far (dashed): {reason}")
        else:
            self.best.hide()

    def format_value(self, value: float) -> str:
        return f"{value:.2f}"

    def clear(self) -> None:
        super().clear()
        self.best.hide()
