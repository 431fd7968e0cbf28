"""Preview and export commands: ``checkpoints``, ``preview``, ``export``."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from alltalk_gui.cli import EXIT_OK, EXIT_USAGE
from alltalk_gui.core.training.checkpoints import (
    CheckpointError, CheckpointInfo, resolve_checkpoint,
)
from alltalk_gui.core.engine_api.engine import get_engine
from alltalk_gui.core.voice.export import FORMATS, ExportError, ExportOptions, export_destination, export_voice
from alltalk_gui.core.engine_api.engine import ReferenceKind
from alltalk_gui.core.voice.preview import BASE_LABEL, MODEL_LABEL, GenerationSettings, PreviewError
from alltalk_gui.core.project.folder import VoiceProject

def _errors() -> tuple[type[Exception], ...]:
    """The errors these commands report as a message. An ``except`` clause evaluates this only when an exception
    arrives, so the audio decoders that references.py imports stay unloaded for ``checkpoints`` and ``--help``."""
    from alltalk_gui.core.voice.references import ReferenceClipError

    return CheckpointError, PreviewError, ReferenceClipError, ExportError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("preview", help="speak a sentence with a trained checkpoint (and the base model, another "
                                       "checkpoint or a model folder beside it), or with any model folder of the "
                                       "project's engine (--model)")
    p.add_argument("dir", help="project folder")
    p.add_argument("--text", required=True, help="what to say")
    p.add_argument("--out", required=True, metavar="FILE.wav", help="where to write the wav (a .json with the "
                   "settings is written beside it)")
    _checkpoint_args(p)
    p.add_argument("--model", metavar="DIR", help="speak with this model folder of the project's engine instead of a "
                   "checkpoint: a fine-tune made with another tool, or an export of this app (the folder is only "
                   "read); not with --checkpoint or --run, nor --base-model but with --ab or --compare-checkpoint")
    p.add_argument("--language", help="language code (default: the run's or the project's)")
    p.add_argument("--ab", action="store_true", help="also speak it with the base model, into FILE_base.wav (with "
                   "--model: the base model in --base-model DIR)")
    p.add_argument("--compare-model", metavar="DIR", help="also speak it with this model folder of the same engine "
                   "(an earlier export, or a fine-tune made with another tool; only read), the same references and "
                   "seed, into FILE_compare.wav: an A/B with the checkpoint or with --model's folder; not with --ab or "
                   "--compare-checkpoint")
    p.add_argument("--compare-checkpoint", metavar="best|latest|PATH", help="also speak it with this checkpoint of "
                   "the project (of the same engine; best and latest as for --checkpoint, of --compare-run's run or "
                   "the newest run), the same references and seed, into FILE_compare.wav: e.g. --checkpoint latest "
                   "--compare-checkpoint best; not with --ab or --compare-model")
    p.add_argument("--compare-run", metavar="RUN", help="the run of --compare-checkpoint best|latest (alone: its "
                   "best checkpoint)")
    p.add_argument("--whisper-model", metavar="NAME_OR_PATH", help="check intelligibility: transcribe with this "
                   "faster-whisper model (already downloaded, or a local folder) and print the word error rate")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    _reference_text_arg(p)
    p.add_argument("--seed", type=int, help="sampling seed (default 0): the same seed gives the same take")
    for option, engines in _generation_options().items():
        flag = "--" + option.name.replace("_", "-")
        p.add_argument(flag, dest=f"option_{option.name}", type=option.kind if option.kind is not bool else _yes_no,
                       metavar=option.kind.__name__.upper(),
                       help=_help(option, engines))
    p.set_defaults(func=cmd_preview)

    p = sub.add_parser("export", help="export the trained voice as a model folder for AllTalk or in its engine's "
                                      "own format")
    p.add_argument("dir", help="project folder")
    p.add_argument("--format", choices=FORMATS, help=_format_help())
    p.add_argument("--out", required=True, metavar="FOLDER",
                   help="for a format AllTalk loads: the AllTalk folder (alltalk_tts, or any folder in it); the "
                        "model goes into the engine's own folder there (" + _alltalk_folders() + "). For the other "
                        "formats: the folder the model goes into (FOLDER/NAME)")
    p.add_argument("--name", help="model folder name (default: the project's name)")
    _checkpoint_args(p)
    p.add_argument("--half", action="store_true", help="store the weights in half precision (half the size), where "
                   "the engine's exports have the choice")
    p.add_argument("--training-files", action="store_true",
                   help="include the base model's files needed to keep training elsewhere, for an engine whose "
                        "exports can have them (a format AllTalk loads always has them)")
    _reference_text_arg(p)
    p.add_argument("--overwrite", action="store_true", help="replace FOLDER/NAME if it exists and is not empty")
    p.set_defaults(func=cmd_export)


def _reference_text_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reference-text", metavar="TEXT", help="for an engine that reads the reference clip's words: "
                   "exactly what the (first) clip says (default: its transcript in the dataset, or a .txt file "
                   "beside it); for one that speaks from a speaker name or a description of the voice: that name or "
                   "description (default: the checkpoint's own)")


def _format_help() -> str:
    """Each engine's formats in words: "XTTS v2: alltalk (AllTalk v2 (models/xtts/<name>)), coqui (...); ..."."""
    from alltalk_gui.core.engine_api.engine import engine_names, get_engine

    parts = []
    for name in engine_names():
        engine = get_engine(name)
        formats = ", ".join(f"{key} ({engine.export_format_titles.get(key, key)})" for key in engine.export_formats)
        parts.append(f"{engine.title}: {formats}")
    return ("the format, one of the checkpoint's engine's (default: alltalk where the engine has it, else the "
            "engine's own, the first listed): " + "; ".join(parts)).replace("%", "%%")


