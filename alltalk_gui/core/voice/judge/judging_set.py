"""The fixed judging set of a project: the same sentences, reference clips and seed for every checkpoint, so the
scores of step 0 (the base model) and of each checkpoint compare like with like.

* **Sentences**: 4 to 8 of the shipped preview sentences in the project's language
  (``resources/preview_sentences/<language>.txt``), leaving out any that is in the training data, so the judge
  hears the voice say something it did not learn by heart.
* **The speaker**: the dataset's eval clips (``metadata_eval.csv``), which training never learns from; the
  judge's likeness is measured against their mean. Without eval clips, the training clips that do not condition
  the voice stand in (and the set says so).
* **Conditioning**: the cleanest 3-10 s training clips (as Preview picks them), never an eval clip, so a model
  that merely copies its reference does not score its own prompt.
* **Seed**: :data:`SEED`, for the same sampling at every step.

The set is saved as ``judge/judging_set.json`` in the project (clip paths relative to the dataset folder) and
reused while its clips are there; a re-exported dataset gets a new one.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from alltalk_gui.core import atomic, safe_paths
from alltalk_gui.core.dataset.metadata import EVAL_CSV, TRAIN_CSV, MetadataError, read_metadata
from alltalk_gui.core.transcription.wer import normalise_words

SEED = 1234
MIN_SENTENCES, MAX_SENTENCES = 4, 8
CONDITIONING_CLIPS = 1  # one clean clip, as AllTalk speaks from; each more one costs XTTS seconds per sentence
FOLDER = "judge"
FILE = "judging_set.json"


class JudgingSetError(Exception):
    """No judging set can be made: no sentences for the language, or no clips of the speaker."""


@dataclass
class JudgingSet:
    language: str
    sentences: list[str]
    speaker_clips: list[str]        # relative to the dataset folder: the held-out real clips
    conditioning_clips: list[str]   # relative to the dataset folder: the references the voice speaks from
    seed: int = SEED
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "JudgingSet":
        return cls(language=str(data["language"]), sentences=[str(s) for s in data["sentences"]],
                   speaker_clips=[str(p) for p in data["speaker_clips"]],
                   conditioning_clips=[str(p) for p in data["conditioning_clips"]], seed=int(data["seed"]),
                   notes=[str(n) for n in data.get("notes", [])])

    def paths(self, dataset_dir: Path, which: list[str]) -> list[Path]:
        """The clips as paths inside ``dataset_dir`` (a path that leads out of it is refused)."""
        return [safe_paths.inside(dataset_dir, name, "clip") for name in which]


def judging_set(project_dir: str | os.PathLike[str], dataset_dir: str | os.PathLike[str],
                language: str) -> JudgingSet:
    """The project's judging set: the saved one while its clips exist and its language matches, else a new one
    (saved).

    Raises:
        JudgingSetError: fewer than 4 sentences for ``language``, or no eval or training clip.
    """
    path = Path(project_dir) / FOLDER / FILE
    dataset = Path(dataset_dir)
    try:
        saved = JudgingSet.from_dict(json.loads(path.read_text(encoding="utf-8")))
        clips = saved.paths(dataset, saved.speaker_clips + saved.conditioning_clips)
        if saved.language == language and all(p.is_file() for p in clips):
            return saved
    except (OSError, ValueError, KeyError, TypeError):
        pass
    made = make_judging_set(dataset, language)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_json(path, made.to_dict())
    return made


def make_judging_set(dataset_dir: Path, language: str) -> JudgingSet:
    """A new judging set from the dataset in ``dataset_dir`` (see the module's description)."""
    from alltalk_gui.core.voice.preview import default_sentences
    from alltalk_gui.core.voice.references import candidate_references

    train, held_out = _rows(dataset_dir, TRAIN_CSV), _rows(dataset_dir, EVAL_CSV)
    learned = {tuple(normalise_words(row.text)) for row in train + held_out}
    sentences = [s for s in default_sentences(language) if tuple(normalise_words(s)) not in learned]
    if len(sentences) < MIN_SENTENCES:
        raise JudgingSetError(f"There are only {len(sentences)} judging sentences for '{language}' that are not in "
                              f"the training data; the judge needs {MIN_SENTENCES} (resources/preview_sentences).")
    names = {(dataset_dir / row.audio_file).resolve(): row.audio_file for row in train + held_out}
    speaker = [row.audio_file for row in held_out if (dataset_dir / row.audio_file).is_file()]
    conditioning = [names[c.path.resolve()] for c in candidate_references(dataset_dir)
                    if c.path.resolve() in names and names[c.path.resolve()] not in speaker][:CONDITIONING_CLIPS]
    if not conditioning:
        raise JudgingSetError(f"The dataset at {dataset_dir} has no clean 3-10 s training clip to speak from.")
    notes = []
    if not speaker:
        speaker = [row.audio_file for row in train
                   if (dataset_dir / row.audio_file).is_file() and row.audio_file not in conditioning]
        notes.append("the dataset has no eval clips: likeness is measured against training clips")
    if not speaker:
        raise JudgingSetError(f"The dataset at {dataset_dir} has no clip of the speaker to compare with.")
    return JudgingSet(language=language, sentences=sentences[:MAX_SENTENCES], speaker_clips=speaker,
                      conditioning_clips=conditioning, notes=notes)


def _rows(dataset_dir: Path, name: str) -> list:
    try:
        return read_metadata(dataset_dir / name) if (dataset_dir / name).is_file() else []
    except MetadataError:
        return []
