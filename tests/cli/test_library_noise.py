"""The app's processes do not print bitsandbytes' advice to download an optional CPU kernel from the Hub ("pip
install kernels"), which it gives at import on CPUs with AVX-512 bf16 and which nobody can act on (the app never
downloads code; bitsandbytes falls back to its own kernel)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import logging
import alltalk_gui
import bitsandbytes  # the import that warns, where the CPU has AVX-512 bf16
print(logging.getLogger("bitsandbytes.backends.cpu.ops").isEnabledFor(logging.WARNING))
"""


def test_bitsandbytes_optional_kernel_warning_is_not_printed():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
    assert "pip install kernels" not in done.stderr and "gemm_4bit_forward" not in done.stderr