def _alltalk_folders() -> str:
    from alltalk_gui.core.engine_api.engine import engine_names, get_engine

    return ", ".join(f"{folder} for {get_engine(name).title}" for name in engine_names()
                     for folder in dict.fromkeys(get_engine(name).export_folders.values()))


def _generation_options() -> dict:
    """Every registered engine's generation options (its ``generation_options`` declaration), each once: the
    first engine's declaration, and each engine that has it with its own declaration (its help and default)."""
    from alltalk_gui.core.engine_api.engine import engine_names, get_engine
    from alltalk_gui.core.engine_api.options import declared

    found: dict[str, tuple] = {}
    for name in engine_names():
        engine = get_engine(name)
        for option in declared(engine.generation_options):
            found.setdefault(option.name, (option, []))[1].append((engine.title, option))
    return {option: engines for option, engines in found.values() if option.name not in _RESERVED}


_RESERVED = {"text", "out", "checkpoint", "run", "base_model", "reference", "language", "ab", "whisper_model",
             "device", "reference_text", "seed", "model", "compare_model", "compare_checkpoint", "compare_run"}  # the command's own flags: an option of that name is not offered


def _help(option, engines: list[tuple[str, Any]]) -> str:
    """"<engines>: <what it does> (default 0.75 unless the base model sets its own)", argparse's % escaped; engines
    whose option of the same name says or defaults otherwise (Orpheus's and Parler's longest take) each have
    their own part."""
    parts: dict[tuple[str, Any], list[str]] = {}
    for title, own in engines:
        parts.setdefault((own.setting.help, own.default), []).append(title)
    return "; ".join(f"{', '.join(titles)}: {text} (default {default!r} unless the base model sets its own)"
                     for (text, default), titles in parts.items()).replace("%", "%%")


def _yes_no(value: str) -> bool:
    from alltalk_gui.core.engine_api.options import OptionError, parse_value

    try:
        return parse_value("value", value, bool)
    except OptionError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _checkpoint_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--checkpoint", metavar="best|latest|PATH",
                   help="which checkpoint (default best: the checkpoint judge's choice, or the lowest eval loss "
                        "while the judge has not scored the run, or latest while none has one)")
    p.add_argument("--run", help="run name for latest/best (default: the newest run)")
    p.add_argument("--base-model", metavar="DIR", help="base-model folder, if it moved since training")
    p.add_argument("--reference", nargs="+", metavar="WAV", help="reference clips of the voice (default: the "
                   "cleanest 3-10 s clips of the dataset)")


def _checkpoint(args: argparse.Namespace, project: VoiceProject) -> CheckpointInfo:
    return _resolved(project, args.checkpoint, args.run, args.base_model)


