"""The engine command: ``alltalk-gui engine DIR`` shows a project's engine, ``alltalk-gui engine DIR NAME`` switches
it (the clips are judged anew, the dataset is written again at the new engine's rate, and what changed is said:
see :mod:`alltalk_gui.core.dataset.engine_switch`). ``alltalk-gui new DIR --engine NAME`` chooses it at the start.
"""

from __future__ import annotations

import argparse
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


def engine_type(value: str) -> str:
    """argparse type: a registered engine's name or alias, as its registry name."""
    from alltalk_gui.core.engine_api.engine import engine_name

    try:
        return engine_name(value)
    except Exception as exc:  # EngineError: argparse turns only ValueError/TypeError into a usage line
        raise argparse.ArgumentTypeError(str(exc)) from None


def cmd_engine(args: argparse.Namespace) -> int:
    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.core.project.lock import ProjectLock

    if args.name is None:
        return _show(VoiceProject.open(args.dir))
    with ProjectLock.acquire(args.dir, "alltalk-gui engine"):  # a ProjectError (held elsewhere) exits with 2
        return switch(VoiceProject.open(args.dir), args.name)


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
        print(f"Switch with: alltalk-gui engine {project.root} {'|'.join(others)}")
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
