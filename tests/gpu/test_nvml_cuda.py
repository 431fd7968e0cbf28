"""NVML (the driver's view) against torch's view of the same card: the app shows NVML's figures, torch trains."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

GIB = 1024**3


def test_nvml_and_torch_describe_the_same_cards():
    import torch

    from alltalk_gui.core.machine.gpu import list_devices
    from alltalk_gui.core.machine.nvml import read_gpus

    nvml = read_gpus()
    assert nvml, "NVML found no GPU although torch has CUDA (is libnvidia-ml reachable?)"
    cards = [d for d in list_devices() if d.kind == "cuda"]
    assert len(cards) == torch.cuda.device_count()
    for card in cards:
        assert card.source == "nvml", f"{card.name}: fell back to torch's figures"
        props = torch.cuda.get_device_properties(card.index)
        assert card.name == props.name
        assert card.total_gib == pytest.approx(props.total_memory / GIB, rel=0.02)
        free, _total = torch.cuda.mem_get_info(card.index)
        # Two readings a moment apart on a machine where nothing else trains: within a quarter GiB.
        assert card.free_gib == pytest.approx(free / GIB, abs=0.25)
        assert card.capability == f"{props.major}.{props.minor}"
        assert card.bf16 == torch.cuda.is_bf16_supported()
        assert card.driver


def test_memory_another_program_holds_is_seen_and_named():
    """A second process takes 2 GiB on GPU 0: the card's free memory drops by that much, and where the driver
    lists processes (not in every container) the app names it."""
    from alltalk_gui.core.machine.gpu import list_devices

    before = next(d for d in list_devices() if d.kind == "cuda" and d.index == 0)
    hog = subprocess.Popen([sys.executable, "-c",
                            "import torch, sys, time; x = torch.empty(2 * 1024**3, dtype=torch.uint8, device='cuda');"
                            "torch.cuda.synchronize(); print('ready', flush=True); time.sleep(60)"],
                           stdout=subprocess.PIPE, text=True)
    try:
        assert hog.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        during = next(d for d in list_devices() if d.kind == "cuda" and d.index == 0)
    finally:
        hog.kill()
        hog.wait()
    assert before.free_gib - during.free_gib == pytest.approx(2.0, abs=0.6), (before.free_gib, during.free_gib)
    if during.processes:
        # (A container may show the host's process ids, so the program is found by the memory it holds.)
        assert any((p.used_gib or 0) >= 1.9 for p in during.processes), during.processes
        assert during.other_processes_gib and during.other_processes_gib >= 1.9
