"""The headless command line: ``alltalk-gui COMMAND ...``. Uses the core only, never Qt.

Each module in this package owns a group of commands and exposes ``register(subparsers)``, which adds its
sub-parsers with ``set_defaults(func=...)``; ``func(args)`` returns the exit code.

Exit codes: 0 ok, 1 some inputs were rejected (the rest were kept), 2 usage or project error (including a
project that another program holds: see :mod:`alltalk_gui.core.project.lock`).

All output goes through :class:`alltalk_gui.cli.printable.EscapingWriter`: file names with control characters
are shown escaped, never obeyed by the terminal.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from contextlib import ExitStack
from importlib import import_module
from pathlib import Path

from alltalk_gui import __version__

EXIT_OK = 0
EXIT_SOME_REJECTED = 1
EXIT_USAGE = 2

# Commands that change the project in DIR: each holds the project's lock while it runs, so it cannot overwrite
# what the app or another command is doing (and two Resumes of one run cannot write the same checkpoints).
WRITES_PROJECT = frozenset({"import", "import-dataset", "known-text", "transcribe", "dataset", "train", "preview",
                            "judge"})

# Command-group modules, in the order their commands appear in --help.
COMMAND_MODULES = [
    "alltalk_gui.cli.project_cmds",
    "alltalk_gui.cli.engine_cmds",
    "alltalk_gui.cli.byo_cmds",
    "alltalk_gui.cli.transcribe_cmds",
    "alltalk_gui.cli.train_cmds",
    "alltalk_gui.cli.checkpoint_cmds",
    "alltalk_gui.cli.preview_cmds",
    "alltalk_gui.cli.judge_cmds",
    "alltalk_gui.cli.engine_env_cmds",
]


class _Parser(argparse.ArgumentParser):
    """argparse exits with 2 on usage errors already; this only keeps the message style consistent."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"alltalk-gui: error: {message}\n")


def engines_in_words() -> str:
    """"XTTS v2 or F5-TTS v1": every engine this install has (the walk found --help naming XTTS v2 alone)."""
    from alltalk_gui.core.engine_api.engine import engine_names, get_engine

    titles = [get_engine(name).title for name in engine_names()]
    return titles[0] if len(titles) == 1 else f"{', '.join(titles[:-1])} or {titles[-1]}"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="alltalk-gui", description=f"Fine-tune a voice ({engines_in_words()}) from a few minutes "
                     "of audio. Run without arguments to open the desktop app.")
    parser.add_argument("--version", action="version", version=f"alltalk-gui {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from alltalk_gui.cli.printable import EscapingWriter

    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = EscapingWriter(sys.stdout), EscapingWriter(sys.stderr)
    try:
        return _run(argv)
    finally:
        sys.stdout, sys.stderr = saved


def _run(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    from alltalk_gui.core.project.folder import PROJECT_FILE, ProjectError

    try:
        with ExitStack() as stack:
            project_dir = Path(getattr(args, "dir", "") or ".").expanduser()
            is_project = bool(getattr(args, "dir", "")) and (project_dir / PROJECT_FILE).is_file()
            renames = bool(getattr(args, "rename_for_windows", False))
            writes = args.command in WRITES_PROJECT or bool(getattr(args, "clean", None)) or renames
            if writes and is_project:
                stack.enter_context(_lock(project_dir, f"alltalk-gui {args.command}"))
            opened = _opened(project_dir) if is_project and args.command != "stop" else None
            if opened is not None and not getattr(args, "clean", None):
                _note_orphans(opened, holding=writes)
            if opened is not None and not renames:
                _note_windows_names(opened)
            return int(args.func(args))
    except ProjectError as exc:
        print(f"alltalk-gui: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("alltalk-gui: interrupted", file=sys.stderr)
        return 130


def _opened(root: Path):
    """The project, opened once for the notes below; None when it cannot be (the command reports that itself)."""
    from alltalk_gui.core.project.folder import ProjectError, VoiceProject

    try:
        return VoiceProject.open(root)
    except (ProjectError, OSError):
        return None


def _note_orphans(project, holding: bool) -> None:
    """Say so when an interrupted import left files in the project that it does not list (and how to clean them).
    Only while nobody else may be importing into it: this command holds the lock, or nobody does."""
    from alltalk_gui.core.project.folder import ProjectError
    from alltalk_gui.core.project.lock import read_holder
    from alltalk_gui.core.project.orphans import find_orphans

    holder = read_holder(project.root)
    if not holding and holder is not None and holder.is_alive():
        return
    try:
        orphans = find_orphans(project)
    except (ProjectError, OSError):
        return  # the command reports a folder it cannot read
    if orphans:
        print(f"alltalk-gui: note: {orphans.summary()}. 'alltalk-gui sources {shlex.quote(str(project.root))} --clean "
              "import' adds them as recordings, '--clean remove' deletes them.", file=sys.stderr)


def _note_windows_names(project) -> None:
    """Say so when names in the project cannot be used on Windows (a project made on Linux, or copied from there),
    and how to fix them (core/project/windows_names.py)."""
    from alltalk_gui.core.project.folder import ProjectError
    from alltalk_gui.core.project.windows_names import summary, worth_saying

    try:
        problems = worth_saying(project)
    except (ProjectError, OSError):
        return  # the command reports a folder it cannot read
    if problems:
        fix = (f" 'alltalk-gui sources {shlex.quote(str(project.root))} --rename-for-windows' renames the recordings."
               if any(p.recording and not p.missing for p in problems) else "")
        print(f"alltalk-gui: note: {summary(problems)}{fix}", file=sys.stderr)


def _lock(root: Path, program: str):
    """The project's lock; none when the folder cannot be written at all (then the command fails on its own)."""
    from alltalk_gui.core.project.lock import ProjectLock

    try:
        return ProjectLock.acquire(root, program)
    except OSError:  # ProjectLockedError is a ProjectError, not an OSError: it is reported by _run
        return ExitStack()