def _resolved(project: VoiceProject, which: str | None, run: str | None, base_model: str | None, *,
              said: str = "Checkpoint", engine: str | None = None) -> CheckpointInfo:
    """The checkpoint ``which`` (best when None) of ``run`` (default: the newest run, of ``engine`` when given), on
    ``base_model`` when given; a checkpoint of another engine than ``engine`` is refused before its base model is
    looked for. ``said``: how the judge's choice is introduced."""
    if which and which != "best":
        checkpoint = resolve_checkpoint(project.root, which, run=run, engine=engine)
    else:  # the judge's choice, or the lowest eval loss when the judge has not scored the run
        from alltalk_gui.core.voice.judge.best import best_choice

        choice = best_choice(project.root, run=run, engine=engine)
        checkpoint = choice.checkpoint
        print(f"{said}: {choice.reason}")
    if engine is not None and checkpoint.engine != engine:
        raise CheckpointError(f"{checkpoint.label} was trained with {_engine_title(checkpoint.engine)}, not "
                              f"{_engine_title(engine)} like the take it is compared with: choose a checkpoint of "
                              f"{_engine_title(engine)}.")
    if base_model:
        checkpoint = dataclasses.replace(checkpoint, base_model_dir=Path(base_model).expanduser().absolute())
    if not checkpoint.base_model_dir.is_dir() and base_model:  # typed just now: not one that went away
        raise CheckpointError(f"--base-model: there is no folder {checkpoint.base_model_dir}: check the path.")
    if not checkpoint.base_model_dir.is_dir():
        raise CheckpointError(f"The base model {checkpoint.base_model_dir} that {checkpoint.label} was trained "
                              "from is not there any more; point to it with --base-model DIR.")
    return checkpoint


def _engine_title(name: str) -> str:
    from alltalk_gui.core.engine_api.engine import EngineError

    try:
        return get_engine(name).title
    except EngineError:  # an engine this installation does not have
        return name


def _compared_checkpoint(args: argparse.Namespace, project: VoiceProject, engine: str) -> CheckpointInfo:
    """``--compare-checkpoint`` (best with ``--compare-run`` alone), of ``engine``.

    Raises:
        CheckpointError: no such run or checkpoint, or one of another engine; each message starts with the flag.
        PreviewError: --compare-run with a checkpoint's path.
    """
    which = args.compare_checkpoint or "best"
    if args.compare_run and which not in ("best", "latest"):
        raise PreviewError(f"--compare-run chooses the run of --compare-checkpoint best or latest; "
                           f"{args.compare_checkpoint} is a checkpoint itself: leave out --compare-run.")
    try:
        return _resolved(project, which, args.compare_run, args.base_model, said="Compared checkpoint", engine=engine)
    except CheckpointError as exc:
        raise CheckpointError(f"--compare-checkpoint: {exc}") from exc


def _voice_input(args: argparse.Namespace, project: VoiceProject, engine, words) -> tuple[list[Path], str]:
    """The reference clips and words the engine speaks from: the clips (one, with its transcript, for an engine
    that continues a clip), or for an engine that speaks from a speaker name or description, --reference-text or
    ``words()``."""
    kind = engine.reference_kind
    references = _references(args, project) if kind.uses_audio else []
    reference_text = args.reference_text or ""
    if kind is ReferenceKind.CLIP_WITH_WORDS:
        references = references[:1]  # the engine continues one clip
        if not reference_text:
            from alltalk_gui.core.voice.references import reference_text as transcript_of

            reference_text = transcript_of(references[0])
    elif not kind.uses_audio:
        reference_text = reference_text or words()
    return references, reference_text


def _references(args: argparse.Namespace, project: VoiceProject) -> list[Path]:
    if args.reference:
        return [Path(r).expanduser().absolute() for r in args.reference]
    # Audio decoders are imported here, not at start: ``checkpoints`` and ``--help`` answer without them.
    from alltalk_gui.core.voice.references import choose_references

    return [c.path for c in choose_references(project.dataset_dir)]


