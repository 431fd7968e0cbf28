"""Entry script for the frozen (PyInstaller) app: the same as ``alltalk-gui`` / ``python -m alltalk_gui``.

PyInstaller needs a script file rather than a console-script entry point. ``freeze_support`` lets a frozen
executable act as a ``multiprocessing`` child (DataLoader workers, spawned helpers) instead of opening a second
window.
"""

import multiprocessing
import sys

from alltalk_gui.__main__ import main

if __name__ == "__main__":
    multiprocessing.freeze_support()
    sys.exit(main())
