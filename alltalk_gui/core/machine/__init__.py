"""This machine: GPUs (NVML and torch), memory statistics and CPU training-time estimates."""
