"""Which accelerators this machine has, how much memory each has free and who else is using it: for
``alltalk-gui gpu``, the auto profile and the GUI.

CUDA devices are the ones torch can use (name, compute capability, bf16 support), so CUDA_VISIBLE_DEVICES is
honoured. Their memory comes from NVML (:mod:`alltalk_gui.core.machine.nvml`) where the NVIDIA driver offers it: free and
total memory, the driver version and the other programs holding memory. NVML numbers cards in PCI order whatever
CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER say, so each torch device is matched to its NVML card by UUID, or by
PCI address, never by index. A card NVML does not describe (no NVML, an NVML error, a MIG slice whose UUID is
not a whole card's) gets free/total memory from ``torch.cuda.mem_get_info``, which counts every process's use but
cannot name them. The CPU and RAM are always listed last, since training can fall back to them.

A card torch can see is not always one it can compute on: each PyTorch build carries kernels for a range of
compute capabilities (``torch.cuda.get_arch_list()``; the cu128 builds of 2.8+ start at 7.0, so a GTX 1080
fails every step with "no kernel image is available"). Such a card's ``warning`` says so and names the build
to install. Likewise a CPU-only or unusable PyTorch on a computer whose NVIDIA card NVML sees (a CPU build, or a
driver too old for the build) puts a warning on the CPU entry, since training would silently run there.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from alltalk_gui.core.machine.nvml import GpuProcess, NvmlGpu, normalise_uuid, read_gpus

GIB = 1024**3


@dataclass(frozen=True)
class DeviceInfo:
    kind: str  # "cuda" or "cpu"
    index: int  # torch's index for CUDA devices
    name: str
    total_gib: float
    free_gib: float
    bf16: bool
    capability: str = ""  # CUDA compute capability, e.g. "8.6"
    cores: int = 0  # CPU only
    driver: str = ""  # NVIDIA driver version (from NVML)
    source: str = ""  # where the memory figures come from: "nvml" or "torch" (CUDA), "psutil" (CPU)
    # GPU memory held by other processes (GiB): with NVML, the sum of their figures, or everything in use but ours
    # when the driver lists no figures; None where unknown (torch fallback, CPU).
    other_processes_gib: float | None = None
    processes: tuple[GpuProcess, ...] = ()  # the other processes using this GPU (NVML only), most memory first
    warning: str = ""  # why training cannot use this device as expected (see the module docstring); "" if none

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["processes"] = [asdict(p) for p in self.processes]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DeviceInfo:
        """The inverse of :meth:`to_dict` (e.g. from ``alltalk-gui gpu --json``); keys it does not know are
        ignored, so an older GUI can read a newer listing."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["processes"] = tuple(GpuProcess(**p) for p in values.get("processes", ()))
        return cls(**values)


def list_devices() -> list[DeviceInfo]:
    """CUDA devices first (if any), then the CPU."""
    devices = _cuda_devices()
    cpu = _cpu_device()
    if not devices:
        cpu = replace(cpu, warning=unused_card_warning(read_gpus() or [], *_torch_build()))
    devices.append(cpu)
    return devices


def other_use(device: DeviceInfo) -> str:
    """Who else uses a GPU, in words: "1.9 GiB used by 2 other programs: chrome, python", "0.4 GiB in use";
    "" when nothing is."""
    if device.processes:
        count = len(device.processes)
        held = device.other_processes_gib
        amount = f"{held:.1f} GiB used" if held is not None else "used"
        return f"{amount} by {count} other program{'s' if count != 1 else ''}: {_names(device.processes)}"
    used = max(device.total_gib - device.free_gib, 0.0)
    return f"{used:.1f} GiB in use" if used >= 0.05 else ""


def describe(device: DeviceInfo) -> str:
    """One line: "NVIDIA GeForce RTX 3060 12 GiB: 9.8 GiB free (1.9 GiB used by 2 other programs: chrome,
    python)", or the CPU's cores and free RAM."""
    if device.kind != "cuda":
        return f"{device.name}: {device.cores} cores, RAM {device.free_gib:.1f} of {device.total_gib:.1f} GiB free"
    others = other_use(device)
    return (f"{device.name} {device.total_gib:.0f} GiB: {device.free_gib:.1f} GiB free"
            + (f" ({others})" if others else ""))


def _names(processes: tuple[GpuProcess, ...], most: int = 3) -> str:
    names = list(dict.fromkeys(p.label for p in processes))  # each name once, biggest user first
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


# -- CUDA ---------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TorchGpu:
    """What torch says about one visible CUDA device."""

    index: int
    name: str
    major: int
    minor: int
    uuid: str  # lower case, no prefix; "" when torch does not say
    pci: tuple[int, int, int]  # (domain, bus, device)


