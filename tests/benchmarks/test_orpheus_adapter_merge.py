"""The adapter-merge benchmark (``benchmarks/orpheus_adapter_merge.py``) on the tiny model, on the CPU: the CPU twin
of the GPU kit's case (``run_more.sh``: Low's 4-bit weights quantised on the card). It writes the base and the two
adapters peft makes, checks and merges a case in a process of its own (Low's, from the adapter carrying
embed_tokens and lm_head in full) and records its times and peaks: the merged model is untied, its two matrices
differ."""

from __future__ import annotations

import json

from tests.benchmarks.scripts import load_script

SCRIPT = load_script("orpheus_adapter_merge.py")


def test_the_benchmark_writes_adapters_merges_them_and_records_each_phase(tmp_path):
    data, out = tmp_path / "data", tmp_path / "merge.json"
    assert SCRIPT.main(["--data", str(data), "--write", "--arch", "tiny", "--cases", "full-nf4",
                        "--out", str(out)]) == 0
    config = json.loads((data / "full" / "adapter_config.json").read_text())
    assert config["r"] == SCRIPT.RANK and config["modules_to_save"] == ["embed_tokens", "lm_head"]
    assert json.loads((data / "plain" / "adapter_config.json").read_text())["modules_to_save"] is None
    [record] = json.loads(out.read_text())
    assert record["case"] == "full-nf4" and "error" not in record, record
    assert record["tied"] is False and record["untied_changed"] is True  # the adapter's two matrices, apart
    assert record["embedding_on_host_bytes"] > 0  # Low keeps the untied input embedding in host memory
    assert set(record["merge"]["parts"]) == {"load", "merge"}  # Low: each layer quantised as it is merged
    assert record["arch"] == "tiny" and record["device"] == "cpu" and record["base_weights"] == "nf4"
    for phase in ("check", "merge", "touch"):
        assert record[phase]["seconds"] >= 0 and record[phase]["peak_rss_gib"] >= record[phase]["rss_after_gib"] > 0
