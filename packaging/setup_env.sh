#!/usr/bin/env bash
# Creates (or reuses) the project's virtual environment in .venv and installs the app into it.
# Usage: packaging/setup_env.sh [EXTRAS]   e.g. "test" for the test tools.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
bash packaging/system_packages.sh
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
spec="."
[ -n "${1:-}" ] && spec=".[$1]"
.venv/bin/python -m pip install -q -e "$spec"
# Packages taken without their own dependencies (F5-TTS's model classes without its training UI): see the file.
.venv/bin/python -m pip install -q --no-deps -r packaging/no_deps_requirements.txt
