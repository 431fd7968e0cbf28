#!/usr/bin/env bash
# Starts AllTalk GUI. Installs first when needed: on the first run (a few GB, several minutes), and again only
# when pyproject.toml or the virtual environment changed since the last install (packaging/venv_stamp.sh), so
# an unchanged checkout opens the app at once.
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=.venv/.alltalk-gui-installed
if [ ! -x .venv/bin/alltalk-gui ] || [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$(bash packaging/venv_stamp.sh)" ]; then
    bash packaging/setup_env.sh
    bash packaging/venv_stamp.sh > "$stamp"  # after the install: it changed site-packages
fi
exec .venv/bin/alltalk-gui "$@"
