"""``benchmarks/orpheus_host_overhead.py`` counts what it says: at the timing's narrow width (the count does not
depend on the width), LoRA adds operations to every layer, Orpheus's own full fine-tune (no checkpointing)
dispatches the fewest, and the engine's reentrant checkpointing fewer than the non-reentrant kind it replaced;
the host's seconds come out for every case asked."""

from __future__ import annotations

from tests.benchmarks.scripts import load_script

SCRIPT = load_script("orpheus_host_overhead.py")


def test_the_counts_order_the_cases_as_their_work_does():
    counts = {case: SCRIPT.operations(case, 64, narrow=True) for case in ("high", "medium", "orpheus-full")}
    old = SCRIPT.operations("medium", 64, reentrant=False, narrow=True)
    per_layer = {case: c["ops_per_layer"] for case, c in counts.items()}
    assert per_layer["orpheus-full"] < per_layer["high"] < per_layer["medium"] < old["ops_per_layer"]
    assert counts["medium"]["ops_28_layers"] == counts["medium"]["ops_1_layer"] + 27 * per_layer["medium"]
    assert sum(counts["medium"]["per_layer_by_operation"].values()) == per_layer["medium"]


def test_host_seconds_for_each_case_asked():
    timed = SCRIPT.host_seconds([("high", True), ("high", False)], repeats=1)
    assert set(timed) == {"high", "high (non-reentrant checkpointing)"}
    assert all(t["median_s"] > 0 for t in timed.values())
