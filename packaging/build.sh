#!/usr/bin/env bash
# Builds the one-folder frozen app with PyInstaller, then runs the frozen-app smoke test on it.
# Usage: packaging/build.sh [OUTPUT_DIR]     (default: build-frozen/ in the checkout, which git ignores)
# Needs the venv with the build extra: bash packaging/setup_env.sh build
# Takes tens of minutes and several GB: torch brings its CUDA libraries along.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="$(realpath -m "${1:-build-frozen}")"
mkdir -p "$OUT"
start=$(date +%s)
.venv/bin/python -m PyInstaller --noconfirm --log-level WARN \
  --distpath "$OUT/dist" --workpath "$OUT/work" packaging/alltalk_gui.spec
end=$(date +%s)
echo "Build took $(( (end - start) / 60 )) min $(( (end - start) % 60 )) s"
echo "Folder: $OUT/dist/alltalk-gui, $(du -sh "$OUT/dist/alltalk-gui" | cut -f1)"
.venv/bin/python packaging/smoke_test.py "$OUT/dist/alltalk-gui/alltalk-gui"
