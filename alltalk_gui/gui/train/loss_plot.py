"""Loss during training: every step's training loss (thin), its moving average (thick), the eval loss after
each epoch (orange dots) and the base model's eval loss at step 0 (a purple dot), the baseline that shows how far
the run moved. The smoothed line is the one to read; the raw one shows how noisy a few clips are. It is drawn above
the eval dots, so it stays visible to the last step however many evals there are. (A star symbol was tried for the
baseline: with it the page stalled 120-220 ms during test_train_page's run, three times out of three on this
2-core machine; with a dot it stayed under 100 ms.)"""

from __future__ import annotations

from alltalk_gui.gui.train.training_history import Series, TrainingHistory
from alltalk_gui.gui.train.live_plot import LivePlot


class LossPlot(LivePlot):
    def __init__(self, parent=None) -> None:
        super().__init__("Loss", "loss", "", parent)
        self.add_curve("train", "#9fb8e0", width=1)
        smoothed = self.add_curve("train (smoothed)", "#2b6fd6", width=2.5)
        self.add_curve("eval (per epoch)", "#e08a00", symbol="o").setSymbolSize(5)
        self.add_curve("eval of the base model (step 0)", "#7a3db8", symbol="o")
        # On top: with an eval after every step (short epochs) the dots hid the smoothed line from there on.
        smoothed.setZValue(10)

    def series(self, history: TrainingHistory) -> dict[str, Series]:
        return {"train": history.loss, "train (smoothed)": history.loss_smooth, "eval (per epoch)": history.eval_loss,
                "eval of the base model (step 0)": history.base_eval}
