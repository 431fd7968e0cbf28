"""The checkpoint judge inside a training run: scores the base model when the run starts and each checkpoint as
it is saved, from the training process's own stream of events (:mod:`alltalk_gui.core.training.runner` loads
this module by name; the loop itself knows nothing of the judge).

After each judged step it yields a :class:`~alltalk_gui.core.training.events.Judged` event (the scores, how long
it took, the judge's best so far and why), marks the judge's choice so the loop never prunes it, and warns of
over-training. A checkpoint saved because the run was asked to stop, or ran out of memory, is left for
``alltalk-gui judge`` after the run (the user is waiting for it to end). Nothing the judge does can stop
training: a failure becomes a warning in the log. Without a Whisper model on this computer it says so once and
stays off (intelligibility comes first in the choice). The voice models are unloaded after each judged step, so
the GPU memory goes back to training.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any, Iterator

from alltalk_gui.core.training.checkpoints import read_checkpoint, run_checkpoints
from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.events import (Checkpoint, CheckpointReason, Event, Judged, Log, LogLevel,
                                              Started)
from alltalk_gui.core.voice.judge.available import unavailable_reason
from alltalk_gui.core.voice.judge.best import choose, mark_choice, overtraining
from alltalk_gui.core.voice.judge.scores import StepScores, read_scores, step_folder

SKIPPED_REASONS = (CheckpointReason.STOPPED, CheckpointReason.OUT_OF_MEMORY)


class JudgeOff(Exception):
    """The judge cannot work in this run (no Whisper model on this computer); the message says so."""


def observer(config: TrainConfig) -> Any:
    """The judge for this run, or None when the run does not judge."""
    if not config.judge:
        return None
    why = unavailable_reason()
    if why:
        return _Unavailable(why)
    return TrainingJudge(config)


class _Unavailable:
    """Says once, when the run starts, why there is no judge."""

    def __init__(self, why: str) -> None:
        self.why = why

    def __call__(self, event: Event) -> Iterator[Event]:
        if isinstance(event, Started):
            yield Log(level=LogLevel.WARNING, message=self.why)


class TrainingJudge:
    """``settings``: the generation settings to speak with (default: the base model's; tests cap the tiny model's
    audio codes, as it rarely stops by itself)."""

    def __init__(self, config: TrainConfig, settings: Any = None) -> None:
        self.config = config
        self.settings = settings
        self.run_dir = Path(config.run_dir)
        self._judge: Any = None
        self.off = False  # no Whisper model: said once, then silent

    def __call__(self, event: Event) -> Iterator[Event]:
        if isinstance(event, Started):
            if not (step_folder(self.run_dir, 0) / "scores.json").is_file():  # a resumed run was judged already
                yield from self._judge_step(None)
        elif isinstance(event, Checkpoint):
            if event.reason in SKIPPED_REASONS:
                yield Log(level=LogLevel.INFO, message=f"The judge skips step {event.step} (saved to stop); "
                                                       "score it after the run with: alltalk-gui judge DIR")
            else:
                yield from self._judge_step(event.path)

    def _checkpoint_judge(self) -> Any:
        if self._judge is None:
            from alltalk_gui.core.voice.judge.checkpoint_judge import CheckpointJudge
            from alltalk_gui.core.transcription.wer import transcribed_with
            from alltalk_gui.core.voice.judge.judge import Judge

            cfg = self.config
            device = "cpu" if cfg.device == "cpu" else "auto"
            whisper = cfg.judge_whisper_model or transcribed_with(cfg.project_dir or cfg.dataset_path.parent)
            judge = Judge(device, whisper_model=whisper or None)
            checker, why = judge.checker()
            if checker is None:  # intelligibility comes first in the choice: no judging without it
                raise JudgeOff(f"The checkpoint judge is off for this run: it listens with Whisper, and there is "
                               f"{why}. Eval loss chooses the best checkpoint.")
            self._judge = CheckpointJudge(
                project_dir=cfg.project_dir or cfg.dataset_path.parent, dataset_dir=cfg.dataset_path,
                language=cfg.language, engine=cfg.engine, base_model_dir=cfg.base_model_dir, device=device,
                settings=self.settings, judge=judge)
        return self._judge

    def _judge_step(self, path: str | None) -> Iterator[Event]:
        if self.off:
            return
        what = f"step {Path(path).name.split('_')[-1].lstrip('0') or '0'}" if path else "the base model"
        try:
            judge = self._checkpoint_judge()
            scores = judge.judge_step(self.run_dir, read_checkpoint(path) if path else None)
        except JudgeOff as exc:
            self.off = True
            yield Log(level=LogLevel.WARNING, message=str(exc))
            return
        except Exception as exc:  # the judge is an aid: training goes on without it
            last = traceback.format_exception_only(type(exc), exc)[-1].strip()
            yield Log(level=LogLevel.WARNING, message=f"The judge could not score {what}: {last}")
            return
        finally:
            if self._judge is not None:
                self._judge.release()
        yield from self._report(scores)

    def _report(self, scores: StepScores) -> Iterator[Event]:
        every = read_scores(self.run_dir)
        existing = {c.step: c for c in run_checkpoints(self.run_dir)}
        picked = choose(every, list(existing))
        best_step, reason = (picked[0].step, picked[1]) if picked else (None, "")
        if best_step is not None:
            mark_choice(self.run_dir, existing[best_step].path)
        yield Judged(step=scores.step, likeness=scores.likeness, error_rate=scores.error_rate,
                     measure=scores.measure, mos=scores.mos, length_problems=scores.length_problems,
                     sentences=len(scores.sentences), seconds=scores.seconds, checkpoint=scores.checkpoint,
                     best_step=best_step, best_reason=reason)
        warning = overtraining(every) if scores.step > 0 else None
        if warning:
            yield Log(level=LogLevel.WARNING, message=warning)

