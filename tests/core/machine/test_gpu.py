"""GPU detection: NVML where the driver offers it, torch otherwise, and the CPU always.

This machine has no NVIDIA driver, so the real code paths tested here are the fallbacks (NVML's library is not
found, torch sees no CUDA device, the CPU is listed). The NVML paths are driven by a fake ``pynvml`` module that
stands for the driver this machine lacks: it answers with figures recorded from real cards (two RTX 3060s and an
RTX 4090, nvidia-ml-py 12/13, driver 550), put into ``sys.modules`` in place of the real module. torch's side
(``gpu._torch_gpus`` / ``gpu._torch_memory``) is replaced with what torch reports for those cards.
"""

from __future__ import annotations

import json
import os
import sys
import types
from dataclasses import replace

import psutil
import pytest

from alltalk_gui.core.machine import gpu
from alltalk_gui.core.machine import nvml
from alltalk_gui.core.machine.gpu import (
    DeviceInfo,
    GpuProcess,
    TorchGpu,
    describe,
    list_devices,
    other_use,
)

GIB = 1024**3
MIB = 1024**2
ME = os.getpid()
PARENT = os.getppid()  # a real process, so its name resolves through psutil
GONE = 2**22 + 12345  # above Linux's pid_max: no such process, so no name

UUID_A = "GPU-6b4c1f2e-0d7a-4f3e-9a51-3c2e8d1f0a11"
UUID_B = "GPU-9e2d0c4b-7a1f-4e6d-8b3c-5f4a2e1d0b22"


class FakeNVMLError(Exception):
    """pynvml.NVMLError: every NVML failure is one of these."""


class FakeCard:
    def __init__(self, uuid, bus, name, total, free, compute=(), graphics=()):
        self.uuid, self.bus, self.name, self.total, self.free = uuid, bus, name, total, free
        self.compute, self.graphics = list(compute), list(graphics)


def proc(pid: int, used: int | None) -> types.SimpleNamespace:
    """An entry of nvmlDeviceGetComputeRunningProcesses: usedGpuMemory is None where NVML says 'not available'."""
    return types.SimpleNamespace(pid=pid, usedGpuMemory=used)


def fake_pynvml(cards: list[FakeCard], driver: str | bytes = "550.54.14", init_error: str | None = None,
                failing: str | None = None) -> types.ModuleType:
    """A stand-in for the ``pynvml`` module answering as the driver would for ``cards`` (in PCI order).

    ``init_error``: nvmlInit raises it (e.g. "Driver Not Loaded"). ``failing``: that function raises NVMLError.
    """
    mod = types.ModuleType("pynvml")
    mod.NVMLError = FakeNVMLError
    mod.calls = []

    def answer(name, fn):
        def call(*args):
            mod.calls.append(name)
            if name == failing:
                raise FakeNVMLError("Unknown Error")
            return fn(*args)
        setattr(mod, name, call)

    def init():
        if init_error:
            raise FakeNVMLError(init_error)

    answer("nvmlInit", init)
    answer("nvmlShutdown", lambda: None)
    answer("nvmlSystemGetDriverVersion", lambda: driver)
    answer("nvmlDeviceGetCount", lambda: len(cards))
    answer("nvmlDeviceGetHandleByIndex", lambda i: cards[i])
    answer("nvmlDeviceGetUUID", lambda c: c.uuid)
    answer("nvmlDeviceGetName", lambda c: c.name)
    answer("nvmlDeviceGetPciInfo", lambda c: types.SimpleNamespace(
        domain=0, bus=c.bus, device=0, busId=f"00000000:{c.bus:02X}:00.0"))
    answer("nvmlDeviceGetMemoryInfo", lambda c: types.SimpleNamespace(
        total=c.total, free=c.free, used=c.total - c.free))
    answer("nvmlDeviceGetComputeRunningProcesses", lambda c: c.compute)
    answer("nvmlDeviceGetGraphicsRunningProcesses", lambda c: c.graphics)
    return mod


def torch_sees(monkeypatch, cards: list[TorchGpu], memory: dict[int, tuple[int, int]] | None = None) -> list[int]:
    """Make torch report ``cards``; returns the list of indices mem_get_info was asked about."""
    asked: list[int] = []

    def mem_get_info(index):
        asked.append(index)
        return (memory or {})[index]

    monkeypatch.setattr(gpu, "_torch_gpus", lambda: cards)
    monkeypatch.setattr(gpu, "_torch_memory", mem_get_info)
    return asked