def _cuda_devices() -> list[DeviceInfo]:
    cards = _torch_gpus()
    if not cards:
        return []
    nvml = read_gpus() or []
    arch_list = _torch_arch_list()
    devices = []
    for card in cards:
        match = next((n for n in nvml if same_card(card, n)), None)
        common = {"kind": "cuda", "index": card.index, "name": card.name, "bf16": card.major >= 8,
                  "capability": f"{card.major}.{card.minor}",
                  "warning": kernel_warning(card.name, (card.major, card.minor), arch_list)}
        if match is not None:
            devices.append(DeviceInfo(**common, total_gib=match.total_gib, free_gib=match.free_gib,
                                      driver=match.driver, source="nvml",
                                      other_processes_gib=match.other_processes_gib, processes=match.processes))
        else:
            free, total = _torch_memory(card.index)
            devices.append(DeviceInfo(**common, total_gib=round(total / GIB, 2), free_gib=round(free / GIB, 2),
                                      source="torch"))
    return devices


def same_card(card: TorchGpu, nvml: NvmlGpu) -> bool:
    """Whether a torch device and an NVML card are the same GPU: by UUID, else by PCI address."""
    if card.uuid and nvml.uuid:
        return card.uuid == nvml.uuid
    return card.pci == nvml.pci


def _torch_gpus() -> list[TorchGpu]:
    """The CUDA devices torch can use (none on a CPU build or without a driver). Creates no CUDA context."""
    import torch

    if not torch.cuda.is_available():
        return []
    cards = []
    for i in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(i)
        uuid = str(getattr(props, "uuid", "") or "")
        pci = (getattr(props, "pci_domain_id", -1), getattr(props, "pci_bus_id", -1),
               getattr(props, "pci_device_id", -1))
        cards.append(TorchGpu(i, props.name, props.major, props.minor, normalise_uuid(uuid), pci))
    return cards


def has_kernels(capability: tuple[int, int], arch_list: list[str]) -> bool:
    """Whether a build with these architectures ("sm_61", "compute_90", ...) runs on a card of ``capability``:
    machine code for the same major version and an equal or lower minor runs as it is; PTX ("compute_XY") is
    compiled by the driver for any card of XY or newer. An empty list (unknown) counts as yes."""
    if not arch_list:
        return True
    for arch in arch_list:
        kind, _, number = arch.partition("_")
        if not number[:-1].isdigit():
            continue
        major, minor = int(number[:-1]), int(number[-1])
        if kind == "sm" and major == capability[0] and minor <= capability[1]:
            return True
        if kind == "compute" and (major, minor) <= capability:
            return True
    return False


def kernel_warning(name: str, capability: tuple[int, int], arch_list: list[str]) -> str:
    """"" when the installed PyTorch has kernels for the card, else what happens and which build to install."""
    if has_kernels(capability, arch_list):
        return ""
    sms = sorted(int(a[3:]) for a in arch_list if a.startswith("sm_") and a[3:].isdigit())
    covered = f" (it covers {sms[0] / 10:.1f} to {sms[-1] / 10:.1f})" if sms else ""
    return (f"This PyTorch has no kernels for the {name} (compute capability {capability[0]}.{capability[1]})"
            f"{covered}: training on it fails with \"no kernel image is available\". Install PyTorch's cu126 "
            "build, which covers 5.0 to 9.0 (on Windows: start the launcher with -CudaIndex cu126).")


def unused_card_warning(nvml_cards: list[NvmlGpu], torch_version: str, torch_cuda: str | None) -> str:
    """When NVML sees an NVIDIA card but torch has no CUDA device: why (a CPU build, or a CUDA build that the
    driver cannot run) and what to do; "" when there is no card."""
    if not nvml_cards:
        return ""
    card = nvml_cards[0]
    if torch_cuda is None:
        return (f"This computer's NVIDIA card ({card.name}) is not used: the installed PyTorch ({torch_version}) "
                "is its CPU-only build, so training runs on the processor. Install a CUDA build (on Windows the launcher does: "
                "start it again; elsewhere see the README).")
    return (f"This computer's NVIDIA card ({card.name}) is not used: PyTorch's CUDA {torch_cuda} build cannot "
            f"run on its driver ({card.driver or 'version unknown'}). Update the NVIDIA driver (528.33 or newer on Windows, 525.60.13 on "
            "Linux), then restart AllTalk GUI.")


def _torch_arch_list() -> list[str]:
    import torch

    try:
        return list(torch.cuda.get_arch_list())
    except Exception:  # a build without CUDA: nothing to compare
        return []


def _torch_build() -> tuple[str, str | None]:
    """(torch's version, the CUDA version it was built for or None for a CPU build)."""
    import torch

    return torch.__version__, torch.version.cuda


def _torch_memory(index: int) -> tuple[int, int]:
    """(free, total) bytes from the driver through torch: counts all processes, costs this one a CUDA context."""
    import torch

    return torch.cuda.mem_get_info(index)


# -- CPU ----------------------------------------------------------------------------------------------------------

def _cpu_device() -> DeviceInfo:
    import psutil

    vm = psutil.virtual_memory()
    return DeviceInfo(kind="cpu", index=0, name=cpu_name(), total_gib=round(vm.total / GIB, 2),
                      free_gib=round(vm.available / GIB, 2), bf16=True, cores=cpu_cores(), source="psutil")


def cpu_cores() -> int:
    """The cores this process may run on (its affinity, e.g. a container's share), not all the machine has."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def cpu_name() -> str:
    """The processor's model name (e.g. "AMD EPYC"), for the device list and benchmark records."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine() or "CPU"
