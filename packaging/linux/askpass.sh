#!/usr/bin/env bash
# SUDO_ASKPASS helper for the first-run install: a small password window (sudo needs a program path, not a
# command line, hence this file).
exec python3 "$(dirname "$(readlink -f "$0")")/install_progress.py" --askpass "$@"
