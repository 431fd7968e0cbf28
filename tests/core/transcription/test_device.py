"""Transcription's device choice on a machine without a GPU (the CPU twin of its CUDA branch, docs/cuda_only.md):
auto falls back to the CPU, cuda is refused with what to use, an unknown device is named; the default model follows
the device."""

from __future__ import annotations

import pytest

from alltalk_gui.core.transcription.factory import default_model, resolve_device
from alltalk_gui.core.transcription.types import TranscriptionError


def test_without_a_gpu_auto_is_the_cpu_and_cuda_is_refused():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert resolve_device("auto") == "cpu" and resolve_device("cpu") == "cpu"
    with pytest.raises(TranscriptionError, match="No CUDA GPU is available here: transcribe on the CPU"):
        resolve_device("cuda")


def test_an_unknown_device_is_named():
    with pytest.raises(TranscriptionError, match="Unknown device 'tpu'; use auto, cpu, cuda"):
        resolve_device("tpu")


def test_the_default_model_follows_the_device():
    assert default_model("faster-whisper", "cuda") == "turbo" and default_model("faster-whisper", "cpu") == "small"
