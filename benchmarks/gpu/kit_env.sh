# Sourced by the GPU kit's scripts (run.sh, run_more.sh) from the checkout's root, with the results folder as its
# argument: sets `results` (made absolute), `py` (PYTHON, default python3) and the environment. With ALLTALK_KIT
# (the folder bundles.py installed the kit into) that folder comes first on PYTHONPATH, its speech cache stands
# in for a missing espeak-ng, and pip makes an engine's own environment (Parler-TTS) from the kit's wheels: the
# machine has no package index. `kit_left BUDGET` says how many of BUDGET seconds are left since it was sourced, and
# `within SECONDS COMMAND...` runs a command for at most SECONDS (interrupted like Ctrl+C, so pytest and the
# benchmarks write what they have; killed 10 s later if still running).
kit_started=$(date +%s)
kit_left() { echo $(( $1 - ($(date +%s) - kit_started) )); }
within() { local seconds="$1"; shift; timeout --signal=INT --kill-after=10 "$seconds" "$@"; }
results="${1:-benchmarks/results}"
mkdir -p "$results"
results="$(cd "$results" && pwd)"
py="${PYTHON:-python3}"
path="$PWD"
if [ -n "${ALLTALK_KIT:-}" ]; then
    path="$ALLTALK_KIT:$path"
    [ -d "$ALLTALK_KIT/speech" ] && ! command -v espeak-ng >/dev/null && export ALLTALK_SPEECH_CACHE="$ALLTALK_KIT/speech"
    [ -d "$ALLTALK_KIT/engine-wheels" ] && [ -z "${ALLTALK_GUI_ENGINE_PIP_ARGS:-}" ] && \
        export ALLTALK_GUI_ENGINE_PIP_ARGS="--no-index --find-links $ALLTALK_KIT/engine-wheels"
fi
# The device tool brings back at most 8 files of a call: where a script wrote more, its JSON files go into one
# tar at exit (on 2026-11-27 call 3 wrote 11 and three benchmarks' JSON stayed behind). `tar xf` it here.
kit_pack() {
    [ "$(find "$results" -type f | wc -l)" -le 8 ] && return
    (cd "$results" && tar cf "json_$(date -u +%Y-%m-%d_%H%M%S).tar" -- *.json && rm -f -- *.json)
}
trap kit_pack EXIT
export PYTHONPATH="$path${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 ALLTALK_KIT_RESULTS="$results"
# The real-size Orpheus 3B with random weights (6.6 GB) that run_more.sh's cases load: run.sh writes it during its
# tests, on the CPU, so that call 3's seconds go to the card (the machine keeps /tmp while it is warm).
orpheus_base="${ALLTALK_ORPHEUS_BASE:-/tmp/orpheus_random_base}"
