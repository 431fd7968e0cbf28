"""The judge's scores of a run, one folder per judged step beside the run's checkpoints.

``runs/<run>/judge/step_0000400/`` holds ``scores.json`` (the means over the judging set and each sentence's
verdict) and the spoken sentences (``sentence_1.wav`` ...), so the Preview page can play what the judge heard
after the checkpoint itself has been pruned. Step 0 is the base model. Writes are atomic: a reader sees a step's
scores whole or not at all.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Any

from alltalk_gui.core import atomic, safe_paths
from alltalk_gui.core.voice.judge.judge import Verdict

FOLDER = "judge"
SCORES_FILE = "scores.json"


@dataclass
class SentenceScore:
    text: str
    wav: str            # file name inside the step's folder
    verdict: Verdict


@dataclass
class StepScores:
    """The judge's view of one step (0: the base model): the means over its judging sentences."""

    step: int
    checkpoint: str | None          # the checkpoint folder it judged; None for the base model
    likeness: float | None
    error_rate: float | None
    measure: str                    # "wer" or "cer"
    mos: float | None
    length_problems: int            # sentences with a length problem
    seconds: float                  # how long judging took (speaking included)
    sentences: list[SentenceScore] = field(default_factory=list)
    folder: Path | None = None      # where it is stored (not saved in the file)

    @classmethod
    def of(cls, step: int, checkpoint: str | None, sentences: list[SentenceScore], seconds: float) -> "StepScores":
        verdicts = [s.verdict for s in sentences]

        def mean(values: list[float | None]) -> float | None:
            known = [v for v in values if v is not None]
            return round(fmean(known), 4) if known else None

        return cls(step=step, checkpoint=checkpoint, likeness=mean([v.likeness for v in verdicts]),
                   error_rate=mean([v.error_rate for v in verdicts]),
                   measure=next((v.measure for v in verdicts if v.error_rate is not None), "wer"),
                   mos=mean([v.mos for v in verdicts]), length_problems=sum(not v.length.ok for v in verdicts),
                   seconds=round(seconds, 2), sentences=sentences)

    def summary(self) -> str:
        """"likeness 0.84, WER 0.04, MOS 3.9" (what was measured)."""
        from alltalk_gui.core.training.event_text import judge_summary

        return judge_summary(self.likeness, self.error_rate, self.measure, self.mos, self.length_problems,
                             len(self.sentences))

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "checkpoint": self.checkpoint, "likeness": self.likeness,
                "error_rate": self.error_rate, "measure": self.measure, "mos": self.mos,
                "length_problems": self.length_problems, "seconds": self.seconds,
                "sentences": [{"text": s.text, "wav": s.wav, **s.verdict.to_dict()} for s in self.sentences]}

    @classmethod
    def from_dict(cls, data: dict[str, Any], folder: Path | None = None) -> "StepScores":
        sentences = [SentenceScore(str(s["text"]), str(s["wav"]), Verdict.from_dict(s)) for s in data["sentences"]]
        return cls(step=int(data["step"]), checkpoint=data.get("checkpoint"), likeness=data.get("likeness"),
                   error_rate=data.get("error_rate"), measure=str(data.get("measure", "wer")), mos=data.get("mos"),
                   length_problems=int(data.get("length_problems", 0)), seconds=float(data.get("seconds", 0.0)),
                   sentences=sentences, folder=folder)

    def wav(self, index: int) -> Path:
        """The spoken sentence ``index`` (inside the step's folder; a name leading out of it is refused)."""
        assert self.folder is not None
        return safe_paths.inside(self.folder, self.sentences[index].wav, "wav", "the judge's folder")


def step_folder(run_dir: str | os.PathLike[str], step: int) -> Path:
    return Path(run_dir) / FOLDER / f"step_{step:07d}"


def write_scores(run_dir: str | os.PathLike[str], scores: StepScores) -> Path:
    folder = step_folder(run_dir, scores.step)
    folder.mkdir(parents=True, exist_ok=True)
    atomic.write_json(folder / SCORES_FILE, scores.to_dict())
    scores.folder = folder
    return folder


def read_scores(run_dir: str | os.PathLike[str]) -> list[StepScores]:
    """Every judged step of a run, step 0 (the base model) first; unreadable files are skipped."""
    root = Path(run_dir) / FOLDER
    found = []
    for path in root.glob(f"step_*/{SCORES_FILE}") if root.is_dir() else ():
        try:
            found.append(StepScores.from_dict(json.loads(path.read_text(encoding="utf-8")), path.parent))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return sorted(found, key=lambda s: s.step)
