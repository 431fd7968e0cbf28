"""What the Train page has seen of a run: the series its plots draw and the numbers its progress line shows.

Pure Python (no Qt), so it is tested without a window. Events are appended as they arrive (one cheap append
per event); the plots read the arrays from a display timer, so 20 000 steps cost 20 000 list appends, not
20 000 redraws. ``version`` grows with every change, which lets a plot skip a refresh when nothing is new.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

# The smoothed loss is an exponential moving average whose time constant is this share of the run's steps
# (within 2 and 100 steps): it follows the fast early fall of a short run and still calms a long run's noise.
SMOOTHING_SHARE = 0.025


@dataclass
class Series:
    x: list[float] = field(default_factory=list)
    y: list[float] = field(default_factory=list)

    def add(self, x: float, y: float) -> None:
        self.x.append(x)
        self.y.append(y)

    def clear(self) -> None:
        self.x.clear()
        self.y.clear()

    def cut_after(self, x: float) -> None:
        """Drop the points beyond ``x`` (steps a resumed run will do again)."""
        keep = len(self.x)
        while keep and self.x[keep - 1] > x:
            keep -= 1
        del self.x[keep:], self.y[keep:]


class TrainingHistory:
    """Series per plot plus the run's latest progress, built from training events (:mod:`core.events`)."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.loss, self.loss_smooth, self.eval_loss, self.lr = Series(), Series(), Series(), Series()
        self.base_eval = Series()  # the eval at step 0: the base model, before any update
        # The checkpoint judge's means per judged step (step 0: the base model); error: WER or CER.
        self.likeness, self.judge_error, self.mos = Series(), Series(), Series()
        self.judge_measure = "wer"
        self.judge_best: tuple[int, str] | None = None  # the judge's choice so far and why
        self.parts: dict[str, Series] = {}  # the engine's loss parts by name, per step (none for a one-part loss)
        # GiB against the step: what this process allocated and reserved, the whole card, and the host RSS.
        self.allocated, self.reserved, self.device_used, self.rss = Series(), Series(), Series(), Series()
        self.device_total: float | None = None
        self.peak_gib = 0.0
        self.step = 0
        self.epoch = 0
        self.total_steps = 0
        self.epochs = 0
        self.steps_per_epoch = 0
        self.samples_per_s = 0.0
        self.start_step = 0
        self.first_step_wall: float | None = None  # wall time at the first step this session saw
        self.first_step_seen = 0
        self.last_loss: float | None = None
        self.last_eval: float | None = None
        self.device = ""
        self.version = 0
        # Training time across the sessions of a run (stop and resume, a crash and resume): each session counts
        # from its Started event to its last event; sessions_s holds the ones before the current session.
        self.sessions_s = 0.0
        self._session_start: float | None = None
        self._last_time: float | None = None

    # -- events ------------------------------------------------------------------------------------------------
    def add(self, event) -> None:
        self._count_time(event)
        handler = getattr(self, f"_on_{event.type}", None)
        if handler is not None:
            handler(event)
            self.version += 1

    def _count_time(self, event) -> None:
        stamp = getattr(event, "time", None)
        if stamp is None:
            return
        if event.type == "started":
            self.sessions_s = self.training_s
            self._session_start = stamp
        self._last_time = stamp

    @property
    def training_s(self) -> float:
        """Seconds of training in all sessions of the run so far (model loading before each Started excluded)."""
        current = (self._last_time - self._session_start) if self._session_start is not None else 0.0
        return self.sessions_s + max(current, 0.0)

    def _on_started(self, e) -> None:
        # A run resumed from its checkpoint at start_step repeats the steps a crash or kill left after it: drop
        # them, so the curves go on from the checkpoint instead of doubling back.
        for series in (self.loss, self.loss_smooth, self.eval_loss, self.lr, self.allocated, self.reserved,
                       self.device_used, self.rss, *self.parts.values()):
            series.cut_after(e.start_step)
        self.total_steps, self.steps_per_epoch = e.total_steps, e.steps_per_epoch
        self.epochs = int(e.config.get("epochs", 0))
        self.start_step, self.step, self.epoch = e.start_step, e.start_step, e.start_epoch
        self.device = e.device
        self.first_step_wall = None

    def _on_step(self, e) -> None:
        self.step, self.epoch, self.total_steps = e.step, e.epoch, e.total_steps or self.total_steps
        self.samples_per_s = e.samples_per_s
        self.last_loss = e.loss
        if self.first_step_wall is None:
            # Count from the start of this step, so the ETA covers the first step too.
            self.first_step_wall, self.first_step_seen = e.time - e.step_time_s, e.step - 1
        self.loss.add(e.step, e.loss)
        previous = self.loss_smooth.y[-1] if self.loss_smooth.y else e.loss
        if not math.isfinite(e.loss):  # one inf/NaN step must not end the smoothed line for the rest of the run
            if math.isfinite(previous):
                self.loss_smooth.add(e.step, previous)
        else:
            # A plain mean over the first steps (weight 1/n), then the moving average: no lag from a cold start.
            span = min(100.0, max(2.0, SMOOTHING_SHARE * (self.total_steps or 0)))
            weight = max(1.0 / span, 1.0 / len(self.loss.x))
            start = previous if math.isfinite(previous) else e.loss
            self.loss_smooth.add(e.step, start + weight * (e.loss - start))
        self.lr.add(e.step, e.lr)
        for name, value in getattr(e, "parts", {}).items():
            self.parts.setdefault(name, Series()).add(e.step, value)

    def _on_eval(self, e) -> None:
        if e.step == 0:
            self.base_eval.clear()  # one baseline per run
            self.base_eval.add(0, e.loss)
            return
        self.eval_loss.add(e.step, e.loss)
        self.last_eval = e.loss

    def _on_judged(self, e) -> None:
        for series, value in ((self.likeness, e.likeness), (self.judge_error, e.error_rate), (self.mos, e.mos)):
            series.cut_after(e.step - 1)  # a step judged again replaces its points
            if value is not None:
                series.add(e.step, value)
        self.judge_measure = str(e.measure)
        if e.best_step is not None:
            self.judge_best = (e.best_step, e.best_reason)

    def _on_memory(self, e) -> None:
        s = e.stats
        if "cuda_allocated" in s:
            self.allocated.add(e.step, s["cuda_allocated"])
            self.reserved.add(e.step, s.get("cuda_reserved", 0.0))
            if "device_used" in s:
                self.device_used.add(e.step, s["device_used"])
            if "device_total" in s:
                self.device_total = s["device_total"]
            self.peak_gib = max(self.peak_gib, s.get("cuda_peak_allocated", s["cuda_allocated"]),
                                s.get("cuda_reserved", 0.0), s.get("cuda_peak_reserved", 0.0))
        else:
            self.rss.add(e.step, s.get("rss", 0.0))
            self.peak_gib = max(self.peak_gib, s.get("rss_peak", s.get("rss", 0.0)))

    # -- derived -----------------------------------------------------------------------------------------------
    @property
    def on_gpu(self) -> bool:
        return bool(self.allocated.x)

    @property
    def sampled_peak_gib(self) -> float:
        """The highest memory sample the plot shows (the process's own high-water mark, ``peak_gib``, also
        counts moments between samples, such as loading the model and the checkpoint)."""
        series = (self.reserved, self.allocated) if self.on_gpu else (self.rss,)
        return max((max(s.y) for s in series if s.y), default=0.0)

    def eta_s(self, now: float | None = None) -> float | None:
        """Seconds left at the speed of the steps seen so far; None before two steps."""
        done = self.step - self.first_step_seen
        if self.first_step_wall is None or done < 1 or not self.total_steps:
            return None
        elapsed = (now or time.time()) - self.first_step_wall
        return elapsed / done * max(self.total_steps - self.step, 0)

