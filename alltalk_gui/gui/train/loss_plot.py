"""Loss during training: every step's training loss (thin), its moving average (thick), the eval loss after
each epoch (orange dots) and the base model's eval loss at step 0 (a purple dot), the baseline that shows how far
the run moved. The smoothed line is the one to read; the raw one shows how noisy a few clips are. It is drawn above
the eval dots, so it stays visible to the last step however many evals there are. An engine whose loss has parts
(XTTS v2: the text and audio losses) reports them by name; each gets a thin solid line of its own, added when the
first step carries it, whatever the engine calls it. (A star symbol was tried for the baseline: with it the page
stalled 120-220 ms during test_train_page's run, three times out of three on this 2-core machine; with a dot it
stayed under 100 ms.)"""

from __future__ import annotations

from alltalk_gui.gui.train.training_history import Series, TrainingHistory
from alltalk_gui.gui.train.live_plot import LivePlot

PART_COLOURS = ("#2e9e6a", "#c2417a", "#8c6d1f", "#4a9bb5", "#6b6b6b")  # the loss parts' lines, in their order


class LossPlot(LivePlot):
    def __init__(self, parent=None) -> None:
        super().__init__("Loss", "loss", "", parent)
        self.add_curve("train", "#9fb8e0", width=1)
        smoothed = self.add_curve("train (smoothed)", "#2b6fd6", width=2.5)
        self.add_curve("eval (per epoch)", "#e08a00", symbol="o").setSymbolSize(5)
        self.add_curve("eval of the base model (step 0)", "#7a3db8", symbol="o")
        # On top: with an eval after every step (short epochs) the dots hid the smoothed line from there on.
        smoothed.setZValue(10)

    def refresh(self, history: TrainingHistory) -> None:
        for name in history.parts:
            label = part_label(name)
            if label not in self.curves:
                colour = PART_COLOURS[(len(self.curves) - 4) % len(PART_COLOURS)]
                self.add_curve(label, colour, width=1)
        super().refresh(history)

    def series(self, history: TrainingHistory) -> dict[str, Series]:
        return {"train": history.loss, "train (smoothed)": history.loss_smooth, "eval (per epoch)": history.eval_loss,
                "eval of the base model (step 0)": history.base_eval,
                **{part_label(name): series for name, series in history.parts.items()}}


def part_label(name: str) -> str:
    """A loss part's line in the key: ``loss_mel_ce`` -> ``mel_ce (part)``."""
    return f"{name.removeprefix('loss_')} (part)"
