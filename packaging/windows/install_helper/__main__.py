"""Entry point: ``python packaging\\windows\\install_helper install --state DIR`` (the launcher runs this).

Written so that any Python 3 can parse it: an unsupported one gets a clear sentence instead of a SyntaxError.
"""
import os
import sys

if sys.version_info < (3, 8):
    sys.stderr.write("AllTalk GUI needs the 64-bit Python 3.11 from https://www.python.org/downloads/windows/ "
                     "(this is Python %d.%d).\n" % sys.version_info[:2])
    sys.exit(2)

# Run as a folder, sys.path[0] is this folder; the package is imported from its parent.
sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from install_helper import main  # noqa: E402

sys.exit(main())