def torch_card(index: int, uuid: str, bus: int, name: str = "NVIDIA GeForce RTX 3060", major: int = 8,
               minor: int = 6) -> TorchGpu:
    return TorchGpu(index, name, major, minor, nvml.normalise_uuid(uuid), (0, bus, 0))


# Two RTX 3060 12 GB. A: 1.9 GiB held by a browser and a Python process, plus 0.3 GiB by this process.
# B: idle but for the driver's reserve.
def two_cards() -> list[FakeCard]:
    return [
        FakeCard(UUID_A, 0x01, "NVIDIA GeForce RTX 3060", 12 * GIB, int(9.8 * GIB),
                 compute=[proc(GONE, int(0.7 * GIB)), proc(ME, 300 * MIB)],
                 graphics=[proc(PARENT, int(1.2 * GIB))]),
        FakeCard(UUID_B, 0x02, "NVIDIA GeForce RTX 3060", 12 * GIB, int(11.7 * GIB)),
    ]


# -- this machine: no driver ---------------------------------------------------------------------------------------

def test_without_a_driver_nvml_reports_nothing_and_only_the_cpu_is_listed():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    assert nvml.read_gpus() is None  # the real pynvml: NVMLError_LibraryNotFound
    devices = list_devices()
    assert [d.kind for d in devices] == ["cpu"]
    cpu = devices[0]
    assert cpu.source == "psutil" and cpu.cores == gpu.cpu_cores() >= 1
    assert 0 < cpu.free_gib <= cpu.total_gib
    assert cpu.other_processes_gib is None and cpu.processes == ()
    assert DeviceInfo.from_dict(json.loads(json.dumps(cpu.to_dict()))) == cpu


def test_without_the_pynvml_module_nvml_reports_nothing(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    assert nvml.read_gpus() is None


# -- NVML answers (the fake driver) --------------------------------------------------------------------------------

def test_nvml_gives_memory_driver_and_the_other_programs_by_name(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(two_cards()))
    asked = torch_sees(monkeypatch, [torch_card(0, UUID_A, 1), torch_card(1, UUID_B, 2)])
    a, b, cpu = list_devices()
    assert asked == []  # NVML answered: no CUDA context was created for mem_get_info
    assert (a.source, a.driver, a.total_gib, a.free_gib) == ("nvml", "550.54.14", 12.0, 9.8)
    assert a.capability == "8.6" and a.bf16
    # Own process (0.3 GiB) is not "other"; the browser's figure comes from the graphics list.
    assert [p.pid for p in a.processes] == [PARENT, GONE]  # most memory first
    assert a.processes[0] == GpuProcess(PARENT, psutil.Process(PARENT).name(), 1.2)
    assert a.processes[1] == GpuProcess(GONE, "", 0.7) and a.processes[1].label == f"pid {GONE}"
    assert a.other_processes_gib == pytest.approx(1.9)
    # Nothing listed on B: what is in use (the driver's reserve) is all "other".
    assert b.processes == () and b.other_processes_gib == pytest.approx(0.3)
    assert cpu.kind == "cpu"


def test_the_description_names_the_other_programs():
    parent = psutil.Process(PARENT).name()
    card = DeviceInfo(kind="cuda", index=0, name="RTX 3060", total_gib=12.0, free_gib=9.8, bf16=True,
                      capability="8.6", source="nvml", other_processes_gib=1.9,
                      processes=(GpuProcess(11, "chrome", 1.2), GpuProcess(12, "python", 0.7)))
    assert describe(card) == "RTX 3060 12 GiB: 9.8 GiB free (1.9 GiB used by 2 other programs: chrome, python)"
    many = replace(card, processes=tuple(GpuProcess(i, n, 0.1) for i, n in enumerate("abacd")) + (
        GpuProcess(PARENT, parent, 0.1),))
    assert other_use(many).endswith("by 6 other programs: a, b, c and 2 more")
    torch_only = DeviceInfo(kind="cuda", index=0, name="RTX 3060", total_gib=12.0, free_gib=9.8, bf16=True,
                            source="torch")
    assert describe(torch_only) == "RTX 3060 12 GiB: 9.8 GiB free (2.2 GiB in use)"
    idle = DeviceInfo(kind="cuda", index=0, name="RTX 3060", total_gib=12.0, free_gib=12.0, bf16=True)
    assert describe(idle) == "RTX 3060 12 GiB: 12.0 GiB free"


def test_cards_are_matched_by_uuid_whatever_cuda_visible_devices_did(monkeypatch):
    """CUDA_VISIBLE_DEVICES=1,0: torch's device 0 is NVML's card 1 (NVML numbers in PCI order, ignoring it)."""
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(two_cards()))
    torch_sees(monkeypatch, [torch_card(0, UUID_B, 2), torch_card(1, UUID_A, 1)])
    first, second, _ = list_devices()
    assert (first.index, first.free_gib, first.processes) == (0, 11.7, ())
    assert (second.index, second.free_gib, len(second.processes)) == (1, 9.8, 2)


