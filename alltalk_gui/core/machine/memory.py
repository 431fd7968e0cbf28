"""Memory statistics as plain dicts (GiB), for memory-sample events and benchmarks.

Process RSS comes from psutil; CUDA numbers from torch's caching allocator (what the process holds) and, when
NVML is available, the whole-device view (what every process on the GPU holds together).
"""

from __future__ import annotations

import os
import sys

GIB = 1024**3
# What the engines' memory estimates add to the tensors they count (measured 2026-11-22..26, both engines):
# the CUDA caching allocator's reserve above the tensors it holds, with expandable segments (0.6-2.9 % on the H100,
# every profile), and a training process's resident memory before any model is built (0.7-0.82 GiB on the CPU).
ALLOCATOR_RESERVE = 0.02
CPU_PROCESS_GIB = 0.8
# cuBLAS's workspace, which torch takes from the caching allocator (counted as allocated): 32 MiB on Hopper cards
# (torch's default CUBLAS_WORKSPACE_CONFIG there, ":4096:8"; 8 MiB on older ones). Every Low run of XTTS (H100 and
# H200, 1 and 8 clips a micro-batch) allocated 0.04-0.05 GiB above its counted tensors, whatever the micro-batch.
CUBLAS_WORKSPACE_GIB = 32 / 1024
ALLOC_CONF_NAMES = ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")  # torch 2.9's name, and the older one


def use_expandable_segments() -> str:
    """Ask the CUDA caching allocator for growable segments: less fragmentation when batches of varying clip
    lengths come and go. It reads the setting when it starts (at the first CUDA allocation), so call this before
    anything touches the GPU; a user's own setting, under either name, wins. Returns the setting in effect."""
    for name in ALLOC_CONF_NAMES:
        if name in os.environ:
            return os.environ[name]
    os.environ[ALLOC_CONF_NAMES[0]] = "expandable_segments:True"
    return os.environ[ALLOC_CONF_NAMES[0]]


def held_at_peak(gradients: float, activations: float, accumulates: bool) -> float:
    """Of a step's gradients and activations, what is held at its peak: with gradient accumulation both (the
    earlier micro-batches' gradients stay while the next one saves its activations); without, the larger of the
    two (the backward pass frees activations as it makes gradients)."""
    return gradients + activations if accumulates else max(gradients, activations)


def peak_rss_gib() -> float:
    """Peak resident set size of this process since it started (GiB)."""
    if sys.platform == "win32":
        import psutil

        return psutil.Process().memory_info().peak_wset / GIB
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # ru_maxrss is in bytes on macOS, kibibytes on Linux.
    return peak / GIB if sys.platform == "darwin" else peak * 1024 / GIB


def memory_stats(device: "str | object | None" = None, reset_peak: bool = False) -> dict[str, float]:
    """Current memory use in GiB.

    Keys: ``rss`` and ``rss_peak`` always; for a CUDA device also ``cuda_allocated``, ``cuda_reserved``,
    ``cuda_peak_allocated`` and ``cuda_peak_reserved`` (since the last reset) and, with NVML, ``device_used`` / ``device_total``.
    ``reset_peak`` starts a new CUDA peak window after reading it.
    """
    import psutil

    stats = {"rss": psutil.Process(os.getpid()).memory_info().rss / GIB, "rss_peak": peak_rss_gib()}
    if device is None or "cuda" not in str(device):
        return stats
    import torch

    dev = torch.device(device)
    stats["cuda_allocated"] = torch.cuda.memory_allocated(dev) / GIB
    stats["cuda_reserved"] = torch.cuda.memory_reserved(dev) / GIB
    stats["cuda_peak_allocated"] = torch.cuda.max_memory_allocated(dev) / GIB
    stats["cuda_peak_reserved"] = torch.cuda.max_memory_reserved(dev) / GIB
    if reset_peak:
        torch.cuda.reset_peak_memory_stats(dev)
    try:
        free, total = torch.cuda.mem_get_info(dev)
        stats["device_used"] = (total - free) / GIB
        stats["device_total"] = total / GIB
    except RuntimeError:
        pass
    return {k: round(v, 4) for k, v in stats.items()}
