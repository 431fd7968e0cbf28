"""Preview and export of a voice trained on CUDA, through the command line as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import soundfile as sf

from tests.gpu.kit import assert_trained, train_cli


@pytest.fixture(scope="module")
def cuda_voice(gpu_project, tiny_gpu):
    events = train_cli(gpu_project, tiny_gpu, "voice", "--profile", "low",
                       settings=("max_steps=4", "memory_interval_s=0", "min_conditioning_seconds=1",
                                 "max_conditioning_seconds=2", "lr=1e-4", "save_every_steps=2"))
    assert_trained(events, steps=4)
    return gpu_project, tiny_gpu


def _cli(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "alltalk_gui", *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def test_preview_on_cuda_from_a_cuda_checkpoint_with_the_base_model(cuda_voice, tmp_path):
    project, base = cuda_voice
    out = tmp_path / "hello.wav"
    _cli("preview", str(project), "--text", "Hello from the graphics card.", "--out", str(out), "--run", "voice",
         "--base-model", str(base), "--device", "cuda", "--ab")
    for wav in (out, tmp_path / "hello_base.wav"):
        audio, rate = sf.read(wav)
        assert rate > 0 and len(audio) > rate // 10 and np.isfinite(audio).all(), wav


@pytest.mark.parametrize("fmt", ["alltalk", "coqui"])
def test_export_of_a_cuda_checkpoint_loads_on_the_cpu(cuda_voice, tmp_path, fmt):
    project, base = cuda_voice
    _cli("export", str(project), "--format", fmt, "--out", str(tmp_path), "--name", "gpu_voice", "--run", "voice",
         "--base-model", str(base))
    folder = tmp_path / "gpu_voice"
    assert (folder / "model.pth").is_file() and (folder / "config.json").is_file()
    import torch

    # Saved from CUDA tensors, the export must still load on a machine without a GPU.
    state = torch.load(folder / "model.pth", map_location="cpu", weights_only=True)
    tensors = state.get("model", state)
    assert all(t.device.type == "cpu" for t in tensors.values() if hasattr(t, "device"))
    json.loads((folder / "config.json").read_text())
