#!/usr/bin/env bash
# The desktop launcher's install step: what packaging/setup_env.sh does, with two differences for a first start
# from the menu: only the system packages the app needs at run time (not the test tools), and pip's normal
# output (not -q), so the progress window has something to show.
# Usage: first_run_install.sh     (PYTHON picks the interpreter for the environment; default python3)
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON="${PYTHON:-python3}"
bash packaging/system_packages.sh runtime
if [ ! -x .venv/bin/python ]; then
  echo "Creating the environment in $(pwd)/.venv with $("$PYTHON" --version)"
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --upgrade pip
.venv/bin/python -m pip install -e ".[judge]"
.venv/bin/python -m pip install --no-deps -r packaging/no_deps_requirements.txt
.venv/bin/python -m pip install --no-deps --only-binary :all: -r packaging/judge_requirements.txt
