"""What the NVIDIA driver says about each GPU, through NVML (the ``pynvml`` module of nvidia-ml-py): total, free and
used memory, the driver version, and the other processes holding memory on the card.

NVML is preferred to torch for two reasons: it answers without creating a CUDA context (``torch.cuda.mem_get_info``
creates one, a few hundred MiB on the card it asks about), and it can say which programs hold the memory, which
torch cannot. It is missing on machines without the NVIDIA driver (``NVMLError_LibraryNotFound``,
``NVMLError_DriverNotLoaded``) or without the module: :func:`read_gpus` then returns None and
:mod:`alltalk_gui.core.machine.gpu` falls back to torch.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

GIB = 1024**3


@dataclass(frozen=True)
class GpuProcess:
    """A process holding memory on a GPU."""

    pid: int
    name: str  # the program's name; "" when this process cannot see it (another user, another container)
    used_gib: float | None  # None when the driver does not report it (Windows WDDM, some containers)

    @property
    def label(self) -> str:
        """ "chrome", or "pid 4343" when the name is unknown. """
        return self.name or f"pid {self.pid}"

    @property
    def label_with_pid(self) -> str:
        """ "chrome (pid 4242)", or "pid 4343" when the name is unknown. """
        return f"{self.name} (pid {self.pid})" if self.name else f"pid {self.pid}"


@dataclass(frozen=True)
class NvmlGpu:
    """One GPU as NVML sees it. ``uuid`` and ``pci`` identify it to torch (see :func:`same_card`)."""

    uuid: str  # lower case, without NVML's "GPU-" prefix (torch's spelling)
    pci: tuple[int, int, int]  # (domain, bus, device)
    name: str
    total_gib: float
    free_gib: float
    driver: str
    processes: tuple[GpuProcess, ...]  # other processes than this one, most memory first
    other_processes_gib: float  # memory those processes hold (see _other_use)


def read_gpus() -> list[NvmlGpu] | None:
    """Every GPU the driver knows (all of them: NVML ignores CUDA_VISIBLE_DEVICES); None without NVML."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except (pynvml.NVMLError, OSError):  # no driver, or no libnvidia-ml
        return None
    try:
        driver = _text(pynvml.nvmlSystemGetDriverVersion())
        return [_read(pynvml, pynvml.nvmlDeviceGetHandleByIndex(i), driver)
                for i in range(pynvml.nvmlDeviceGetCount())]
    except pynvml.NVMLError:  # a card that stopped answering (fallen off the bus, reset): let torch describe it
        return None
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass


def normalise_uuid(uuid: str) -> str:
    """NVML says "GPU-6b4c...", torch says "6b4c...": compare them without the prefix, in lower case."""
    uuid = uuid.strip().lower()
    return uuid.removeprefix("gpu-")


def _read(pynvml, handle, driver: str) -> NvmlGpu:
    memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
    pci = pynvml.nvmlDeviceGetPciInfo(handle)
    own, others = _processes(pynvml, handle)
    used = memory.total - memory.free
    return NvmlGpu(
        uuid=normalise_uuid(_text(pynvml.nvmlDeviceGetUUID(handle))), pci=(pci.domain, pci.bus, pci.device),
        name=_text(pynvml.nvmlDeviceGetName(handle)), total_gib=round(memory.total / GIB, 2),
        free_gib=round(memory.free / GIB, 2), driver=driver, processes=others,
        other_processes_gib=round(_other_use(others, used, own) / GIB, 2),
    )


def _processes(pynvml, handle) -> tuple[int, tuple[GpuProcess, ...]]:
    """Bytes this process holds on the card, and the other processes (compute and graphics, each pid once)."""
    used_by_pid: dict[int, int | None] = {}
    for query in (pynvml.nvmlDeviceGetComputeRunningProcesses, pynvml.nvmlDeviceGetGraphicsRunningProcesses):
        try:
            entries = query(handle)
        except pynvml.NVMLError:  # NotSupported on some cards and drivers
            continue
        for entry in entries:
            # A program that both computes and draws is in both lists with the same per-card figure: keep one.
            known = [b for b in (used_by_pid.get(entry.pid), entry.usedGpuMemory) if b is not None]
            used_by_pid[entry.pid] = max(known) if known else None
    me = os.getpid()
    own = used_by_pid.pop(me, None) or 0
    others = [GpuProcess(pid, _process_name(pid), None if b is None else round(b / GIB, 2))
              for pid, b in used_by_pid.items()]
    others.sort(key=lambda p: -(p.used_gib or 0.0))
    return own, tuple(others)


def _other_use(others: tuple[GpuProcess, ...], used_bytes: int, own_bytes: int) -> float:
    """Bytes other processes hold: the sum of their figures when the driver gives them all; otherwise (some
    figures missing, or processes this container cannot see) what is in use less this process's share, which
    also counts the driver's own reserve."""
    if others and all(p.used_gib is not None for p in others):
        return sum(p.used_gib for p in others) * GIB
    return max(used_bytes - own_bytes, 0)


def _process_name(pid: int) -> str:
    import psutil

    try:
        return psutil.Process(pid).name()
    except (psutil.Error, OSError):  # gone, another user's, or a pid from another namespace
        return ""


def _text(value: str | bytes) -> str:
    """Older pynvml versions return bytes."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
