"""Memory statistics and the allocator setting (core/machine/memory.py) on the CPU: the CUDA caching allocator's
expandable segments are asked for before the first CUDA allocation unless the user set the allocator up (under
either of torch's names); a CPU device reports resident memory only; the peak holds gradients and activations
together only with accumulation."""

from __future__ import annotations

import pytest

from alltalk_gui.core.machine import memory


@pytest.mark.parametrize("name", memory.ALLOC_CONF_NAMES)
def test_a_users_allocator_setting_wins_under_either_name(monkeypatch, name):
    for other in memory.ALLOC_CONF_NAMES:
        monkeypatch.delenv(other, raising=False)
    monkeypatch.setenv(name, "max_split_size_mb:128")
    assert memory.use_expandable_segments() == "max_split_size_mb:128"
    assert [n for n in memory.ALLOC_CONF_NAMES if n in __import__("os").environ] == [name]


def test_expandable_segments_are_asked_for_when_nothing_is_set(monkeypatch):
    for name in memory.ALLOC_CONF_NAMES:
        monkeypatch.delenv(name, raising=False)
    assert memory.use_expandable_segments() == "expandable_segments:True"
    import os

    assert os.environ[memory.ALLOC_CONF_NAMES[0]] == "expandable_segments:True"


def test_on_the_cpu_only_resident_memory_is_reported():
    stats = memory.memory_stats("cpu", reset_peak=True)
    assert set(stats) == {"rss", "rss_peak"} and 0 < stats["rss"] <= stats["rss_peak"] + 0.01


def test_gradients_and_activations_overlap_only_with_accumulation():
    assert memory.held_at_peak(1.5, 2.0, accumulates=True) == 3.5
    assert memory.held_at_peak(1.5, 2.0, accumulates=False) == 2.0
    assert memory.held_at_peak(1.5, 0.2, accumulates=False) == 1.5
