"""The engine commands: ``alltalk-gui engines`` lists the engines this install has (the registry's: built-in and
plug-in alike, with what each needs and offers, and the plug-ins that were left out and why); ``alltalk-gui engine
DIR`` shows a project's engine, ``alltalk-gui engine DIR NAME`` switches it (the clips are judged anew, the dataset
is written again at the new engine's rate, and what changed is said: see
:mod:`alltalk_gui.core.dataset.engine_switch`). ``alltalk-gui new DIR --engine NAME`` chooses it at the start.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from alltalk_gui.cli import EXIT_OK, EXIT_SOME_REJECTED


def register(sub: argparse._SubParsersAction) -> None:
    from alltalk_gui.core.engine_api.engine import engine_names

    p = sub.add_parser("engine", help="show a project's engine, or switch it (the clips are checked again and the "
                                      "dataset is written again at the new engine's rate)")
    p.add_argument("dir", help="project folder")
    p.add_argument("name", nargs="?", type=engine_type, metavar="|".join(engine_names()),
                   help="the engine to train with from now on (leave out to show the current one)")
    p.set_defaults(func=cmd_engine)

    p = sub.add_parser("engines", help="list the engines this install has, with their rates, clip limits, formats "
                                       "and base models")
    p.add_argument("--options", action="store_true", help="also each engine's own settings ('train --set NAME=VALUE' "
                   "and the preview command's flags reach them)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=cmd_engines)


def engine_type(value: str) -> str:
    """argparse type: a registered engine's name or alias, as its registry name."""
    from alltalk_gui.core.engine_api.engine import engine_name

    try:
        return engine_name(value)
    except Exception as exc:  # EngineError: argparse turns only ValueError/TypeError into a usage line
        raise argparse.ArgumentTypeError(str(exc)) from None


def cmd_engines(args: argparse.Namespace) -> int:
    """Every engine of the registry, the default first; the plug-ins that did not load, with the reason."""
    import json

    from alltalk_gui.core.engine_api.engine import DEFAULT_ENGINE, engine_names, get_engine, skipped_engines

    described = [_describe(get_engine(name)) for name in engine_names()]
    if args.json:
        print(json.dumps({"engines": described, "skipped": skipped_engines()}, indent=2))
        return EXIT_OK
    for facts in described:
        default = "  (new projects start with it)" if facts["name"] == DEFAULT_ENGINE else ""
        aliases = f", also {', '.join(facts['aliases'])}" if facts["aliases"] else ""
        print(f"{facts['name']}{aliases}: {facts['title']}{default}")
        print(f"    {facts['summary']}")
        print(f"    clips at {facts['sample_rate']} Hz, up to {facts['max_clip_s']:.1f} s; speaks from "
              f"{facts['reference_kind'].replace('_', ' ')}; languages {', '.join(facts['languages'])}")
        print(f"    base model: {facts['download_size']} ({facts['licence']}); {facts['base_model_hint']}")
        print("    export formats: " + ", ".join(f"{key} ({title})" for key, title in facts["export_formats"].items()))
        if args.options:
            for kind in ("train_options", "generation_options"):
                for option in facts[kind]:
                    print(f"    {kind.split('_')[0]} option {option['name']} = {option['default']!r}: {option['help']}")
    for name, why in skipped_engines().items():
        print(f"left out: {name}: {why}")
    return EXIT_OK


def _describe(engine: Any) -> dict[str, Any]:
    from alltalk_gui.core.engine_api.options import declared

    def options(cls) -> list[dict[str, Any]]:
        return [{"name": o.name, "type": o.kind.__name__, "default": o.default, "label": o.setting.label,
                 "help": o.setting.help} for o in declared(cls)]

    return {
        "name": engine.name, "aliases": list(engine.aliases), "title": engine.title, "summary": engine.summary,
        "sample_rate": engine.sample_rate, "max_clip_s": engine.max_clip_ms / 1000,
        "reference_kind": str(engine.reference_kind), "languages": list(engine.languages),
        "download_size": engine.download_size, "licence": engine.licence.title,
        "base_model_hint": engine.base_model_hint,
        "export_formats": {key: engine.export_format_titles.get(key, key) for key in engine.export_formats},
        "train_options": options(engine.train_options), "generation_options": options(engine.generation_options),
    }


