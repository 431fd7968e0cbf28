"""Judge a step of a run: speak the project's judging set with the base model (step 0) or a checkpoint, through
the engine like any preview, and score each sentence with the :class:`~.judge.Judge`.

Every engine goes through here the same way: the engine speaks (``PreviewEngine``), the judge listens. The spoken
sentences and the scores are kept in the run's ``judge/step_N/`` (:mod:`.scores`).
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from alltalk_gui.core.training.checkpoints import CHECKPOINTS, CheckpointInfo
from alltalk_gui.core.voice.judge.judge import Judge
from alltalk_gui.core.voice.judge.judging_set import JudgingSet, judging_set
from alltalk_gui.core.voice.judge.scores import SentenceScore, StepScores, read_scores, step_folder, write_scores


class CheckpointJudge:
    """The judging set, the voice models and the judge of one run, loaded as they are first needed.

    Args:
        settings: the generation settings to speak with (default: the base model's, with the judging set's seed).
        judge: an already loaded :class:`Judge` (default: one on ``device`` listening with ``whisper_model``).
    """

    def __init__(self, *, project_dir: str | os.PathLike[str], dataset_dir: str | os.PathLike[str], language: str,
                 engine: str, base_model_dir: str | os.PathLike[str], device: str = "auto",
                 whisper_model: str | None = None, settings: Any = None, judge: Judge | None = None) -> None:
        from alltalk_gui.core.voice.preview import GenerationSettings, PreviewEngine, load_reference

        self.project_dir = Path(project_dir)
        self.dataset_dir = Path(dataset_dir)
        self.base_model_dir = Path(base_model_dir)
        self.language = language
        self.set: JudgingSet = judging_set(project_dir, dataset_dir, language)
        self.voice = PreviewEngine(device, engine=engine)
        # Clips are the reference of the engines that speak from audio; the engines that speak from a speaker name
        # or a description get the run's own words at each step (reference_for).
        self.reference = (load_reference(self.voice.engine, self.set.paths(self.dataset_dir,
                                                                           self.set.conditioning_clips))
                          if self.voice.engine.reference_kind.uses_audio else None)
        self.settings = replace(settings or GenerationSettings.for_engine(self.voice.engine, self.base_model_dir),
                                seed=self.set.seed)
        self.judge = judge or Judge(device, whisper_model or None)
        self._speaker: np.ndarray | None = None

    def speaker(self) -> np.ndarray:
        """The speaker's embedding from the judging set's held-out clips (computed once)."""
        if self._speaker is None:
            from alltalk_gui.core.audio import decode as audio

            clips = [audio.load(p) for p in self.set.paths(self.dataset_dir, self.set.speaker_clips)]
            self._speaker = self.judge.speaker(clips)
        return self._speaker

    def judge_step(self, run_dir: str | os.PathLike[str], checkpoint: CheckpointInfo | None) -> StepScores:
        """Speak and score the judging set with ``checkpoint`` (None: the base model, as step 0); the scores and
        the wavs go into ``run_dir``'s ``judge/step_N/``.

        Raises:
            PreviewError: the model cannot speak a sentence; JudgeAudioError: what it said cannot be measured.
        """
        from alltalk_gui.core.audio import decode as audio

        started = time.perf_counter()
        step = checkpoint.step if checkpoint is not None else 0
        folder = step_folder(run_dir, step)
        folder.mkdir(parents=True, exist_ok=True)
        weights = checkpoint.weights if checkpoint is not None else None
        rate = self.voice.engine.output_sample_rate
        reference = self.reference_for(run_dir, checkpoint)
        speaker = self.speaker()
        sentences = []
        for i, text in enumerate(self.set.sentences, start=1):
            wav = self.voice.synthesize(self.base_model_dir, weights, text, reference, self.language,
                                        self.settings)
            name = f"sentence_{i}.wav"
            audio.write_wav(folder / name, wav, rate)
            verdict = self.judge.judge(wav, rate, speaker=speaker, text=text, language=self.language)
            sentences.append(SentenceScore(text, name, verdict))
        scores = StepScores.of(step, checkpoint.path.name if checkpoint is not None else None, sentences,
                               time.perf_counter() - started)
        write_scores(run_dir, scores)
        return scores

    def reference_for(self, run_dir: str | os.PathLike[str], checkpoint: CheckpointInfo | None) -> Any:
        """What the step speaks from: the judging set's clips, or the speaker name or description the run trained
        with, as a preview of the checkpoint would (the base model, step 0, speaks from the same words, as in a
        preview's A/B pair).

        Raises:
            PreviewError: the run has no such words (yet).
        """
        from alltalk_gui.core.voice.preview import load_reference

        if self.reference is not None:
            return self.reference
        engine = self.voice.engine
        step = checkpoint or CheckpointInfo(  # the run's own words are known before its first checkpoint
            path=Path(run_dir) / CHECKPOINTS / "step_0000000", run=Path(run_dir).name, step=0, epoch=0,
            eval_loss=None, base_model_dir=self.base_model_dir, language=self.language,
            config={"project_dir": str(self.project_dir), "engine": engine.name})
        return load_reference(engine, [], engine.reference_suggestion(step))

    def release(self) -> None:
        """Give the voice models' memory back (the GPU's to training), keeping the judging set."""
        self.voice.unload()
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except ImportError:
            pass


def judge_run(run_dir: str | os.PathLike[str], *, project_dir: str | os.PathLike[str],
              dataset_dir: str | os.PathLike[str], again: bool = False, device: str = "auto",
              whisper_model: str | None = None, base_model_dir: str | os.PathLike[str] | None = None,
              settings: Any = None, judge: Judge | None = None) -> Iterator[StepScores]:
    """Judge a run after training: the base model (step 0) and each of its checkpoints not judged yet (all with
    ``again``), yielding each step's scores as it is done. The engine, language and base model are the run's;
    without ``whisper_model`` it listens with the model that transcribed the project, if any.

    Raises:
        CheckpointError: the run has no checkpoint; JudgingSetError, PreviewError: as :class:`CheckpointJudge`.
    """
    from alltalk_gui.core.training.checkpoints import CheckpointError, run_checkpoints
    from alltalk_gui.core.transcription.wer import transcribed_with

    checkpoints = run_checkpoints(run_dir)
    if not checkpoints:
        raise CheckpointError(f"The run {Path(run_dir).name} has no complete checkpoint to judge.")
    newest = checkpoints[-1]
    done = {s.step for s in read_scores(run_dir)} if not again else set()
    todo: list[CheckpointInfo | None] = [c for c in [None, *checkpoints]
                                          if (c.step if c is not None else 0) not in done]
    if not todo:
        return
    checkpoint_judge = CheckpointJudge(
        project_dir=project_dir, dataset_dir=dataset_dir, language=newest.language or "en", engine=newest.engine,
        base_model_dir=base_model_dir or newest.base_model_dir, device=device,
        whisper_model=whisper_model or transcribed_with(project_dir),
        settings=settings, judge=judge)
    try:
        for checkpoint in todo:
            yield checkpoint_judge.judge_step(run_dir, checkpoint)
    finally:
        checkpoint_judge.release()
