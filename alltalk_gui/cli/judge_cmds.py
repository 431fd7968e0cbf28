"""Judge commands: ``judge`` scores a run's checkpoints after training; ``judge-audio`` scores any recordings
against a speaker's clips.

``judge DIR [--run R] [--again]`` speaks the project's judging set with the base model and each checkpoint of the
run (the newest by default) that was not judged during training, prints each step's scores, then the best
checkpoint by the judge and why, and a warning when the run over-trained.

``judge-audio CANDIDATE.wav ... --reference A.wav [B.wav ...] [--text "..."] [--language xx] [--json]`` prints,
for each candidate, its likeness to the speaker of the reference clips, its predicted MOS, with ``--text`` its
word error rate (character error rate for zh and ja) and the length checks: one JSON object per line with
``--json``, a few readable lines otherwise. The models load once for all candidates.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from alltalk_gui.cli import EXIT_OK, EXIT_SOME_REJECTED, EXIT_USAGE


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("judge", help="score a run's checkpoints (likeness, WER, MOS, length) and pick the best")
    p.add_argument("dir", help="project folder")
    p.add_argument("--run", help="run name (default: the newest run)")
    p.add_argument("--again", action="store_true", help="judge every step again, also those already judged")
    p.add_argument("--base-model", metavar="DIR", help="base-model folder, if it moved since training")
    p.add_argument("--whisper-model", metavar="NAME_OR_PATH", help="Whisper model to listen with: a name already "
                   "downloaded or a local folder (default: the one that transcribed the project, else the "
                   "Transcribe step's default, when on this computer)")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    p.add_argument("--json", action="store_true", help="each step's scores as one JSON object per line, then "
                   "the choice")
    p.set_defaults(func=cmd_judge)

    p = sub.add_parser("judge-audio", help="score recordings for likeness to a speaker, naturalness, "
                       "intelligibility and length")
    p.add_argument("candidates", nargs="+", metavar="CANDIDATE", help="audio file(s) to judge")
    p.add_argument("--reference", nargs="+", required=True, metavar="CLIP",
                   help="real clips of the speaker (their mean is the voice to sound like)")
    p.add_argument("--text", help="what the candidates say (for the error rate and the length against the text)")
    p.add_argument("--language", help="the text's language code (default: Whisper detects it)")
    p.add_argument("--whisper-model", metavar="NAME_OR_PATH", help="Whisper model to listen with: a name already "
                   "downloaded or a local folder (default: the Transcribe step's default, when on this computer)")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    p.add_argument("--json", action="store_true", help="one JSON object per candidate, one per line")
    p.set_defaults(func=cmd_judge_audio)


def cmd_judge_audio(args: argparse.Namespace) -> int:
    from alltalk_gui.core.voice.judge.available import unavailable_reason

    why = unavailable_reason()
    if why:
        print(f"alltalk-gui: {why}", file=sys.stderr)
        return EXIT_USAGE
    from alltalk_gui.core.audio import decode as audio
    from alltalk_gui.core.voice.judge.judge import Judge
    from alltalk_gui.core.voice.judge.likeness import JudgeAudioError

    language = None
    if args.language:
        from alltalk_gui.core.transcription.languages import whisper_option
        from alltalk_gui.core.transcription.transcribe import TranscriptionError, check_language

        try:
            check_language(whisper_option(args.language))
        except TranscriptionError as exc:
            print(f"alltalk-gui: {exc}", file=sys.stderr)
            return EXIT_USAGE
        language = args.language.lower()
    references = []
    for path in args.reference:
        try:
            references.append(audio.load(path))
        except audio.AudioError as exc:
            print(f"alltalk-gui: reference {path}: {exc}", file=sys.stderr)
            return EXIT_USAGE
    judge = Judge(args.device, whisper_model=args.whisper_model)
    try:
        speaker = judge.speaker(references)
    except JudgeAudioError as exc:
        print(f"alltalk-gui: {exc}", file=sys.stderr)
        return EXIT_USAGE
    rejected = 0
    for path in args.candidates:
        try:
            samples, rate = audio.load(path)
            verdict = judge.judge(samples, rate, speaker=speaker, text=args.text, language=language)
        except (audio.AudioError, JudgeAudioError) as exc:
            print(f"alltalk-gui: {path}: {exc}", file=sys.stderr)
            rejected += 1
            continue
        data = {"candidate": str(path), **verdict.to_dict()}
        if args.json:
            print(json.dumps(data, ensure_ascii=False), flush=True)
        else:
            print(_readable(Path(path).name, data), flush=True)
    return EXIT_SOME_REJECTED if rejected else EXIT_OK


def _readable(name: str, data: dict) -> str:
    lines = [name]
    readings = data["readings"]
    if data.get("likeness") is not None:
        lines.append(f"  likeness {data['likeness']:.2f}: {readings['likeness']}")
    if data.get("mos") is not None:
        lines.append(f"  MOS {data['mos']:.2f}: {readings['mos']}")
    for measure in ("wer", "cer"):
        if measure in data:
            lines.append(f"  {measure.upper()} {data[measure]:.2f}: {readings[measure]} (heard: {data['transcript']})")
    lines.append(f"  length: {readings['length']}")
    lines.extend(f"  ({note})" for note in data.get("notes", []))
    return "\n".join(lines)


def cmd_judge(args: argparse.Namespace) -> int:
    from alltalk_gui.core.voice.judge.available import unavailable_reason

    why = unavailable_reason()
    if why:
        print(f"alltalk-gui: {why}", file=sys.stderr)
        return EXIT_USAGE
    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.core.training.checkpoints import CheckpointError, resolve_checkpoint
    from alltalk_gui.core.voice.judge.best import best_choice, mark_choice, overtraining
    from alltalk_gui.core.voice.judge.checkpoint_judge import judge_run
    from alltalk_gui.core.voice.judge.judging_set import JudgingSetError
    from alltalk_gui.core.voice.judge.likeness import JudgeAudioError
    from alltalk_gui.core.voice.judge.scores import read_scores
    from alltalk_gui.core.voice.preview import PreviewError
    from alltalk_gui.core.voice.references import ReferenceClipError

    project = VoiceProject.open(args.dir)
    try:
        latest = resolve_checkpoint(project.root, "latest", args.run)
        run_dir = latest.path.parent.parent
        for scores in judge_run(run_dir, project_dir=project.root, dataset_dir=project.dataset_dir,
                                again=args.again, device=args.device, whisper_model=args.whisper_model,
                                base_model_dir=Path(args.base_model).expanduser() if args.base_model else None):
            what = f"step {scores.step}" if scores.step else "base model (step 0)"
            if args.json:
                print(json.dumps(scores.to_dict(), ensure_ascii=False), flush=True)
            else:
                print(f"{what}: {scores.summary()} ({scores.seconds:.0f} s)", flush=True)
        choice = best_choice(project.root, latest.run)
    except (CheckpointError, JudgingSetError, PreviewError, ReferenceClipError, JudgeAudioError) as exc:
        print(f"alltalk-gui: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if choice.scores is not None:
        mark_choice(run_dir, choice.checkpoint.path)
    warning = overtraining(read_scores(run_dir))
    if args.json:
        print(json.dumps({"best": str(choice.checkpoint.path), "step": choice.checkpoint.step,
                          "reason": choice.reason, "overtraining": warning}, ensure_ascii=False))
    else:
        print(f"Best: {choice.checkpoint.path}\n  {choice.reason}")
        if warning:
            print(f"Warning: {warning}")
    return EXIT_OK
