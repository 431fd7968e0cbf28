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
        # Other programs (the rest of the kit, a desktop) may take or free memory at any moment: NVML's reading
        # must lie between two of torch's taken just before and just after it.
        first = torch.cuda.mem_get_info(card.index)[0] / GIB
        again = next(d for d in list_devices() if d.kind == "cuda" and d.index == card.index)
        last = torch.cuda.mem_get_info(card.index)[0] / GIB
        assert min(first, last) - 0.25 <= again.free_gib <= max(first, last) + 0.25, (first, again.free_gib, last)
        assert card.capability == f"{props.major}.{props.minor}"
        assert card.bf16 == torch.cuda.is_bf16_supported()
        assert card.driver


HOLD_GIB = 2.0


def test_memory_another_program_holds_is_seen_and_named():
    """A helper process takes 2 GiB on GPU 0: the app lists it, by its process id, with what it holds (the 2 GiB
    and its CUDA context) and its program's name, and counts it in the memory other programs hold. Found by its
    id, the helper is measured alone, whatever else runs on the card (the rest of the kit, a desktop)."""
    from alltalk_gui.core.machine.gpu import list_devices

    hog = subprocess.Popen([sys.executable, "-c",
                            f"import torch, time; x = torch.empty(int({HOLD_GIB} * 1024**3), dtype=torch.uint8, "
                            "device='cuda'); torch.cuda.synchronize(); print('ready', flush=True); time.sleep(60)"],
                           stdout=subprocess.PIPE, text=True)
    try:
        assert hog.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        during = next(d for d in list_devices() if d.kind == "cuda" and d.index == 0)
    finally:
        hog.kill()
        hog.wait()
    if not during.processes:
        pytest.skip("the driver lists no processes here (some containers hide them): nothing to name")
    helper = [p for p in during.processes if p.pid == hog.pid]
    assert helper, f"the helper (pid {hog.pid}) is not among {during.processes}"
    held = helper[0].used_gib
    if held is not None:  # (Windows' WDDM driver gives no per-process figure)
        assert HOLD_GIB <= held <= HOLD_GIB + 1.5, f"the helper holds {held} GiB: {HOLD_GIB} GiB and its context"
        assert during.other_processes_gib is not None and during.other_processes_gib >= held - 0.01
    assert helper[0].name.startswith("python"), helper[0]