def cmd_preview(args: argparse.Namespace) -> int:
    """``preview``: speak with the checkpoint (or ``--model``'s folder), and for an A/B also with the base model
    (``--ab``), another model folder (``--compare-model``) or another checkpoint (``--compare-checkpoint``), the
    same references and seed; every path is checked before a model or Whisper loads, and nothing is written when
    one is refused."""
    from alltalk_gui.core.voice.preview import PreviewEngine, Voice, check_model_folder, generate_take

    project = VoiceProject.open(args.dir)
    try:
        out = _wav_out(args)
        compare_checkpoint = bool(args.compare_checkpoint or args.compare_run)
        choices = [flag for flag, given in (("--ab", args.ab), ("--compare-model", args.compare_model),
                                            ("--compare-checkpoint" if args.compare_checkpoint else "--compare-run",
                                             compare_checkpoint)) if given]
        if len(choices) > 1:
            raise PreviewError(f"{', '.join(choices[:-1])} and {choices[-1]} each choose what the take is compared "
                               "with: give one.")
        against = None
        if args.model:
            # With --ab, --base-model names the base model the folder is compared with; with --compare-checkpoint,
            # that checkpoint's.
            clash = [flag for flag, given in (("--checkpoint", args.checkpoint), ("--run", args.run),
                                              ("--base-model", args.base_model and not (args.ab or
                                                                                        compare_checkpoint))) if given]
            if clash:
                raise PreviewError(f"--model speaks with a model folder alone: leave out {', '.join(clash)}.")
            if args.ab and not args.base_model:
                raise PreviewError("--ab with --model compares the folder with the base model: name the base "
                                   "model's folder with --base-model DIR.")
            checkpoint, voice = None, Voice.model_folder(Path(args.model).expanduser().absolute())
            engine_name = project.engine
            if args.ab:
                against = Voice.base(Path(args.base_model).expanduser().absolute())
        else:
            checkpoint = _checkpoint(args, project)
            voice, engine_name = Voice.tuned(checkpoint), checkpoint.engine
            against = Voice.base(checkpoint.base_model_dir) if args.ab else None
        if args.compare_model:
            against = Voice.model_folder(Path(args.compare_model).expanduser().absolute())
        if compare_checkpoint:
            against = Voice.tuned(_compared_checkpoint(args, project, engine_name))
        if against is not None and against.same_as(voice):
            if against.checkpoint is not None:
                raise PreviewError(f"--checkpoint {args.checkpoint or 'best'} and --compare-checkpoint "
                                   f"{args.compare_checkpoint or 'best'} are both {against.title}: compare two "
                                   "different checkpoints (another --compare-checkpoint or --compare-run).")
            flag = "--compare-model" if args.compare_model else "--base-model"
            raise PreviewError(f"{flag} names {against.model_dir}, the folder --model speaks with: compare it "
                               "with another folder, or leave out --model to compare it with the project's "
                               "checkpoint.")
        engine = PreviewEngine(args.device, engine=engine_name)
        # The folders first, as typed (a typo is no folder that went away), before the references or Whisper load.
        # Every folder that speaks without a checkpoint (a checkpoint's base model was found by _resolved).
        described = {v: check_model_folder(engine.engine, v.model_dir, typed=True)
                     for v in (voice, against) if v is not None and v.checkpoint is None
                     and (v.label == MODEL_LABEL or checkpoint is None)}
        kind = engine.engine.reference_kind
        settings = _settings(args, engine.engine, checkpoint or voice.model_dir)
        checker = _checker(args.whisper_model, args.device) if args.whisper_model else None
        # A speaker name or description: the checkpoint's; with a model folder the project's (the folder's own
        # may differ: --reference-text).
        words = ((lambda: engine.engine.reference_suggestion(checkpoint)) if checkpoint is not None
                 else (lambda: engine.engine.voice_prompt(project)))
        references, reference_text = _voice_input(args, project, engine.engine, words)
        language = args.language or (checkpoint.language if checkpoint is not None else None) or project.language
        if checkpoint is not None:
            if kind.uses_audio:
                heard = ", ".join(r.name for r in references) + (f' ("{reference_text}")' if reference_text else "")
            else:  # a speaker's name or a description: the words are the reference
                heard = f'"{reference_text}"'
            print(f"Speaking with {checkpoint.label} ({language}), {_reference_words(kind)}: {heard}", flush=True)
        else:
            print(f"Speaking with the model in {voice.model_dir} ({language}): {described[voice]}", flush=True)
        if against is not None and against.checkpoint is not None:  # (a checkpoint's Voice is no dict key)
            print(f"Comparing with {against.title}", flush=True)
        elif against is not None and against in described:
            what = "the base model" if against.label == BASE_LABEL else "the model"
            print(f"Comparing with {what} in {against.model_dir}: {described[against]}", flush=True)
        common = dict(text=args.text, references=references, language=language, settings=settings,
                      out_dir=out.parent, checker=checker, reference_text=reference_text)
        takes = [(voice, out)]
        if against is not None:  # on the left of the pair, as the Preview page shows it
            end = "_base" if against.label == BASE_LABEL else "_compare"
            takes.insert(0, (against, out.with_name(out.stem + end + ".wav")))
        results = []
        with engine.keeping(*(v for v, _path in takes)):
            for position, (speaker, path) in enumerate(takes):
                results.append(generate_take(engine, speaker, out_file=path, position=position,
                                             pair=out.stem if len(takes) > 1 else "", **common))
    except _errors() as exc:
        print(f"alltalk-gui: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for r in results:
        print(_take_line(r))
    return EXIT_OK


def _take_line(result) -> str:
    """One take as the command reports it: which voice spoke (a model folder by its name), where, how long, and
    what Whisper heard."""
    if result.wer is not None:
        wer = f", WER {result.wer:.2f} (heard: \"{result.transcript}\")"
    else:
        wer = f", no WER ({result.wer_note})" if result.wer_note and result.wer_note != "no Whisper model" else ""
    return f"  {result.speaker}: {result.wav} ({result.duration_s:.1f} s, made in {result.generation_s:.1f} s){wer}"


def _wav_out(args: argparse.Namespace) -> Path:
    """The wav file ``--out`` names, checked with ``--text`` before any model or Whisper loads.

    Raises:
        PreviewError: the text is empty, or --out is no .wav file.
    """
    if not args.text.strip():
        raise PreviewError("--text is empty: give the sentence to speak.")
    out = Path(args.out).expanduser().absolute()
    if out.suffix.lower() != ".wav":
        raise PreviewError(f"--out must name a .wav file (got {out.name}).")
    return out


def _settings(args: argparse.Namespace, engine, checkpoint: CheckpointInfo | Path) -> GenerationSettings:
    """The engine's defaults for the checkpoint's base model (or for a model folder), with the options given on
    the command line.

    Raises:
        PreviewError: an option the engine does not have, or a value out of range.
    """
    model = checkpoint if isinstance(checkpoint, Path) else checkpoint.base_model_dir
    settings = GenerationSettings.for_engine(engine, model)
    given = {key.removeprefix("option_"): value for key, value in vars(args).items()
             if key.startswith("option_") and value is not None}
    other = sorted(set(given) - set(engine.generation_options.names()))
    if other:
        raise PreviewError(f"--{other[0].replace('_', '-')} is not a setting of {engine.title}.")
    if args.seed is not None:
        given["seed"] = args.seed
    settings = settings.with_values(given)
    settings.validate(engine)
    return settings


def default_format(engine) -> str:
    """What ``export`` writes without ``--format``: AllTalk's where the checkpoint's engine has it, else the
    engine's own (its first format: Orpheus's Hugging Face folder, Parler's)."""
    return "alltalk" if "alltalk" in engine.export_formats else engine.export_formats[0]


def _reference_words(kind: ReferenceKind) -> str:
    return {ReferenceKind.CLIPS: "references", ReferenceKind.CLIP_WITH_WORDS: "reference",
            ReferenceKind.SPEAKER: "speaker", ReferenceKind.DESCRIPTION: "voice description"}[kind]


def _checker(model: str, device: str):
    from alltalk_gui.core.transcription.transcribe import TranscriptionError
    from alltalk_gui.core.transcription.wer import IntelligibilityChecker
    from alltalk_gui.core.transcription.model_files import ModelError

    try:
        return IntelligibilityChecker(model=model, device=device)
    except (ModelError, TranscriptionError) as exc:
        raise PreviewError(f"The Whisper model for the intelligibility check cannot be used: {exc}") from exc


def cmd_export(args: argparse.Namespace) -> int:
    project = VoiceProject.open(args.dir)
    try:
        checkpoint = _checkpoint(args, project)
        engine = get_engine(checkpoint.engine)
        kind = engine.reference_kind
        references = _references(args, project) if kind.uses_audio else []
        if kind is ReferenceKind.CLIP_WITH_WORDS:
            references = references[:1]
        text = " ".join((args.reference_text or "").split())
        words = {str(references[0]): text} if text and references else {}
        fmt = args.format or default_format(engine)
        if args.half and not engine.export_half:
            print(f"Note: {engine.title}'s exports always hold the weights in 16 bits: --half changes nothing.")
        options = ExportOptions(format=fmt, name=args.name or "", half=args.half,
                                training_files=args.training_files, references=references, overwrite=args.overwrite,
                                reference_texts=words, voice_prompt=text if not kind.uses_audio else "")
        # For a format AllTalk loads, --out is the AllTalk folder (or any folder in it): each engine's voice goes
        # into its own models/<folder> there (export_destination), where AllTalk looks for it.
        destination = export_destination(engine, args.out, options, project.name)
        if destination.warning:
            print(f"  warning: {destination.warning}", file=sys.stderr)
        print(f"Exporting {checkpoint.label} as {fmt} format into {destination.folder}", flush=True)
        result = export_voice(checkpoint, destination.out_dir, options, project_name=project.name,
                              progress=lambda what, _f: print(f"  {what}", flush=True))
    except _errors() as exc:
        print(f"alltalk-gui: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for warning in result.warnings:
        print(f"  warning: {warning}", file=sys.stderr)
    print(f"Exported to {result.folder} (weights {result.model_bytes / 1e6:.1f} MB): {', '.join(result.files)}")
    return EXIT_OK
