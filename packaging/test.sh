#!/usr/bin/env bash
# Installs everything, checks the import contracts and runs the whole test suite offscreen.
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/setup_env.sh test
export QT_QPA_PLATFORM=offscreen
.venv/bin/lint-imports
.venv/bin/python -m pytest "$@"
