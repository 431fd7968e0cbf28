"""Bring-your-own-transcript commands: ``import-dataset`` (a folder that already is a dataset) and
``known-text`` (the exact words of one recording, aligned onto its clips)."""

from __future__ import annotations

import argparse
import sys
import textwrap

from alltalk_gui.cli import EXIT_OK, EXIT_SOME_REJECTED, EXIT_USAGE
from alltalk_gui.cli.transcribe_cmds import project_vocab
from alltalk_gui.core.project.folder import VoiceProject


def register(sub: argparse._SubParsersAction) -> None:
    from alltalk_gui.core.dataset.byo_layouts import IN_SHORT, SUPPORTED_LAYOUTS

    p = sub.add_parser("import-dataset", help=f"import a dataset you already have ({IN_SHORT})",
                       description=_import_description(SUPPORTED_LAYOUTS),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", help="project folder")
    p.add_argument("folder", help="the dataset folder (or a folder up to three levels above its metadata), or one "
                   ".parquet or .arrow file")
    p.add_argument("--speaker", metavar="NAME", help="the speaker to import from a dataset with several (run "
                   "without it to see each speaker's clips)")
    p.set_defaults(func=cmd_import_dataset)

    p = sub.add_parser("known-text", help="give a recording its known text (the clips take it instead of "
                       "Whisper's words)",
                       description="Store the exact text of one recording. Transcription then cuts the clips "
                       "with Whisper's timing and gives them this text, aligned to the recognised words; an "
                       "existing transcript is re-aligned at once. (A .txt with the recording's name beside the "
                       "original file is used without this command.)")
    p.add_argument("dir", help="project folder")
    p.add_argument("recording", help="the recording's file name (as 'alltalk-gui sources' lists it) or id")
    given = p.add_mutually_exclusive_group(required=True)
    given.add_argument("--file", metavar="TXT", help="a UTF-8 text file holding the text")
    given.add_argument("--text", help="the text itself")
    p.set_defaults(func=cmd_known_text)


def _import_description(layouts: tuple[str, ...]) -> str:
    wrap = textwrap.TextWrapper(width=100)
    intro = ("Import a dataset you already have: each of its clips becomes a recording with its text. Layouts read "
             "(in the folder or up to three levels below it):")
    items = [textwrap.fill(line, width=100, initial_indent="  * ", subsequent_indent="    ") for line in layouts]
    outro = ("Bad rows are reported one by one, with their file and line; the rest are imported. Only files inside "
             "the dataset folder are read.")
    return "\n".join([wrap.fill(intro), *items, wrap.fill(outro)])


def cmd_import_dataset(args: argparse.Namespace) -> int:
    from alltalk_gui.core.dataset.byo_import import DatasetImportError, SpeakerChoiceError, import_dataset

    project = VoiceProject.open(args.dir)

    def progress(done: int, total: int, name: str) -> None:
        if name:
            print(f"[{done + 1}/{total}] {name}", flush=True)

    try:
        report = import_dataset(project, args.folder, vocab_file=project_vocab(project), progress=progress,
                                speaker=args.speaker)
    except DatasetImportError as exc:
        print(f"alltalk-gui: {exc}", file=sys.stderr)
        if isinstance(exc, SpeakerChoiceError):
            print("  Choose one with --speaker NAME.", file=sys.stderr)
        return EXIT_USAGE
    who = f", speaker {report.speaker}" if report.speaker is not None else ""
    print(f"Found: {report.layout_name} in {report.folder}{who}.")
    if report.language and report.language != project.language:
        print(f"Note: its lang.txt says '{report.language}' but the project's language is {project.language}.")
    for problem in report.problems:
        print(f"  refused {problem}", file=sys.stderr)
    print(f"{len(report.imported)} clip(s) imported, {len(report.problems)} row(s) refused.")
    return EXIT_SOME_REJECTED if report.problems else EXIT_OK


def cmd_known_text(args: argparse.Namespace) -> int:
    from pathlib import Path

    from alltalk_gui.core.transcript.known_text import realign, save_known_text
    from alltalk_gui.core.transcript.segments import SegmentList

    project = VoiceProject.open(args.dir)
    source = next((s for s in project.sources if args.recording in (s.name, s.id)), None)
    if source is None:
        names = ", ".join(s.name for s in project.sources) or "none yet"
        print(f"alltalk-gui: no recording '{args.recording}' in the project (recordings: {names}).", file=sys.stderr)
        return EXIT_USAGE
    try:
        text = Path(args.file).read_text(encoding="utf-8-sig") if args.file else args.text
    except (OSError, UnicodeDecodeError) as exc:
        print(f"alltalk-gui: cannot read {args.file}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    save_known_text(project, source.id, text)
    if not text.strip():  # a mistyped variable or an empty file: forget the known text, keep the clips' words
        print(f"The text is empty: {source.name} has no known text now; its clips keep their words.")
        return EXIT_OK
    if not project.segments_file.exists():
        print(f"Kept the known text of {source.name}; 'alltalk-gui transcribe' will use it.")
        return EXIT_OK
    clips = SegmentList.open(project)
    changed = len(realign(clips, source.id, text, project.language))
    print(f"Kept the known text of {source.name} and gave it to its {changed} clip(s).")
    return EXIT_OK

