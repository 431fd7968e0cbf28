"""Transcript commands: ``transcribe`` (recordings -> clips), ``segments`` (list clips), ``dataset`` (export)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import Any

from alltalk_gui.cli import EXIT_OK, EXIT_SOME_REJECTED, EXIT_USAGE
from alltalk_gui.core.transcript.flags import DEFAULT_MIN_S
from alltalk_gui.core.project.duration_guidance import format_duration
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.transcription.model_files import BACKENDS, OPENAI


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("transcribe", help="transcribe a project's recordings and cut them into training clips")
    p.add_argument("dir", help="project folder")
    p.add_argument("--backend", choices=BACKENDS, default=OPENAI, help="speech recogniser (default openai-whisper)")
    p.add_argument("--model", help="model name (tiny ... large-v3, turbo) or a local model path "
                                   "(default: turbo on a GPU, small on a CPU)")
    p.add_argument("--language", default="auto", help="auto (detect) or a language code such as en, de, zh-cn (default auto)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--min-s", type=float, default=DEFAULT_MIN_S, help=f"shortest clip wanted (default {DEFAULT_MIN_S})")
    p.add_argument("--max-s", type=float, default=None, help="longest clip (default: the project's engine's; "
                   "capped at the engine's limit: 'alltalk-gui engines' lists them)")
    p.add_argument("--no-download", action="store_true", help="fail instead of downloading a missing model")
    p.add_argument("--no-speaker-check", action="store_true",
                   help="do not measure whose voice each clip holds (the other_speaker flag); 'segments "
                        "--speaker-check' measures later")
    p.set_defaults(func=cmd_transcribe)

    p = sub.add_parser("segments", help="list a project's clips with their flags")
    p.add_argument("dir", help="project folder")
    p.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    p.add_argument("--flagged", action="store_true", help="only kept clips that have flags")
    p.add_argument("--all", action="store_true", help="include deleted clips")
    p.add_argument("--speaker-check", action="store_true",
                   help="measure the voice of the clips not measured yet (after edits), then list")
    p.add_argument("--main-voice", metavar="CLIP",
                   help="say which clip holds your voice when two voices share the recordings ('auto': let the "
                        "clips decide again); clips of other voices are then flagged other_speaker")
    p.set_defaults(func=cmd_segments)

    p = sub.add_parser("dataset", help="export the kept clips as a coqui training dataset (dataset/ folder)")
    p.add_argument("dir", help="project folder")
    p.add_argument("--eval-split", type=float, default=0.15, help="share of clips for evaluation (default 0.15)")
    p.add_argument("--seed", type=int, default=0, help="seed of the train/eval split (default 0)")
    p.add_argument("--skip-refused", action="store_true",
                   help="export the usable clips even if some are refused (they are still listed)")
    p.set_defaults(func=cmd_dataset)


def project_vocab(project: VoiceProject) -> Any:
    """The vocabulary of the base model chosen for the project's engine (its exact text check), or None."""
    from alltalk_gui.core.engine_api.engine import get_engine

    return get_engine(project.engine).base_model_vocab()


def _fail(message: str) -> int:
    print(f"alltalk-gui: {message}", file=sys.stderr)
    return EXIT_USAGE


def cmd_transcribe(args: argparse.Namespace) -> int:
    from alltalk_gui.core.transcription import model_files as whisper_models
    from alltalk_gui.core.transcription.transcribe import (TranscribeOptions, TranscriptionError, check_request,
                                                           default_model, resolve_device, transcribe_project)

    project = VoiceProject.open(args.dir)
    try:
        vocab = project_vocab(project)
        vocab = str(vocab) if vocab else None
        check_request(project, args.language, args.min_s, args.max_s, vocab)  # refused before any download
        device = resolve_device(args.device)
        model = args.model or default_model(args.backend, device)
        resolved = whisper_models.resolve(args.backend, model)
        if not resolved.on_disk:
            assert resolved.download is not None
            if args.no_download:
                return _fail(f"The {args.backend} model '{model}' is not on this computer and --no-download was "
                             f"given. {resolved.download.describe()}")
            print(f"The {args.backend} model '{model}' is not on this computer. {resolved.download.describe()}")
            whisper_models.download(resolved, progress=_DownloadPrinter())
            print()
        options = TranscribeOptions(backend=args.backend, model=model, language=args.language, device=device)
        printer = _ProgressPrinter()
        report = transcribe_project(project, options, progress=printer, min_s=args.min_s, max_s=args.max_s,
                                    vocab_file=vocab)
    except (TranscriptionError, whisper_models.ModelError, ValueError) as exc:
        return _fail(str(exc))
    if not args.no_speaker_check:
        _check_speakers(report.segments)
    summary = report.segments.summary()
    print(f"Transcribed {len(report.transcribed)} file(s), {format_duration(report.audio_seconds)} of audio in "
          f"{report.seconds:.1f} s ({', '.join(sorted(set(report.languages.values())))}).")
    for name, reason in report.failed:
        print(f"  failed {name}: {reason}", file=sys.stderr)
    if report.language_note:
        print(f"Note: {report.language_note}")
    print(f"{summary.clips} clips, {summary.flagged} flagged. {summary.guidance.message}")
    _print_speakers(report.segments)
    print(f"Review them with: alltalk-gui segments {shlex.quote(args.dir)} --flagged")
    return EXIT_SOME_REJECTED if report.failed else EXIT_OK


