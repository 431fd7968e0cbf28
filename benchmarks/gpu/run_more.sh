#!/usr/bin/env bash
# The GPU kit's optional third call: what the kit's 8 minutes leave out, most wanted first, within a time budget.
# Run it right after call 2, on the same warm machine (the kit's folder and Parler's environment are still there):
#
#   ALLTALK_KIT=/tmp/kit bash benchmarks/gpu/run_more.sh RESULTS_DIR SECONDS
#
#   1. Orpheus-TTS 3B High at 10 s and 30 s clips (its 22 GiB target, with the loss that sums the vocabulary
#      matrix's gradients in place), then Low and Medium at 30 s;
#   2. Parler-TTS Mini, every profile and Parler's own settings, 10 s clips (issue 26's table);
#   3. Orpheus's own full and LoRA settings at 10 s (the baseline of Medium's speed goal).
# A part starts only while at least its planned seconds are left (measured on the H200, 2026-11-27: 30-40 s a
# case once the random base is written); each writes its JSON as it goes, so a part cut short keeps its cases.
set -uo pipefail
cd "$(dirname "$0")/../.."
source benchmarks/gpu/kit_env.sh "${1:-}"  # results, py, and the kit's folder on the paths
budget="${2:-300}"
log="$results/gpu_more_$(date -u +%Y-%m-%d).log"
left() { kit_left "$budget"; }

# part NAME PLANNED_SECONDS COMMAND...: run it if PLANNED_SECONDS are left, never past the budget.
part() {
    local name="$1" planned="$2"
    shift 2
    if [ "$(left)" -lt "$planned" ]; then
        echo "## $name: skipped, $(left) s left of $budget (it needs about $planned)" | tee -a "$log"
        return
    fi
    echo "## $name ($(left) s left)" | tee -a "$log"
    within "$(left)" "$@" 2>&1 | tee -a "$log"
}

base=/tmp/orpheus_random_base  # written once (6.6 GB of random bf16 weights), read by every Orpheus case
part "Orpheus High, 10 s clips" 80 "$py" benchmarks/orpheus_memory_profiles.py --device cuda --clip-seconds 10 \
    --warmup 1 --steps 2 --profiles high --base "$base" --out "$results/orpheus_high_10s_gpu.json"
part "Orpheus High, 30 s clips" 45 "$py" benchmarks/orpheus_memory_profiles.py --device cuda --clip-seconds 30 \
    --warmup 1 --steps 2 --profiles high --base "$base" --out "$results/orpheus_high_30s_gpu.json"
part "Parler-TTS's environment (call 2's tests made it; else from the kit's wheels)" 150 \
    "$py" -m alltalk_gui engine-env parler
part "Parler-TTS Mini, each profile and Parler's own, 10 s clips" 140 \
    "$py" benchmarks/parler_memory_profiles.py --device cuda --size mini \
    --clip-seconds 10 --warmup 1 --steps 2 --out "$results/parler_memory_profiles_mini_gpu.json"
part "Orpheus Low and Medium, 30 s clips" 80 "$py" benchmarks/orpheus_memory_profiles.py --device cuda \
    --clip-seconds 30 --warmup 1 --steps 2 --profiles low,medium --base "$base" \
    --out "$results/orpheus_low_medium_30s_gpu.json"
part "Orpheus's own settings, 10 s clips" 90 "$py" benchmarks/orpheus_memory_profiles.py --device cuda \
    --clip-seconds 10 --warmup 1 --steps 2 --profiles orpheus-full,orpheus-lora,medium --base "$base" \
    --out "$results/orpheus_baselines_10s_gpu.json"
echo "## done: $(( budget - $(left) )) s of $budget" | tee -a "$log"
