"""Entry point: ``alltalk-gui`` / ``python -m alltalk_gui``.

With no arguments the desktop app opens; with arguments the headless CLI runs. The GUI is imported only in
the first case so that the CLI works on machines without a display or Qt libraries.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        from alltalk_gui.core import app_log

        app_log.start_file_log()  # before Qt loads, so that a failing import is in the log too
        from alltalk_gui.gui.app import run_app

        return run_app()
    from alltalk_gui.cli import main as cli_main

    return cli_main(args)


if __name__ == "__main__":
    sys.exit(main())
