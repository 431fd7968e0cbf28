#!/usr/bin/env bash
# Installs everything, checks the import contracts and runs the whole test suite offscreen.
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/setup_env.sh test
export QT_QPA_PLATFORM=offscreen
.venv/bin/lint-imports
# Engines that run in a Python environment of their own (Parler-TTS): made once for this test session, from the
# Package Index, in a temporary folder removed at the end (~120 MB); the tests then fail instead of skipping
# without it, and never reach the network themselves.
ALLTALK_GUI_ENGINE_ENVS="$(mktemp -d "${TMPDIR:-/tmp}/alltalk-engine-envs.XXXXXX")"
export ALLTALK_GUI_ENGINE_ENVS ALLTALK_REQUIRE_ENGINE_ENVS=1
trap 'rm -rf "$ALLTALK_GUI_ENGINE_ENVS"' EXIT
.venv/bin/alltalk-gui engine-env parler
# Two test processes (pytest-xdist), each module whole in one of them (its fixtures are made once), and one torch
# thread in each: a test is mostly small tensors and child processes, and one process left the second core half
# idle, while torch's own threads in two processes ran three busy threads on two cores (three test modules:
# 238 s with torch's default threads, 145 s with one). ALLTALK_TEST_WORKERS=0 runs them in this one process.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
# The test modules that time the GUI's event loop (marker "alone") run afterwards by themselves; where the
# arguments select none of them, pytest's "no tests collected" (5) is no failure.
.venv/bin/python -m pytest -n "${ALLTALK_TEST_WORKERS:-2}" --dist loadfile -m "not alone" "$@"
.venv/bin/python -m pytest -m alone "$@" || [ $? -eq 5 ]
