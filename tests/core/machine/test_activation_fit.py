"""The engines' activation fits: a quadratic through measured bytes, its per-position part, and the calibration
file written atomically and read back (or None, for the engine's fallback, when it is missing or broken)."""

from __future__ import annotations

import json

import pytest

from alltalk_gui.core.machine import activation_fit


def test_a_quadratic_series_is_fitted_exactly_and_kept_beside_its_fit():
    lengths = [128, 256, 512]
    series = {"layer": [1000 + 3 * n + 0.5 * n * n for n in lengths], "flat": [7.0, 7.0, 7.0]}
    fits = activation_fit.fit(lengths, series)
    assert fits["layer"] == pytest.approx([1000, 3, 0.5], rel=1e-6, abs=1e-6)
    assert fits["flat"] == pytest.approx([7, 0, 0], abs=1e-6)
    assert fits["measured_bytes"]["layer"] == {"128": series["layer"][0], "256": series["layer"][1],
                                               "512": series["layer"][2]}
    # The per-position part leaves out the constant (weights autograd saves) and never goes below zero.
    assert activation_fit.at(fits["layer"], 100) == pytest.approx(3 * 100 + 0.5 * 100 * 100)
    assert activation_fit.at([5.0, -1.0, 0.0], 10) == 0.0


def test_the_file_is_written_whole_and_read_back_by_its_key(tmp_path):
    path = tmp_path / "profiles" / "calibration.json"
    written = activation_fit.write(path, {"model": "tiny"}, "per_token", lambda: {"fp32": {"layer": [0, 1, 2]}})
    on_disk = json.loads(path.read_text(encoding="utf-8"))
    assert on_disk == written and on_disk["model"] == "tiny" and "torch" in on_disk and on_disk["seconds"] >= 0
    assert not list(path.parent.glob("*.tmp*"))  # atomic: no partial file left beside it
    assert activation_fit.read(path, (), "per_token") == {"fp32": {"layer": [0, 1, 2]}}
    assert activation_fit.read(path, (), "per_frame") is None  # another engine's key
    path.write_text("{broken", encoding="utf-8")
    assert activation_fit.read(path, (), "per_token") is None
    assert activation_fit.read(tmp_path / "missing.json", (), "per_token") is None


def test_each_engine_reads_its_shipped_calibration_and_falls_back_without_it(tmp_path):
    from alltalk_gui.core.engines.f5 import memory_estimate as f5
    from alltalk_gui.core.engines.orpheus import memory_estimate as orpheus
    from alltalk_gui.core.engines.parler import memory_estimate as parler

    assert f5.load_calibration()[1] and orpheus.load_calibration()[1] and parler.load_calibration("mini")[1]
    missing = tmp_path / "none.json"
    assert f5.load_calibration(missing) == (f5._FALLBACK, False)
    assert orpheus.load_calibration(missing)[1] is False
    assert parler.load_calibration("mini", missing) == (parler._fallback("mini"), False)
