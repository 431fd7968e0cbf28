"""The Train page's device cards, offscreen: each GPU with its free memory and the other programs using it (as
NVML reports them; the figures are a recorded card's, this machine has none), and the CPU-only case with Auto's
training-time estimate."""

from __future__ import annotations

import pytest

from alltalk_gui.core.machine.gpu import DeviceInfo, GpuProcess
from alltalk_gui.gui.train.train_setup import SetupPanel
from alltalk_gui.gui.train.gpu_card import GpuCard

BUSY = DeviceInfo(kind="cuda", index=0, name="NVIDIA GeForce RTX 3060", total_gib=12.0, free_gib=9.8, bf16=True,
                  capability="8.6", driver="550.54.14", source="nvml", other_processes_gib=1.9,
                  processes=(GpuProcess(4242, "chrome", 1.2), GpuProcess(4343, "python", 0.7),
                             GpuProcess(4444, "", None)))
IDLE = DeviceInfo(kind="cuda", index=1, name="NVIDIA GeForce RTX 3060", total_gib=12.0, free_gib=12.0, bf16=True,
                  capability="8.6", driver="550.54.14", source="nvml", other_processes_gib=0.0)
CPU = DeviceInfo(kind="cpu", index=0, name="Test CPU", total_gib=24.0, free_gib=20.0, bf16=True, cores=2,
                 source="psutil")


def test_a_gpu_card_names_the_other_programs(qtbot):
    card = GpuCard(BUSY)
    qtbot.addWidget(card)
    assert "GPU 0: NVIDIA GeForce RTX 3060" in card.title.text()
    assert "9.8 GiB free" in card.details.text()
    assert "1.9 GiB used by 3 other programs: chrome, python, pid 4444" in card.details.text()
    assert "driver 550.54.14" in card.details.text()
    tip = card.toolTip()
    assert "chrome (pid 4242): 1.2 GiB" in tip and "python (pid 4343): 0.7 GiB" in tip
    assert "pid 4444: memory not reported" in tip
    idle = GpuCard(IDLE)
    qtbot.addWidget(idle)
    assert "Nothing else is using it" in idle.details.text()


@pytest.fixture
def panel(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    panel = SetupPanel()
    qtbot.addWidget(panel)
    return panel


def cards(panel: SetupPanel) -> list[GpuCard]:
    return [w for w in (panel.cards.itemAt(i).widget() for i in range(panel.cards.count())) if isinstance(w, GpuCard)]


def test_several_gpus_each_get_a_card(panel):
    panel.set_devices([BUSY, IDLE, CPU])
    assert [c.device.index for c in cards(panel)] == [0, 1]
    assert panel.training_device() is IDLE  # the most free memory
    assert panel.processes == 2


def test_cpu_only_says_so_and_auto_gives_the_hours(panel):
    panel.set_devices([CPU])
    (card,) = cards(panel)
    assert "CPU only" in card.title.text()
    reason = panel.picker.auto_reason.text()
    assert "training runs on the CPU, about 12 hours for 10 epochs of 6 minutes of audio on 2 cores" in reason


def test_auto_names_its_profile_once(panel):
    panel.set_devices([IDLE, CPU])
    reason = panel.picker.auto_reason.text()
    assert reason.startswith("→ High: needs about") and reason.count("High") == 1, reason


def test_the_devices_are_listed_by_the_gpu_command_in_a_child_process(panel, qtbot):
    """The real path: ``alltalk-gui gpu --json`` in a QProcess, read back into DeviceInfo (processes included)."""
    with qtbot.waitSignal(panel.devices_ready, timeout=180_000):
        panel.scan_devices()
    assert panel.devices and panel.devices[-1].kind == "cpu" and panel.devices[-1].cores >= 1
    assert all(isinstance(d.processes, tuple) for d in panel.devices)


def test_a_card_pytorch_has_no_kernels_for_says_so(qtbot):
    from dataclasses import replace

    warning = "This PyTorch has no kernels for the NVIDIA GeForce GTX 1080 (compute capability 6.1) ..."
    card = GpuCard(replace(IDLE, name="NVIDIA GeForce GTX 1080", capability="6.1", warning=warning))
    qtbot.addWidget(card)
    assert "has no kernels for the NVIDIA GeForce GTX 1080" in card.details.text()
    assert "has no kernels" in card.toolTip()
