#!/usr/bin/env bash
# The GPU kit in one command, on a machine with an NVIDIA GPU, for both engines:
#   1. the GPU test suite (tests/gpu: every CUDA path of the app, XTTS v2 and F5-TTS, on the tiny models and at
#      real size);
#   2. the XTTS v2 memory benchmark at real size: low, medium, high, auto and AllTalk's baseline in the same run;
#   3. the F5-TTS memory benchmark at real size: low, medium, high, auto and F5-TTS's own fine-tuning settings in
#      the same run (30 s clips, 1 warm-up + 5 timed steps per case);
# writing a log and JSON under the results folder (default benchmarks/results/). Expected on an H100: about 4-5
# minutes for the tests, 2-3 for each benchmark (mostly process starts and model builds), under 10 in all.
#
#   bash benchmarks/gpu/run.sh [RESULTS_DIR]
#
# On a machine without a package index, first add the wheel bundles (benchmarks/gpu/bundles.py) to a folder and
# name it in ALLTALK_KIT, e.g. ALLTALK_KIT=/tmp/kit bash benchmarks/gpu/run.sh "$OUT". PYTHON picks the
# interpreter (default python3). Exit status: the test suite's (the benchmark's failures are in its JSON).
set -uo pipefail
cd "$(dirname "$0")/../.."
results="${1:-benchmarks/results}"
mkdir -p "$results"
py="${PYTHON:-python3}"
path="$PWD"
if [ -n "${ALLTALK_KIT:-}" ]; then
    path="$ALLTALK_KIT:$path"
    [ -d "$ALLTALK_KIT/speech" ] && ! command -v espeak-ng >/dev/null && export ALLTALK_SPEECH_CACHE="$ALLTALK_KIT/speech"
fi
export PYTHONPATH="$path${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
day="$(date -u +%Y-%m-%d)"
log="$results/gpu_kit_${day}.log"

if ! "$py" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    echo "No CUDA GPU here (torch.cuda.is_available() is False): the GPU kit needs an NVIDIA GPU." >&2
    exit 2
fi
started=$(date +%s)
{
    echo "# GPU kit, $(date -u '+%Y-%m-%d %H:%M UTC')"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1
    "$py" -c "import sys, torch; print('python', sys.version.split()[0], '| torch', torch.__version__, '| CUDA', torch.version.cuda)"
} | tee "$log"

echo "## 1. GPU test suite" | tee -a "$log"
"$py" -m pytest tests/gpu -m gpu -v -rs -p no:cacheprovider --junitxml="$results/gpu_tests_${day}.xml" 2>&1 | tee -a "$log"
tests_status=${PIPESTATUS[0]}

echo "## 2. Memory and speed of each profile and of AllTalk's baseline (real-size XTTS v2 GPT)" | tee -a "$log"
"$py" benchmarks/memory_profiles.py --device cuda --out "$results/memory_profiles_${day}_gpu.json" 2>&1 | tee -a "$log"

echo "## 3. Memory and speed of each F5-TTS profile and of F5-TTS's own fine-tuning (real-size DiT)" | tee -a "$log"
"$py" benchmarks/f5_memory_profiles.py --device cuda --out "$results/f5_memory_profiles_${day}_gpu.json" 2>&1 \
    | tee -a "$log"

echo "# done in $(( $(date +%s) - started )) s; tests exit status $tests_status" | tee -a "$log"
exit "$tests_status"
