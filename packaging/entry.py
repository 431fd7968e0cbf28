"""Entry script for the frozen (PyInstaller) app: the same as ``alltalk-gui`` / ``python -m alltalk_gui``.

PyInstaller needs a script file rather than a console-script entry point. ``freeze_support`` lets a frozen
executable act as a ``multiprocessing`` child (DataLoader workers, spawned helpers) instead of opening a second
window.

The app also starts child processes as ``sys.executable [-u] -m MODULE ARGS``: the training runner, ``accelerate
launch`` for several GPUs (whose workers are started the same way) and the Train page's GPU scan. In the frozen
app ``sys.executable`` is this program rather than Python, so it does what ``python -m`` does, for those modules
only.
"""

import multiprocessing
import runpy
import sys

# What the app runs with -m: its own modules and accelerate's launcher.
CHILD_MODULES = ("alltalk_gui", "accelerate.commands.launch")


def run_module_if_asked(argv: list[str]) -> int | None:
    """Run ``-m MODULE`` like the interpreter would; None when ``argv`` asks for the app itself."""
    args = argv[1:]
    unbuffered = False
    while args and args[0] == "-u":
        unbuffered, args = True, args[1:]
    if len(args) < 2 or args[0] != "-m":
        return None
    module = args[1]
    if not any(module == allowed or module.startswith(allowed + ".") for allowed in CHILD_MODULES):
        print(f"alltalk-gui: -m {module} is not one of the modules this app runs ({', '.join(CHILD_MODULES)}).",
              file=sys.stderr)
        return 2
    if unbuffered:
        sys.stdout.reconfigure(line_buffering=True, write_through=True)
        sys.stderr.reconfigure(line_buffering=True, write_through=True)
    sys.argv = [argv[0], *args[2:]]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


if __name__ == "__main__":
    multiprocessing.freeze_support()
    code = run_module_if_asked(sys.argv)
    if code is None:
        from alltalk_gui.__main__ import main

        code = main()
    sys.exit(code)