def test_a_single_visible_card_gets_its_own_figures(monkeypatch):
    """CUDA_VISIBLE_DEVICES=1: torch sees one device, NVML still lists both."""
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(two_cards()))
    torch_sees(monkeypatch, [torch_card(0, UUID_B, 2)])
    devices = list_devices()
    assert [(d.kind, d.index, d.free_gib) for d in devices[:-1]] == [("cuda", 0, 11.7)]


def test_without_a_uuid_from_torch_cards_are_matched_by_pci_address(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(two_cards()))
    torch_sees(monkeypatch, [replace(torch_card(0, UUID_B, 2), uuid=""), replace(torch_card(1, UUID_A, 1), uuid="")])
    first, second, _ = list_devices()
    assert (first.free_gib, second.free_gib) == (11.7, 9.8) and first.source == second.source == "nvml"


def test_a_device_nvml_does_not_describe_falls_back_to_torch(monkeypatch):
    """A MIG slice's UUID is not a whole card's: torch's mem_get_info describes it, the PCI address is not used."""
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(two_cards()))
    mig = TorchGpu(0, "NVIDIA A100 MIG 1g.10gb", 8, 0, "mig-5c8b1e2a-0f3d-4a6e-9b7c-1d2e3f4a5b6c", (0, 1, 0))
    asked = torch_sees(monkeypatch, [mig], {0: (int(9.5 * GIB), 10 * GIB)})
    (device, _cpu) = list_devices()
    assert asked == [0]
    assert (device.source, device.free_gib, device.total_gib) == ("torch", 9.5, 10.0)
    assert device.other_processes_gib is None and device.processes == () and device.driver == ""


@pytest.mark.parametrize("init_error, failing", [
    ("Driver Not Loaded", None),  # NVMLError_DriverNotLoaded at nvmlInit
    (None, "nvmlDeviceGetMemoryInfo"),  # a card that stops answering half-way (fallen off the bus)
])
def test_nvml_errors_fall_back_to_torch_for_every_card(monkeypatch, init_error, failing):
    fake = fake_pynvml(two_cards(), init_error=init_error, failing=failing)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    asked = torch_sees(monkeypatch, [torch_card(0, UUID_A, 1), torch_card(1, UUID_B, 2)],
                       {0: (int(9.5 * GIB), 12 * GIB), 1: (int(11.4 * GIB), 12 * GIB)})
    a, b, _ = list_devices()
    assert asked == [0, 1]
    assert (a.source, a.free_gib, b.free_gib) == ("torch", 9.5, 11.4)
    if failing:
        assert fake.calls[-1] == "nvmlShutdown"  # NVML is shut down even after an error


def test_process_lists_each_pid_once_and_unknown_figures_fall_back_to_used_memory(monkeypatch):
    """A program that computes and draws is in both lists; Windows (WDDM) and some containers report no figure."""
    card = FakeCard(UUID_A, 1, "NVIDIA GeForce RTX 4090", 24 * GIB, 20 * GIB,
                    compute=[proc(PARENT, 2 * GIB), proc(GONE, None), proc(ME, GIB)],
                    graphics=[proc(PARENT, 2 * GIB)])
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml([card], driver=b"551.23"))  # older pynvml: bytes
    torch_sees(monkeypatch, [torch_card(0, UUID_A, 1, "NVIDIA GeForce RTX 4090", 8, 9)])
    device, _ = list_devices()
    assert [p.pid for p in device.processes] == [PARENT, GONE]
    assert device.processes[1].used_gib is None
    assert device.other_processes_gib == pytest.approx(3.0)  # 4 GiB in use less this process's 1 GiB
    assert device.driver == "551.23"
    assert "used by 2 other programs" in other_use(device)


