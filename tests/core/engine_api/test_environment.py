"""An engine's own environment, layered over the app's: made with progress from pinned packages (here a wheel
made by the test, found through ALLTALK_GUI_ENGINE_PIP_ARGS: no network), its own packages win over the app's
while the app's stay importable, its stamp says when it must be made again, and a failure, a cancel or the
frozen app leave nothing behind."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from alltalk_gui.core.engine_api import environment
from alltalk_gui.core.engine_api.environment import EngineEnvironment, EngineEnvironmentError


def make_wheel(folder: Path, name: str, version: str, module: str, source: str) -> Path:
    """A minimal pure-Python wheel of one module (what pip installs from a local folder)."""
    dist = f"{name.replace('-', '_')}-{version}"
    files = {f"{module}.py": source.encode(),
             f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
             f"{dist}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist}.dist-info/RECORD,,")
    wheel = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
        z.writestr(f"{dist}.dist-info/RECORD", "\n".join(record) + "\n")
    return wheel


# The app has six 1.x; the environment pins a "six" of its own, which must win there (as Parler's transformers
# 4.46.1 wins over the app's 5.x).
SIX = EngineEnvironment(name="probe-1", requirements=("six==0.0.1",), imports=("six", "yaml"),
                        why="It needs another six.", download_size="a few kB")


@pytest.fixture()
def wheels(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "wheels"
    folder.mkdir()
    make_wheel(folder, "six", "0.0.1", "six", "WHO = 'the engine environment'\n")
    monkeypatch.setenv(environment.ROOT_ENV, str(tmp_path / "envs"))
    monkeypatch.setenv(environment.PIP_ARGS_ENV, f"--no-index --find-links {folder}")
    return folder


def run_in(python: Path, code: str) -> str:
    return subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def made(root: Path) -> list[str]:
    """What is in the environments' folder, less the makers' lock files."""
    return sorted(p.name for p in root.iterdir() if not p.name.endswith(environment.LOCK_SUFFIX))


def test_made_once_with_progress_its_packages_first_the_apps_after(wheels, tmp_path):
    lines: list[str] = []
    assert not environment.is_ready(SIX)
    python = environment.create(SIX, progress=lines.append)
    assert python == environment.interpreter(SIX) and python.is_file()
    assert environment.environment_dir(SIX) == tmp_path / "envs" / "probe-1"
    assert environment.is_ready(SIX)
    assert any("Installing 1 packages: six==0.0.1" in line for line in lines) and lines[-1] == "The environment is ready."
    # The engine's six; the app's PyYAML and the app itself, from the app's environment.
    assert run_in(python, "import six, importlib.metadata as m; print(six.WHO, m.version('six'))") == \
        "the engine environment 0.0.1"
    assert run_in(python, "import yaml, alltalk_gui; print(yaml.__file__.startswith(r'%s'))"
                  % environment.app_site_dirs()[0]) == "True"
    assert run_in(python, f"import os; print(os.environ['{environment.APP_PREFIX_ENV}'])") == sys.prefix
    import six

    assert six.__version__.startswith("1.")  # the app's own is untouched
    # Ready: a second call makes nothing.
    again: list[str] = []
    assert environment.create(SIX, progress=again.append) == python and again == []


def test_other_pins_make_it_stale_and_python_for_names_what_to_do(wheels):
    environment.create(SIX)

    class Engine:
        name, title = "probe", "Probe TTS"
        environment = SIX

    assert environment.python_for(Engine()) == str(environment.interpreter(SIX))
    Engine.environment = EngineEnvironment(name="probe-1", requirements=("six==0.0.2",), imports=("six",),
                                           why="It needs another six.", download_size="a few kB")
    assert not environment.is_ready(Engine.environment)
    with pytest.raises(EngineEnvironmentError, match=r"(?s)Probe TTS runs in an environment of its own.*"
                                                     r"alltalk-gui engine-env probe"):
        environment.python_for(Engine())

    class Plain:
        environment = None

    assert environment.python_for(Plain()) == sys.executable


def test_a_package_that_cannot_be_had_leaves_nothing(wheels):
    missing = EngineEnvironment(name="probe-2", requirements=("six==9.9.9",), imports=("six",), why="",
                                download_size="")
    with pytest.raises(EngineEnvironmentError, match=r"(?s)failed \(exit code 1\).*six==9.9.9"):
        environment.create(missing)
    assert not environment.environment_dir(missing).exists()
    assert made(environment.environments_root()) == []


def test_a_failed_import_check_leaves_nothing(wheels):
    broken = EngineEnvironment(name="probe-3", requirements=("six==0.0.1",), imports=("six", "no_such_module"),
                               why="", download_size="")
    with pytest.raises(EngineEnvironmentError, match="No module named 'no_such_module'"):
        environment.create(broken)
    assert not environment.environment_dir(broken).exists()


def test_cancel_leaves_nothing(wheels):
    with pytest.raises(EngineEnvironmentError, match="Cancelled"):
        environment.create(SIX, cancelled=lambda: True)
    assert made(environment.environments_root()) == []


def test_two_makers_at_once_make_it_once(wheels):
    """Another window or the CLI making the same environment waits for the first, then finds it ready (before, the
    second removed the first one's half-made folder)."""
    import threading

    lines: list[list[str]] = [[], []]
    pythons: list[Path | None] = [None, None]
    start = threading.Barrier(2)

    def make(i: int) -> None:
        start.wait()
        pythons[i] = environment.create(SIX, progress=lines[i].append)

    threads = [threading.Thread(target=make, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert pythons[0] == pythons[1] == environment.interpreter(SIX) and environment.is_ready(SIX)
    installs = [i for i in range(2) if any(line.startswith("Installing") for line in lines[i])]
    assert len(installs) == 1  # one maker
    waited = lines[1 - installs[0]]
    assert waited[0].startswith("Waiting for another AllTalk GUI process") and waited[-1] == "The environment is ready."
    assert made(environment.environments_root()) == ["probe-1"]


def test_a_cancel_while_another_maker_holds_it_ends_the_wait(wheels):
    from filelock import FileLock

    folder = environment.environment_dir(SIX)
    folder.parent.mkdir(parents=True)
    polls = []
    with FileLock(str(folder.with_name(folder.name + environment.LOCK_SUFFIX))):
        with pytest.raises(EngineEnvironmentError, match="Cancelled while waiting"):
            environment.create(SIX, cancelled=lambda: polls.append(1) or len(polls) >= 2)
    assert made(environment.environments_root()) == [] and len(polls) == 2


def test_the_frozen_app_says_it_cannot(wheels, monkeypatch):
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    with pytest.raises(EngineEnvironmentError, match="packaged \\(frozen\\) app cannot make"):
        environment.create(SIX)
    assert not environment.environments_root().exists()


def test_the_default_place_is_inside_the_apps_environment(monkeypatch):
    monkeypatch.delenv(environment.ROOT_ENV, raising=False)
    monkeypatch.delenv(environment.APP_PREFIX_ENV, raising=False)
    assert environment.environment_dir(SIX) == Path(sys.prefix) / "engine-envs" / "probe-1"
