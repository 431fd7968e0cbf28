#!/usr/bin/env bash
# Installs everything (first run: a few GB, several minutes) and starts AllTalk GUI.
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/setup_env.sh
exec .venv/bin/alltalk-gui "$@"