def test_a_process_query_nvml_does_not_support_is_skipped(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml",
                        fake_pynvml(two_cards(), failing="nvmlDeviceGetGraphicsRunningProcesses"))
    torch_sees(monkeypatch, [torch_card(0, UUID_A, 1)])
    device, _ = list_devices()
    assert device.source == "nvml" and [p.pid for p in device.processes] == [GONE]


def test_the_json_listing_round_trips_and_ignores_keys_it_does_not_know(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(two_cards()))
    torch_sees(monkeypatch, [torch_card(0, UUID_A, 1), torch_card(1, UUID_B, 2)])
    devices = list_devices()
    listing = json.loads(json.dumps([d.to_dict() for d in devices]))
    assert listing[0]["processes"][0] == {"pid": PARENT, "name": psutil.Process(PARENT).name(), "used_gib": 1.2}
    assert [DeviceInfo.from_dict({**d, "from_a_newer_version": 1}) for d in listing] == devices


# -- does the installed PyTorch have kernels for the card? -----------------------------------------------------------

CU128_ARCHES = ["sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]  # torch 2.9.1+cu128
CU126_ARCHES = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]  # torch 2.9.1+cu126


@pytest.mark.parametrize("capability, arches, ok", [
    ((6, 1), CU128_ARCHES, False),  # GTX 1080 under cu128: "no kernel image"
    ((6, 1), CU126_ARCHES, True),  # sm_60 machine code runs on 6.1
    ((8, 9), CU126_ARCHES, True),  # sm_86 runs on 8.9
    ((12, 0), CU126_ARCHES, False),  # Blackwell needs cu128
    ((12, 0), CU128_ARCHES, True),
    ((10, 0), ["sm_80", "compute_90"], True),  # PTX is compiled for newer cards by the driver
    ((3, 5), CU126_ARCHES, False),
    ((6, 1), [], True),  # unknown (no CUDA in this torch): no claim
])
def test_kernels_for_the_card(capability, arches, ok):
    assert gpu.has_kernels(capability, arches) is ok


def test_a_card_without_kernels_gets_a_warning_naming_the_build(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    torch_sees(monkeypatch, [torch_card(0, UUID_A, 1, "NVIDIA GeForce GTX 1080", 6, 1)], {0: (7 * GIB, 8 * GIB)})
    monkeypatch.setattr(gpu, "_torch_arch_list", lambda: CU128_ARCHES)
    card = gpu.list_devices()[0]
    assert card.warning == (
        "This PyTorch has no kernels for the NVIDIA GeForce GTX 1080 (compute capability 6.1) (it covers 7.0 to "
        "12.0): training on it fails with \"no kernel image is available\". Install PyTorch's cu126 build, which "
        "covers 5.0 to 9.0 (on Windows: start the launcher with -CudaIndex cu126).")
    assert gpu.DeviceInfo.from_dict(card.to_dict()).warning == card.warning  # survives `alltalk-gui gpu --json`
    monkeypatch.setattr(gpu, "_torch_arch_list", lambda: CU126_ARCHES)
    assert gpu.list_devices()[0].warning == ""


@pytest.mark.parametrize("torch_cuda, words", [
    (None, "is its CPU-only build"),
    ("12.6", "PyTorch's CUDA 12.6 build cannot run on its driver (457.51). Update the NVIDIA driver"),
])
def test_an_nvidia_card_torch_cannot_use_is_named_on_the_cpu_entry(monkeypatch, torch_cuda, words):
    card = FakeCard(UUID_A, 0x01, "NVIDIA GeForce GTX 1080", 8 * GIB, 7 * GIB)
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml([card], driver="457.51"))
    torch_sees(monkeypatch, [])
    monkeypatch.setattr(gpu, "_torch_build", lambda: ("2.9.1+cu126" if torch_cuda else "2.9.1+cpu", torch_cuda))
    [cpu] = gpu.list_devices()
    assert cpu.kind == "cpu" and words in cpu.warning and "GeForce GTX 1080" in cpu.warning
