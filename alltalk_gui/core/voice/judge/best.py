"""The best checkpoint by the judge, the sentence that says why, and the over-training warning.

The combination (documented in docs/judge.md):

1. **Intelligibility first, as a limit.** A checkpoint qualifies when its error rate (WER, or CER for Chinese and
   Japanese) is at most the base model's plus :data:`~.thresholds.ERROR_MARGIN`: fine-tuning must not cost
   clarity. Without a judged base model every judged checkpoint qualifies.
2. **Likeness decides** among those that qualify: the most like the speaker wins.
3. **Naturalness breaks ties**: likeness within :data:`LIKENESS_TIE` counts as equal, and the higher MOS wins
   (then the lower error rate, then the earlier step).
4. If no checkpoint qualifies, the clearest one is chosen, and the reason says that none is as clear as the base.
5. **Eval loss only when no judge ran**: a run without judged checkpoints keeps the lowest eval loss (or the
   latest while there is no eval), as before.

Over-training: the newest judged checkpoint, against the judge's choice before it, gained less than
:data:`~.thresholds.STALL_LIKENESS_GAIN` likeness while its error rate rose by more than
:data:`~.thresholds.RISE_ERROR`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from alltalk_gui.core.training.checkpoints import (CHECKPOINTS, KEEP_MARK, CheckpointInfo, default_checkpoint,
                                                   resolve_checkpoint, run_checkpoints)
from alltalk_gui.core.voice.judge import thresholds as t
from alltalk_gui.core.voice.judge.scores import StepScores, read_scores

LIKENESS_TIE = 0.01


@dataclass(frozen=True)
class Choice:
    checkpoint: CheckpointInfo
    reason: str                      # "step 400: likeness 0.84 (base 0.61), WER 0.04, MOS 3.9" and why
    scores: StepScores | None = None  # the judge's scores of it; None when eval loss chose


def choose(scores: Sequence[StepScores], available: Sequence[int] | None = None) -> tuple[StepScores, str] | None:
    """The judge's pick among the judged checkpoints (``available``: the steps whose checkpoint still exists;
    None: all), with the reason; None when no checkpoint was judged."""
    base = next((s for s in scores if s.step == 0), None)
    judged = [s for s in scores if s.step > 0 and (available is None or s.step in available)]
    if not judged:
        return None
    limit = base.error_rate + t.ERROR_MARGIN if base is not None and base.error_rate is not None else None
    clear = [s for s in judged if limit is None or s.error_rate is None or s.error_rate <= limit]
    if clear:
        top = max(s.likeness if s.likeness is not None else -1.0 for s in clear)
        tied = [s for s in clear if (s.likeness if s.likeness is not None else -1.0) >= top - LIKENESS_TIE]
        pick = min(tied, key=lambda s: (-(s.mos or 0.0), s.error_rate if s.error_rate is not None else 1e9, s.step))
        among = " among those no less clear than the base model" if limit is not None else ""
        if top < 0:  # no likeness was measured (no voice the encoder could hear)
            why = f"no likeness could be measured; the most natural{among}"
        else:
            why = f"the most like the speaker{among}" + (", the most natural of those as alike" if len(tied) > 1
                                                         else "")
    else:
        pick = min(judged, key=lambda s: (s.error_rate, s.step))
        why = (f"no checkpoint is as clear as the base model ({base.measure.upper()} {base.error_rate:.2f}); "
               "this is the clearest")
    return pick, f"{describe(pick, base)}: {why}"


def describe(scores: StepScores, base: StepScores | None) -> str:
    """"step 400: likeness 0.84 (base 0.61), WER 0.04, MOS 3.9"."""
    parts = []
    if scores.likeness is not None:
        of_base = f" (base {base.likeness:.2f})" if base is not None and base.likeness is not None else ""
        parts.append(f"likeness {scores.likeness:.2f}{of_base}")
    if scores.error_rate is not None:
        parts.append(f"{scores.measure.upper()} {scores.error_rate:.2f}")
    if scores.mos is not None:
        parts.append(f"MOS {scores.mos:.1f}")
    return f"step {scores.step}: " + ", ".join(parts)


def overtraining(scores: Sequence[StepScores]) -> str | None:
    """A warning when the newest judged checkpoint stalls in likeness while its error rate rises, else None."""
    judged = [s for s in scores if s.step > 0]
    if len(judged) < 2:
        return None
    newest = judged[-1]
    earlier = choose([s for s in scores if s.step < newest.step])
    if earlier is None:
        return None
    best = earlier[0]
    if None in (newest.likeness, best.likeness, newest.error_rate, best.error_rate):
        return None
    if newest.likeness - best.likeness < t.STALL_LIKENESS_GAIN and newest.error_rate - best.error_rate > t.RISE_ERROR:
        unit = newest.measure.upper()
        return (f"Over-training: since step {best.step} the likeness has stopped rising ({best.likeness:.2f} → "
                f"{newest.likeness:.2f}) while the {unit} rose ({best.error_rate:.2f} → {newest.error_rate:.2f}) at "
                f"step {newest.step}. More training is making the voice less clear: use step {best.step}, or stop.")
    return None


def best_choice(project_dir: str | os.PathLike[str], run: str | None = None, engine: str | None = None) -> Choice:
    """What Preview and Export use unless told otherwise: the judge's best checkpoint of the run (default: the
    newest run, of ``engine`` when given), or, when none of its checkpoints was judged, the lowest eval loss (or
    the latest).

    Raises:
        CheckpointError: there is no checkpoint yet, or no such run.
    """
    latest = resolve_checkpoint(project_dir, "latest", run, engine=engine)
    run_dir = latest.path.parent.parent
    existing = {c.step: c for c in run_checkpoints(run_dir)}
    scores = read_scores(run_dir)
    picked = choose(scores, list(existing))
    if picked is not None:
        step_scores, reason = picked
        return Choice(existing[step_scores.step], f"chosen by the judge: {reason}", step_scores)
    fallback = default_checkpoint(project_dir, latest.run, engine=engine)
    why = (f"the lowest eval loss ({fallback.eval_loss:.3f})" if fallback.eval_loss is not None
           else "the latest (no eval loss yet)")
    return Choice(fallback, f"step {fallback.step}: {why}; the judge has not scored this run's checkpoints")



def mark_choice(run_dir: str | os.PathLike[str], best: Path) -> None:
    """The judge's choice carries the keep mark, so the training loop never prunes it; no other checkpoint does."""
    for folder in (Path(run_dir) / CHECKPOINTS).glob("step_*"):
        mark = folder / KEEP_MARK
        if folder == best:
            if not mark.is_file():
                mark.write_text("the checkpoint judge's choice\n", encoding="utf-8")
        elif mark.is_file():
            mark.unlink()
