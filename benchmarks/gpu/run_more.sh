#!/usr/bin/env bash
# The GPU kit's optional third call: what the kit's 8 minutes leave out, most wanted first, within a time budget.
# Run it right after call 2, on the same warm machine (the kit's folder, Parler's environment and the random
# Orpheus base that call 2 wrote during its tests are still there):
#
#   ALLTALK_KIT=/tmp/kit bash benchmarks/gpu/run_more.sh RESULTS_DIR SECONDS
#
#   1. Orpheus-TTS's profiles as the app fills them, with the benchmark that now trains the clips its micro-batch
#      names (until 2026-11-27 every Orpheus case trained one clip a micro-step): Medium beside Orpheus's own full
#      fine-tune at 10 s (issue 25's speed goal), Low and Medium at 30 s, High at 10 s and 30 s, Low at 10 s;
#   2. Orpheus's own LoRA settings at 10 s (one clip: measured 2026-11-27, again as a check);
#   3. XTTS v2's and F5-TTS's Medium and Auto (call 2 measures their Low, High and baselines; measured 2026-11-27);
#   4. Parler-TTS Large v1's Low and Parler Mini, every profile and Parler's own settings (measured 2026-11-27);
#   5. an Orpheus LoRA adapter as the base of a Low run (benchmarks/orpheus_adapter_merge.py, real size, rank 64,
#      plain and with embed_tokens/lm_head in full): the check and the bf16 merge on the host, then the 4-bit
#      weights quantised on the card (host RAM, card memory, times); its CPU figures are in docs/benchmarks.md;
# then one summary of what it measured, with the goals (benchmarks/gpu/summary.py --more).
# A part starts only while at least its planned seconds are left (measured on the H200, 2026-11-27: 30-40 s an
# Orpheus case once the random base is written; writing it took about a minute more, now done in call 2); each
# writes its JSON as it goes, so a part cut short keeps its cases.
set -uo pipefail
cd "$(dirname "$0")/../.."
source benchmarks/gpu/kit_env.sh "${1:-}"  # results, py, orpheus_base, and the kit's folder on the paths
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

# orpheus CLIP PROFILES PLANNED TITLE: Orpheus's benchmark on the random base; a minute more where call 2 did not
# leave the base written.
orpheus() {
    local planned="$3"
    [ -f "$orpheus_base/config.json" ] || planned=$(( planned + 60 ))
    part "$4" "$planned" "$py" benchmarks/orpheus_memory_profiles.py --device cuda --clip-seconds "$1" \
        --warmup 1 --steps 2 --profiles "$2" --base "$orpheus_base" \
        --out "$results/orpheus_${2//,/_}_${1}s_gpu.json"
}

# Parler's environment takes minutes to make from the kit's wheels where call 2's tests did not leave it ready.
parler_ready() {
    "$py" -c "import sys
from alltalk_gui.core.engine_api import environment
from alltalk_gui.core.engine_api.engine import get_engine
sys.exit(0 if environment.is_ready(get_engine('parler').environment) else 1)" >/dev/null 2>&1
}

orpheus 10 medium,orpheus-full 80 "Orpheus Medium and Orpheus's own full fine-tune, 10 s clips"
orpheus 30 low,medium 80 "Orpheus Low and Medium, 30 s clips"
orpheus 10 high 45 "Orpheus High, 10 s clips"
orpheus 30 high 45 "Orpheus High, 30 s clips"
orpheus 10 low 45 "Orpheus Low, 10 s clips"
orpheus 10 orpheus-lora 45 "Orpheus's own LoRA settings, 10 s clips"
part "XTTS v2 Medium and Auto, 11 s clips" 70 "$py" benchmarks/memory_profiles.py --device cuda --warmup 1 \
    --steps 3 --profiles medium,auto --out "$results/memory_profiles_medium_auto_gpu.json"
part "F5-TTS Medium and Auto, 30 s clips" 70 "$py" benchmarks/f5_memory_profiles.py --device cuda --warmup 1 \
    --steps 3 --profiles medium,auto --out "$results/f5_memory_profiles_medium_auto_gpu.json"
if parler_ready; then planned=10; else planned=150; fi
part "Parler-TTS's environment" "$planned" "$py" -m alltalk_gui engine-env parler
if parler_ready; then
    # Large's random 2.3 B weights are built on the host first (47 s on the H200's host, 2026-11-27).
    part "Parler-TTS Large, Low, 10 s clips" 60 "$py" benchmarks/parler_memory_profiles.py --device cuda \
        --size large --profiles low --clip-seconds 10 --warmup 1 --steps 2 \
        --out "$results/parler_memory_profiles_large_low_gpu.json"
    part "Parler-TTS Mini, each profile and Parler's own, 10 s clips" 140 \
        "$py" benchmarks/parler_memory_profiles.py --device cuda --size mini \
        --clip-seconds 10 --warmup 1 --steps 2 --out "$results/parler_memory_profiles_mini_gpu.json"
else
    echo "## Parler-TTS Large and Mini: skipped, its environment is not ready ($(left) s left of $budget)" |
        tee -a "$log"
fi
# Planned from the CPU run (2 shared cores: 2-4 min a merge, the base read from disk): writing the two adapters
# (2.6 GB) and the base's tokenizer and codec, then two merges on 16 cores; never measured on the card yet.
[ -f "$orpheus_base/config.json" ] && planned=180 || planned=240
part "Orpheus adapter as a Low base: check, merge, 4-bit on the card" "$planned" "$py" \
    benchmarks/orpheus_adapter_merge.py --data /tmp/orpheus_adapters --base "$orpheus_base" --write --device cuda \
    --cases plain-nf4,full-nf4 --out "$results/orpheus_adapter_merge_gpu.json"
echo "## done: $(( budget - $(left) )) s of $budget" | tee -a "$log"
# The cases and the goals they judge (Orpheus's and Parler's targets, Medium's speed goal), met or missed.
"$py" benchmarks/gpu/summary.py "$results" "$(date -u +%Y-%m-%d)" --more 2>&1 | tee -a "$log"
