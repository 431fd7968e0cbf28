#!/usr/bin/env bash
# Prints what an install of the app into .venv depends on: pyproject.toml's, no_deps_requirements.txt's and
# judge_requirements.txt's content, the venv's Python, and its
# site-packages folder (whose entries change when a package is added, removed or upgraded). packaging/run.sh
# compares this with the stamp the last install left, and installs again only when they differ.
# Usage: packaging/venv_stamp.sh [EXTRAS]
set -euo pipefail
cd "$(dirname "$0")/.."
python=".venv/bin/python"
{
    echo "extras=${1:-}"
    sha256sum pyproject.toml packaging/no_deps_requirements.txt packaging/judge_requirements.txt
    readlink -f "$python" 2>/dev/null || echo "no python"
    stat -c '%n %Y' .venv/pyvenv.cfg 2>/dev/null || echo "no pyvenv.cfg"
    for site in .venv/lib/python*/site-packages; do
        [ -d "$site" ] && stat -c '%n %Y' "$site"
    done
} | sha256sum | cut -d' ' -f1
