"""How long a take needs, in words, and whether it runs on a GPU (where it needs seconds whatever the settings).

Whether there is a GPU is asked of NVML, not torch: the Preview page must not import torch to show an estimate.
"""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def gpu_present() -> bool:
    """Whether NVML sees an NVIDIA GPU (asked once; the preview then runs on it)."""
    from alltalk_gui.core.machine.nvml import read_gpus

    return bool(read_gpus())  # None without NVML (no driver): no GPU


def duration_words(seconds: float) -> str:
    """"about 40 s", "about 6 min"."""
    if seconds < 90:
        return f"about {max(5, round(seconds / 5) * 5):.0f} s"
    return f"about {seconds / 60:.0f} min" if seconds < 5400 else f"about {seconds / 3600:.1f} h"