def cmd_segments(args: argparse.Namespace) -> int:
    from alltalk_gui.core.transcript.segments import SegmentEditError, SegmentList, SegmentsError

    project = VoiceProject.open(args.dir)
    try:
        clips = SegmentList.open(project, vocab_file=project_vocab(project))
    except SegmentsError as exc:
        return _fail(str(exc))
    if not clips.is_checked_with_current_checker():
        clips.recheck()  # e.g. a base model (its vocabulary) was chosen since; else listing needs no torch
    try:
        if args.speaker_check:
            _check_speakers(clips)
        elif not clips.read_only:
            clips.refresh_speaker_flags()  # embeddings measured while the list was closed
        if args.main_voice:
            clips.choose_main_voice(None if args.main_voice == "auto" else args.main_voice)
    except SegmentEditError as exc:
        return _fail(str(exc))
    finally:
        clips.close()
    chosen = clips.view("flagged" if args.flagged else "all" if args.all else "kept")
    rows = [_clip_row(clips, s) for s in chosen]
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return EXIT_OK
    if not len(clips):
        print(f"No clips yet. Make them with: alltalk-gui transcribe {shlex.quote(args.dir)}")
        return EXIT_OK
    for r in rows:
        flags = f"  [{', '.join(f['code'] for f in r['flags'])}]" if r["flags"] else ""
        deleted = " (deleted)" if r["deleted"] else ""
        print(f"{r['id']}  {r['source'][:24]:24} {r['start_s']:8.2f} {r['end_s']:8.2f}  {r['text']}{flags}{deleted}")
    summary = clips.summary()
    print(f"{summary.kept} kept clips ({format_duration(summary.kept_duration_s)}), {summary.flagged} flagged, "
          f"{summary.deleted} deleted. {summary.guidance.message}")
    _print_speakers(clips)
    return EXIT_OK


def _check_speakers(clips: Any) -> None:
    """Measure the voice of the clips not measured yet (in this process: the CLI has no GUI to keep responsive)."""
    from alltalk_gui.core.transcript.speaker_check import measure

    if clips.read_only:  # nothing is written into a project another program holds
        print(f"The voices were not measured: {clips.read_only_reason or 'the project is open read-only.'}")
        return
    requests = clips.speakers_to_measure()
    if requests:
        print(f"Measuring the voice of {len(requests)} clip(s)...", flush=True)
        measure(requests, clips.speakers.store)
        clips.speakers_measured()


def _print_speakers(clips: Any) -> None:
    """The speaker check's line, and how many kept clips sound like another voice."""
    others = len(clips.view("other_voice"))
    if others:
        print(f"{others} clip(s) may hold another voice (other_speaker): listen to them and delete those that are "
              "not yours.")
    status = clips.speaker_status()
    if status:
        print(status)


def cmd_dataset(args: argparse.Namespace) -> int:
    from alltalk_gui.core.dataset.export import ClipsRefused, DatasetError, export_dataset
    from alltalk_gui.core.dataset.info import format_rate
    from alltalk_gui.core.transcript.segments import SegmentsError

    project = VoiceProject.open(args.dir)
    try:
        report = export_dataset(project, eval_split=args.eval_split, seed=args.seed, skip_refused=args.skip_refused,
                                vocab_file=project_vocab(project))
    except ClipsRefused as exc:
        return _fail(f"{exc}\nNothing was written. Use --skip-refused to export the other clips.")
    except (DatasetError, SegmentsError) as exc:
        return _fail(str(exc))
    print(f"Wrote {report.train} training and {report.eval} evaluation clip(s) "
          f"({format_duration(report.seconds_of_audio)}) at {format_rate(report.sample_rate)} to {report.dataset_dir}")
    if report.deleted:
        print(f"  {report.deleted} deleted clip(s) left out")
    if report.flagged:
        print(f"  {len(report.flagged)} of them still flagged (listen to them: alltalk-gui segments "
              f"{shlex.quote(args.dir)} --flagged)")
    if report.remade:
        print(f"  {report.remade} recording(s) were read again from their originals for the engine's higher rate")
    for note in report.notes:
        print(f"  {note}")
    for refusal in report.refused:
        print(f"  refused {refusal.describe()}", file=sys.stderr)
    return EXIT_SOME_REJECTED if report.refused else EXIT_OK


def _clip_row(clips: Any, s: Any) -> dict[str, Any]:
    return {"id": s.id, "source": clips.source_name(s.source_id), "source_id": s.source_id,
            "start_s": s.start_ms / 1000, "end_s": s.end_ms / 1000, "duration_s": s.duration_ms / 1000,
            "text": s.text, "flags": [f.to_dict() for f in s.flags], "deleted": s.deleted}


class _ProgressPrinter:
    """One line per file and per 10 % of it; the overall share and ETA on each line."""

    def __init__(self) -> None:
        self.last: tuple[int, int, str] | None = None

    def __call__(self, p: Any) -> None:
        key = (p.file_index, int(p.file_fraction * 10), p.stage)
        if key == self.last:
            return
        self.last = key
        eta = f", about {format_duration(p.eta_s)} left" if p.eta_s else ""
        if p.stage == "loading":
            print("Loading the speech recogniser...", flush=True)
        elif p.stage == "transcribing":
            print(f"[{p.file_index + 1}/{p.file_count}] {p.file_name}: {p.file_fraction:4.0%} "
                  f"(overall {p.overall_fraction:.0%}{eta})", flush=True)
        elif p.stage == "saving":
            print("Cutting into clips and saving...", flush=True)


class _DownloadPrinter:
    def __init__(self) -> None:
        self.shown = -1

    def __call__(self, done: int, total: int) -> None:
        percent = int(100 * done / total) if total else 0
        if percent != self.shown:
            self.shown = percent
            print(f"\r  downloading: {percent:3d}% of {total / 10**6:.0f} MB", end="", flush=True)