def cmd_engine(args: argparse.Namespace) -> int:
    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.core.project.lock import ProjectLock

    if args.name is None:
        return _show(VoiceProject.open(args.dir))
    with ProjectLock.acquire(args.dir, "alltalk-gui engine"):  # a ProjectError (held elsewhere) exits with 2
        project = VoiceProject.open(args.dir)
        code = switch(project, args.name)
    _say_language_note(project)  # as 'new' does: an engine that cannot speak the project's language says so
    return code


def _say_language_note(project: Any) -> None:
    from alltalk_gui.core.engine_api.engine import get_engine, language_note

    engine = get_engine(project.engine)
    note = language_note(engine, project.language)
    if note:
        print(f"{engine.title}: {note}")


def switch(project: Any, name: str) -> int:
    """Switch ``project`` to engine ``name``, printing what changed and writing the dataset again with progress.
    ``train --engine`` goes through here too. Returns the exit code (1 when clips were left out of the dataset).

    Raises:
        ProjectError: the project is open read-only.
    """
    from alltalk_gui.core.dataset.engine_switch import rewrite_dataset, switch_engine
    from alltalk_gui.core.dataset.export import DatasetError
    from alltalk_gui.core.engine_api.engine import get_engine
    from alltalk_gui.core.transcript.segments import SegmentList, SegmentsError

    try:
        segments = SegmentList.open(project) if project.segments_file.exists() else None
    except SegmentsError as exc:
        print(f"alltalk-gui: {exc}", file=sys.stderr)
        return EXIT_SOME_REJECTED
    try:
        change = switch_engine(project, name, segments, vocab_file=get_engine(name).base_model_vocab())
        for line in change.messages():
            print(line)
        if not change.rewrite:
            return EXIT_OK
        assert segments is not None
        try:
            report = rewrite_dataset(project, segments, progress=_Progress(change.new.sample_rate))
        except DatasetError as exc:
            print(f"The dataset was not written again, and the previous one was kept: {exc}", file=sys.stderr)
            return EXIT_SOME_REJECTED
        from alltalk_gui.core.dataset.info import format_rate
        from alltalk_gui.core.project.duration_guidance import format_duration

        print(f"Wrote {report.train} training and {report.eval} evaluation clip(s) "
              f"({format_duration(report.seconds_of_audio)}) at {format_rate(report.sample_rate)} to "
              f"{report.dataset_dir}")
        if report.remade:
            print(f"  {report.remade} recording(s) were read again from their originals for the higher rate")
        for note in report.notes:
            print(f"  {note}")
        for refusal in report.refused:
            print(f"  left out {refusal.describe()}", file=sys.stderr)
        return EXIT_SOME_REJECTED if report.refused else EXIT_OK
    finally:
        if segments is not None:
            segments.close()


def _show(project: Any) -> int:
    from alltalk_gui.core.dataset.engine_switch import dataset_note
    from alltalk_gui.core.dataset.info import format_rate, read_info
    from alltalk_gui.core.engine_api.engine import engine_names, get_engine

    engine = get_engine(project.engine)
    if project.engine_unknown:
        print(f"project.json names the engine '{project.engine_unknown}', which is not installed here; "
              f"{engine.title} is used until it is (or until you choose one).")
    print(f"{engine.name}: {engine.title}, clips up to {engine.max_clip_ms / 1000:.3g} s, datasets at "
          f"{format_rate(engine.sample_rate)}")
    info = read_info(project.dataset_dir)
    if info is None:
        print("No dataset yet.")
    else:
        print(dataset_note(project) or f"The dataset fits it ({format_rate(info.sample_rate or engine.sample_rate)}).")
    others = [n for n in engine_names() if n != engine.name]
    if others:
        print(f"Switch with: alltalk-gui engine {shlex.quote(str(project.root))} {'|'.join(others)}")
    return EXIT_OK


class _Progress:
    """One line per tenth of the dataset written (a long project takes minutes)."""

    def __init__(self, rate: int) -> None:
        from alltalk_gui.core.dataset.info import format_rate

        self.rate, self.shown = format_rate(rate), -1

    def __call__(self, done: int, total: int) -> None:
        tenth = done * 10 // max(1, total)
        if tenth != self.shown:
            self.shown = tenth
            print(f"Writing the dataset at {self.rate}: {done}/{total}", flush=True)
