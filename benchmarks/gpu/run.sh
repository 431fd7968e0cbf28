#!/usr/bin/env bash
# The GPU kit in one command, on a machine with an NVIDIA GPU, for both engines:
#   1. side by side (tests may share the card): the GPU test suite (tests/gpu: every CUDA path of the app, all four
#      engines, on the tiny models, with pytest-xdist) and, in a pytest of its own started first, the card
#      rehearsal (the app's own Auto at real size on pretended 4-16 GiB cards, benchmarks/gpu/rehearsal.py);
#      Beside them too, on the CPU: the random real-size Orpheus base that the optional third call's cases load
#      (run_more.sh), so that call 3 spends its seconds on the card;
#   2. alone on the card, one after the other (timed cases): the XTTS v2 memory benchmark at real size (low, high
#      and AllTalk's settings, 11 s clips) and the F5-TTS one (low, high and F5's own settings, 30 s clips): each
#      profile's target and the speed goals against the baselines (issue 28). Medium and Auto, measured on the H100
#      and the H200 and rehearsed at every card size in step 1, wait for call 3's last part;
#   3. one summary table (benchmarks/gpu/summary.py) of all of it, with the time each phase took.
# It writes a log, the JUnit XML, the rehearsal's table and the benchmarks' JSON under the results folder (default
# benchmarks/results/). Planned to take under 8 minutes on an H100 or H200 (see docs/benchmarks.md).
#
#   bash benchmarks/gpu/run.sh [RESULTS_DIR]
#
# On a machine without a package index, first install the two wheel bundles (benchmarks/gpu/bundles.py) into a
# folder and name it in ALLTALK_KIT, e.g. ALLTALK_KIT=/tmp/kit bash benchmarks/gpu/run.sh "$OUT". PYTHON picks the
# interpreter (default python3), WORKERS the test processes beside the rehearsal (default 6), KIT_SECONDS the time
# the whole script may take (default 560: a device call's 600 less call 2's install and some slack). Each phase is
# interrupted where it would leave the summary less than its 20 s, and one that finds under 10 s left is skipped,
# so the summary always runs, with what the phases wrote (on 2026-11-27 the call's limit cut the last benchmark
# and the summary never ran). Exit status: the summary's (0: all passed).
set -uo pipefail
cd "$(dirname "$0")/../.."
source benchmarks/gpu/kit_env.sh "${1:-}"  # results, py, and the kit's folder on the paths
day="$(date -u +%Y-%m-%d)"
log="$results/gpu_kit_${day}.log"
budget="${KIT_SECONDS:-560}"
summary_reserve=20
# Seconds a phase may run: what is left of the budget less the summary's reserve.
allowed() { echo $(( $(kit_left "$budget") - summary_reserve )); }

if ! "$py" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    echo "No CUDA GPU here (torch.cuda.is_available() is False): the GPU kit needs an NVIDIA GPU." >&2
    exit 2
fi
{
    echo "# GPU kit, $(date -u '+%Y-%m-%d %H:%M UTC')"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1
    "$py" -c "import sys, torch; print('python', sys.version.split()[0], '| torch', torch.__version__, '| CUDA', torch.version.cuda)"
} | tee "$log"

# phase TITLE: start one, or say it is skipped (returning 1) when under 10 s are left for it.
phase() {
    if [ "$(allowed)" -lt 10 ]; then
        echo "## $1: skipped, $(allowed) s left before the summary (KIT_SECONDS=$budget)" | tee -a "$log"
        return 1
    fi
    echo "## $1 ($(allowed) s allowed)" | tee -a "$log"
    started=$(date +%s)
}
took() { echo "$1=$(( $(date +%s) - started ))"; }
timings=()

if phase "1. GPU tests (pytest -n ${WORKERS:-6}) and, beside them from the start, the card rehearsal"; then
    # The rehearsal is the longest single test (about 135 s on the H200): started first and on its own, it ends
    # with the rest instead of after them (on 2026-11-27 xdist gave it to a worker last, and the phase took 235 s).
    rehearsal="$results/gpu_rehearsal_${day}.log"
    within "$(allowed)" "$py" -m pytest tests/gpu/test_card_rehearsal_cuda.py -m gpu -v -rs -p no:cacheprovider \
        --junitxml="$results/gpu_tests_${day}_rehearsal.xml" >"$rehearsal" 2>&1 &
    rehearsing=$!
    within "$(allowed)" nice -n 10 "$py" benchmarks/orpheus_memory_profiles.py --base "$orpheus_base" --write-base \
        >"$results/orpheus_base_${day}.log" 2>&1 &
    writing=$!
    within "$(allowed)" "$py" -m pytest tests/gpu -m gpu -v -rs -p no:cacheprovider -n "${WORKERS:-6}" \
        --dist loadfile --ignore=tests/gpu/test_card_rehearsal_cuda.py --junitxml="$results/gpu_tests_${day}.xml" \
        2>&1 | tee -a "$log"
    wait "$rehearsing"
    cat "$rehearsal" >>"$log" && rm -f "$rehearsal"
    wait "$writing"  # before the timed cases: the writer would take their host's time
    cat "$results/orpheus_base_${day}.log" >>"$log" && rm -f "$results/orpheus_base_${day}.log"
    timings+=(--phase "$(took tests)")
fi

# Each benchmark rewrites its JSON after every case, so one cut short keeps the cases it finished.
if phase "2a. XTTS v2 memory and speed per profile, alone on the card (real-size GPT, 11 s clips)"; then
    within "$(allowed)" "$py" benchmarks/memory_profiles.py --device cuda --warmup 1 --steps 3 \
        --profiles low,high,alltalk-baseline --out "$results/memory_profiles_${day}_gpu.json" 2>&1 | tee -a "$log"
    timings+=(--phase "$(took xtts-benchmark)")
fi

if phase "2b. F5-TTS memory and speed per profile, alone on the card (real-size DiT, 30 s clips)"; then
    within "$(allowed)" "$py" benchmarks/f5_memory_profiles.py --device cuda --warmup 1 --steps 3 \
        --profiles low,high,f5-baseline --out "$results/f5_memory_profiles_${day}_gpu.json" 2>&1 | tee -a "$log"
    timings+=(--phase "$(took f5-benchmark)")
fi

echo "## 3. Summary" | tee -a "$log"
"$py" benchmarks/gpu/summary.py "$results" "$day" ${timings[@]+"${timings[@]}"} 2>&1 | tee -a "$log"
exit "${PIPESTATUS[0]}"
