"""Loss during training: every step's training loss (thin), its moving average (thick) and the eval loss
after each epoch (dots). The smoothed line is the one to read; the raw one shows how noisy a few clips are.
The smoothed line is drawn above the eval dots, so it stays visible to the last step however many evals there are."""

from __future__ import annotations

from alltalk_gui.gui.train.training_history import Series, TrainingHistory
from alltalk_gui.gui.train.live_plot import LivePlot


class LossPlot(LivePlot):
    def __init__(self, parent=None) -> None:
        super().__init__("Loss", "loss", "", parent)
        self.add_curve("train", "#9fb8e0", width=1)
        smoothed = self.add_curve("train (smoothed)", "#2b6fd6", width=2.5)
        self.add_curve("eval (per epoch)", "#e08a00", symbol="o").setSymbolSize(5)
        # On top: with an eval after every step (short epochs) the dots hid the smoothed line from there on.
        smoothed.setZValue(10)

    def series(self, history: TrainingHistory) -> dict[str, Series]:
        return {"train": history.loss, "train (smoothed)": history.loss_smooth, "eval (per epoch)": history.eval_loss}
