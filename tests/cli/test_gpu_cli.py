"""``alltalk-gui gpu``: on this machine (no GPU) the real command states the CPU training time; with GPUs (as
NVML describes them; see tests/core/machine/test_gpu.py for the fake driver) each card is listed with the other
programs using it, in the table and in --json."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from alltalk_gui.cli import train_cmds
from alltalk_gui.core.machine import gpu
from alltalk_gui.core.machine.gpu import DeviceInfo, GpuProcess

CARDS = [
    DeviceInfo(kind="cuda", index=0, name="NVIDIA GeForce RTX 3060", total_gib=12.0, free_gib=9.8, bf16=True,
               capability="8.6", driver="550.54.14", source="nvml", other_processes_gib=1.9,
               processes=(GpuProcess(4242, "chrome", 1.2), GpuProcess(4343, "", None))),
    DeviceInfo(kind="cuda", index=1, name="NVIDIA GeForce GTX 1080", total_gib=8.0, free_gib=7.9, bf16=False,
               capability="6.1", source="torch"),
    DeviceInfo(kind="cpu", index=0, name="Test CPU", total_gib=32.0, free_gib=20.0, bf16=True, cores=8,
               source="psutil"),
]


def test_on_this_machine_the_cpu_is_listed_with_its_training_time():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    result = subprocess.run([sys.executable, "-m", "alltalk_gui", "gpu"], check=False, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    first, cpu = result.stdout.splitlines()
    assert first.startswith("No CUDA GPU found: training runs on the CPU, about ")
    assert first.endswith(" hours for 10 epochs of 6 minutes of audio on "
                          f"{gpu.cpu_cores()} core{'s' if gpu.cpu_cores() != 1 else ''}.")
    assert cpu.startswith("cpu ")


def test_each_gpu_is_listed_with_the_other_programs_using_it(monkeypatch, capsys):
    monkeypatch.setattr(gpu, "list_devices", lambda: CARDS)
    assert train_cmds.cmd_gpu(argparse.Namespace(json=False)) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("cuda:0  NVIDIA GeForce RTX 3060  9.8 / 12.0 GiB free  compute 8.6  bf16 yes  "
                        "driver 550.54.14")
    assert lines[1].strip() == "1.9 GiB used by 2 other programs: chrome, pid 4343"
    assert lines[2].split() == ["chrome", "(pid", "4242)", "1.2", "GiB"]
    assert lines[3].split() == ["pid", "4343", "amount", "not", "reported"]
    assert lines[4].startswith("cuda:1  NVIDIA GeForce GTX 1080  7.9 / 8.0 GiB free  compute 6.1  bf16 no")
    assert lines[5].strip() == "0.1 GiB in use"
    assert lines[6].startswith("cpu    Test CPU  8 cores")
    assert not any("No CUDA GPU" in line for line in lines)


def test_the_json_listing_carries_the_processes(monkeypatch, capsys):
    monkeypatch.setattr(gpu, "list_devices", lambda: CARDS)
    assert train_cmds.cmd_gpu(argparse.Namespace(json=True)) == 0
    listing = json.loads(capsys.readouterr().out)
    assert listing[0]["processes"] == [{"pid": 4242, "name": "chrome", "used_gib": 1.2},
                                       {"pid": 4343, "name": "", "used_gib": None}]
    assert listing[0]["other_processes_gib"] == 1.9 and listing[1]["source"] == "torch"
    assert [DeviceInfo.from_dict(d) for d in listing] == CARDS
