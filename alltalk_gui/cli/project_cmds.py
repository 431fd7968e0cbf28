"""Project commands: ``new`` (with its engine), ``import``, ``sources``."""

from __future__ import annotations

import argparse
import json
import sys

from alltalk_gui.cli import EXIT_OK, EXIT_SOME_REJECTED
from alltalk_gui.cli.engine_cmds import engine_type
from alltalk_gui.core.engine_api.engine import DEFAULT_ENGINE, engine_names, get_engine, language_note
from alltalk_gui.core.engine_api.languages import CODES
from alltalk_gui.core.project.duration_guidance import format_duration, guidance
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.project.long_paths import project_path_problem


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("new", help="create a voice project folder")
    p.add_argument("dir", help="project folder (created if missing; must not hold a project already)")
    p.add_argument("--name", help="display name (default: the folder name)")
    p.add_argument("--language", default="en", metavar="CODE",
                   help=f"language of the recordings, one of {', '.join(CODES)} (default en)")
    p.add_argument("--engine", type=engine_type, default=None, metavar="|".join(engine_names()),
                   help=f"the engine to train with (default {DEFAULT_ENGINE}; switch later with 'alltalk-gui engine "
                        "DIR NAME'): it sets the clip limits and the dataset's sample rate")
    p.set_defaults(func=cmd_new)

    p = sub.add_parser("import", help="import audio files or folders into a project")
    p.add_argument("dir", help="project folder")
    p.add_argument("paths", nargs="+", metavar="FILE_OR_FOLDER", help="audio/video files or folders (recursive)")
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("sources", help="list a project's imported sources with their analysis",
                       description="List the recordings of a project. Files an interrupted import left in the "
                       "project folder without recording them are listed too; --clean imports or removes them.")
    p.add_argument("dir", help="project folder")
    p.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    p.add_argument("--clean", choices=("import", "remove"),
                   help="files an interrupted import left behind: import them as recordings, or remove them")
    p.add_argument("--rename-for-windows", action="store_true",
                   help="give recordings whose copies have names Windows cannot hold (take:1.wav, aux.wav) names it "
                        "takes, before the project is copied to Windows")
    p.set_defaults(func=cmd_sources)


def cmd_new(args: argparse.Namespace) -> int:
    project = VoiceProject.create(args.dir, name=args.name, language=args.language, engine=args.engine)
    engine = get_engine(project.engine)
    print(f"Created voice project '{project.name}' ({project.language}, {engine.title}) in {project.root}")
    note = language_note(engine, project.language)
    if note:
        print(f"{engine.title}: {note}")
    too_deep = project_path_problem(project.root)  # Windows without long paths only
    if too_deep:
        print(f"Warning: {too_deep}", file=sys.stderr)
    return EXIT_OK


def _progress(done: int, total: int, name: str) -> None:
    if name:
        print(f"[{done + 1}/{total}] {name}", flush=True)


def cmd_import(args: argparse.Namespace) -> int:
    project = VoiceProject.open(args.dir)

    from alltalk_gui.core.project.importer import import_files  # audio decoders: not for the listing commands
    from alltalk_gui.core.project.plain_reasons import plain_reason

    report = import_files(project, args.paths, progress=_progress)
    for src in report.imported:
        notes = f" - {'; '.join(src.reasons)}" if src.reasons else ""
        print(f"  imported {src.name}: {format_duration(src.duration_s)}, {src.verdict}{notes}")
    for rej in report.rejected:
        plain, detail = plain_reason(rej.reason)  # the same words as the app, the decoders' after them
        print(f"  rejected {plain}" + (f"\n    ({detail})" if detail else ""), file=sys.stderr)
    if report.skipped_non_audio:
        print(f"  skipped {report.skipped_non_audio} non-audio file(s) found in folders")
    print(f"{len(report.imported)} imported, {len(report.rejected)} rejected. "
          f"{guidance(project.usable_duration_s()).message}")
    return EXIT_SOME_REJECTED if report.rejected else EXIT_OK


def cmd_sources(args: argparse.Namespace) -> int:
    project = VoiceProject.open(args.dir)
    if args.clean:
        return _clean(project, args.clean)
    if args.rename_for_windows:
        from alltalk_gui.core.project.windows_names import rename_recordings

        renamed = rename_recordings(project)
        for line in renamed:
            print(f"  renamed {line}")
        print(f"Renamed {len(renamed)} recording copy(ies)." if renamed else
              "Nothing to rename: every recording's copy has a name Windows takes.")
        return EXIT_OK
    rows = [_source_row(s) for s in project.sources]
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return EXIT_OK
    if not rows:
        print("No sources yet. Add some with: alltalk-gui import DIR FILE_OR_FOLDER...")
        return EXIT_OK
    header = f"{'name':32} {'length':>11} {'rate':>6} {'ch':>2} {'peak':>6} {'clip%':>6} {'sil%':>5} {'SNR':>5}  verdict"
    print(header)
    for r in rows:
        print(f"{r['name'][:32]:32} {format_duration(r['duration_s']):>11} {r['sample_rate']:>6} {r['channels']:>2} "
              f"{_num(r['peak_dbfs'], '.1f'):>6} {_num(r['clipped_fraction'], '.2%'):>6} "
              f"{_num(r['silence_fraction'], '.0%'):>5} {_num(r['snr_db'], '.1f'):>5}  "
              f"{r['verdict']}{(' - ' + '; '.join(r['reasons'])) if r['reasons'] else ''}")
    print(guidance(project.usable_duration_s()).message)
    return EXIT_OK


def _clean(project: VoiceProject, how: str) -> int:
    """Import or remove what an interrupted import left (the command holds the project's lock meanwhile)."""
    from alltalk_gui.core.project.orphans import adopt_orphans, find_orphans, remove_orphans

    orphans = find_orphans(project)
    if not orphans:
        print("Nothing to clean: every file in the project folder belongs to a recording.")
        return EXIT_OK
    print(f"Found: {orphans.summary()}.")
    if how == "remove":
        problems = remove_orphans(project, orphans)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        print(f"Removed {len(orphans.files) - len(problems)} file(s).")
        return EXIT_SOME_REJECTED if problems else EXIT_OK
    report = adopt_orphans(project, orphans, progress=_progress)
    for src in report.imported:
        print(f"  imported {src.name}: {format_duration(src.duration_s)}, {src.verdict}")
    for rej in report.rejected:
        print(f"  not imported {rej.reason}", file=sys.stderr)
    print(f"{len(report.imported)} imported, {len(report.rejected)} not imported (left in sources/).")
    return EXIT_SOME_REJECTED if report.rejected else EXIT_OK


def _num(value, spec: str) -> str:
    """Format a measurement, or '-' where there is none (e.g. no noise floor in a pure tone)."""
    return "-" if value is None else format(value, spec)


def _source_row(src) -> dict:
    a = src.analysis
    return {
        "id": src.id,
        "name": src.name,
        "duration_s": round(src.duration_s, 3),
        "sample_rate": a.get("sample_rate"),
        "channels": a.get("channels"),
        "codec": a.get("codec"),
        "bit_depth": a.get("bit_depth"),
        "peak_dbfs": a.get("peak_dbfs"),
        "clipped_fraction": a.get("clipped_fraction"),
        "silence_fraction": a.get("silence_fraction"),
        "speech_level_dbfs": a.get("speech_level_dbfs"),
        "noise_floor_dbfs": a.get("noise_floor_dbfs"),
        "snr_db": a.get("snr_db"),
        "verdict": src.verdict,
        "reasons": list(src.reasons),
    }
