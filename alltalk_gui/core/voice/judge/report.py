"""``report.json``: what the judge found about an exported voice, written beside the model by every export.

It names the checkpoint, its eval loss, the judge's scores of it (means and each judging sentence's verdict,
without the audio), the base model's scores to read them against, and the judge's choice for the run with the
reason. A checkpoint that was never judged says so (``"judged": false``): run ``alltalk-gui judge DIR`` first.
"""

from __future__ import annotations

from typing import Any

from alltalk_gui.core.training.checkpoints import CheckpointInfo, run_checkpoints
from alltalk_gui.core.voice.judge.best import choose, describe
from alltalk_gui.core.voice.judge.scores import read_scores

FILE = "report.json"


def export_report(checkpoint: CheckpointInfo) -> dict[str, Any]:
    run_dir = checkpoint.path.parent.parent
    scores = read_scores(run_dir)
    this = next((s for s in scores if s.step == checkpoint.step), None)
    base = next((s for s in scores if s.step == 0), None)
    picked = choose(scores, [c.step for c in run_checkpoints(run_dir)])

    def plain(step_scores):
        data = step_scores.to_dict()
        for sentence in data["sentences"]:
            sentence.pop("wav", None)
        return data

    return {
        "engine": checkpoint.engine, "run": checkpoint.run, "step": checkpoint.step, "epoch": checkpoint.epoch,
        "eval_loss": checkpoint.eval_loss, "judged": this is not None,
        "scores": plain(this) if this is not None else None,
        "summary": describe(this, base) if this is not None else None,
        "base_model": plain(base) if base is not None else None,
        "judge_choice": {"step": picked[0].step, "reason": picked[1]} if picked else None,
        "note": "" if this is not None else "This checkpoint was not judged: alltalk-gui judge DIR scores it.",
    }
