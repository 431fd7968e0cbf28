"""Judge commands: ``judge-audio`` scores any recordings against a speaker's clips.

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
