"""TOML reading on every Python the package supports: ``tomllib`` from 3.11, the ``tomli`` backport before.

pyproject.toml allows Python 3.10, whose standard library has no TOML reader; ``tomli`` is the same parser
(tomllib is tomli, taken into the standard library), so profiles read the same on both.
"""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    from tomllib import TOMLDecodeError, loads
else:  # pragma: no cover - exercised only on Python 3.10
    from tomli import TOMLDecodeError, loads

__all__ = ["TOMLDecodeError", "loads"]
