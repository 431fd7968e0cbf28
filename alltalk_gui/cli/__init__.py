"""The headless command line: ``alltalk-gui COMMAND ...``. Uses the core only, never Qt.

Each module in this package owns a group of commands and exposes ``register(subparsers)``, which adds its
sub-parsers with ``set_defaults(func=...)``; ``func(args)`` returns the exit code.

Exit codes: 0 ok, 1 some inputs were rejected (the rest were kept), 2 usage or project error.
"""

from __future__ import annotations

import argparse
import sys
from importlib import import_module

from alltalk_gui import __version__

EXIT_OK = 0
EXIT_SOME_REJECTED = 1
EXIT_USAGE = 2

# Command-group modules, in the order their commands appear in --help.
COMMAND_MODULES = [
    "alltalk_gui.cli.project_cmds",
    "alltalk_gui.cli.byo_cmds",
    "alltalk_gui.cli.transcribe_cmds",
    "alltalk_gui.cli.train_cmds",
    "alltalk_gui.cli.preview_cmds",
]


class _Parser(argparse.ArgumentParser):
    """argparse exits with 2 on usage errors already; this only keeps the message style consistent."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"alltalk-gui: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="alltalk-gui", description="Fine-tune an XTTS v2 voice from a few minutes of audio. "
                     "Run without arguments to open the desktop app.")
    parser.add_argument("--version", action="version", version=f"alltalk-gui {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    from alltalk_gui.core.project.folder import ProjectError

    try:
        return int(args.func(args))
    except ProjectError as exc:
        print(f"alltalk-gui: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("alltalk-gui: interrupted", file=sys.stderr)
        return 130
