"""The Windows install helper end to end (packaging/windows/install_helper), with pip and nvidia-smi recorded.

The acceptance case of issue #19 walks first: José, whose user folder is ``C:\\Users\\José``, with a GTX 1080
and an old driver, gets a working install and one sentence naming the one thing to fix (the driver).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.packaging.conftest import ROOT
from tests.packaging.windows_helper_fakes import FakeCommands, make_venv, put_torch, recorded_gpus

import install_helper  # noqa: E402 (path set by windows_helper_fakes)
from install_helper import cuda, install, plan as planning, stamp, venv  # noqa: E402

JOSE_ROOT = "C:\\Users\\José\\Downloads\\AllTalk GUI"
HELPER = ROOT / "packaging" / "windows" / "install_helper"


def jose_facts(root: str = JOSE_ROOT, os_name: str = "nt", **changes) -> planning.Facts:
    """José's computer: Windows, python.org's 64-bit Python 3.11, a GTX 1080 on driver 457.51, VC++ 14.42."""
    facts = dict(root=root, os_name=os_name, python_version=(3, 11, 9), pointer_bytes=8,
                 python_executable="C:\\Users\\José\\AppData\\Local\\Programs\\Python\\Python311\\python.exe",
                 gpus=tuple(recorded_gpus("gtx1080_driver_457")), vc_runtime=(14, 42, 34433),
                 long_paths_enabled=False)
    return planning.Facts(**{**facts, **changes})


def checkout(tmp_path: Path, name: str = "AllTalk GUI [2] & co") -> Path:
    """A checkout (pyproject.toml is all the helper reads) under a user folder named José."""
    root = tmp_path / "Users" / "José" / name
    root.mkdir(parents=True)
    shutil.copy2(ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


def test_jose_with_a_gtx_1080_and_an_old_driver_gets_cu126_and_one_thing_to_fix():
    plan = planning.make_plan(jose_facts(), "2.9.1")
    assert plan.problems == []  # nothing stops the install
    assert plan.flavour == "cu126" and plan.pins == ["torch==2.9.1+cu126", "torchaudio==2.9.1+cu126"]
    assert plan.index_url == "https://download.pytorch.org/whl/cu126"
    assert plan.warnings == [
        "Update the NVIDIA driver to version 528.33 or newer (this computer has 457.51), from "
        "https://www.nvidia.com/Download/index.aspx: until then PyTorch cannot use the GeForce GTX 1080 and "
        "AllTalk GUI works on the CPU, very slowly. No reinstall is needed afterwards."]


def test_jose_install_walks_every_step_with_his_path_unchanged(tmp_path):
    root = checkout(tmp_path)
    state = tmp_path / "Users" / "José" / "AppData" / "Local" / "AllTalkGUI"
    commands = FakeCommands(pip_version="24.0")
    # José's Windows facts, with this test's real folder (a pytest temporary one, deeper than his: its length is
    # not what this test is about).
    facts = jose_facts(root=str(root), long_paths_enabled=True)
    code = install_helper.main(["install", "--state", str(state), "--root", str(root)], commands, facts)
    result = json.loads((state / "install-result.json").read_text(encoding="utf-8-sig"))
    assert code == 0 and result["ok"], result
    assert result["warnings"][0].startswith("Update the NVIDIA driver to version 528.33")

    venv_dir = root / ".venv"
    python = str(venv_dir / "bin" / "python")
    assert commands.commands() == [
        [sys.executable, "-m", "venv", str(venv_dir)],
        [python, "-m", "pip", "install", "--upgrade", "pip", "--use-feature=truststore"],  # pip 24.0: not default
        [python, "-m", "pip", "install", "torch==2.9.1+cu126", "torchaudio==2.9.1+cu126",
         "--extra-index-url", "https://download.pytorch.org/whl/cu126"],
        # "." with the checkout as working folder: the "[2]" in its name is no extra.
        [python, "-m", "pip", "install", "-e", ".[judge]"],
        [python, "-m", "pip", "install", "--no-deps", "-r", "packaging/no_deps_requirements.txt"],
        [python, "-m", "pip", "install", "--no-deps", "--only-binary", ":all:", "-r",
         "packaging/judge_requirements.txt"],
    ]
    assert all(cwd == root for _, cwd in commands.streamed)
    assert "José" in commands.commands()[0][3]  # the path goes through as it is, no "Jos?"
    assert stamp.read(venv_dir) == stamp.Stamp(stamp.pyproject_sha256(root), "cu126", False, "2.9.1+cu126")
    log = (state / "install.log").read_text(encoding="utf-8")
    assert "[3/5] Installing PyTorch 2.9.1+cu126" in log and "Note: Update the NVIDIA driver" in log
    # The next start: nothing to do.
    assert install_helper.main(["check", "--state", str(state), "--root", str(root)], commands, facts) == 0


def test_the_helper_runs_as_the_launcher_starts_it(tmp_path):
    """`python <checkout>\\packaging\\windows\\install_helper check` from a folder with a space, é, & and [ ]."""
    root = checkout(tmp_path)
    shutil.copytree(HELPER, root / "packaging" / "windows" / "install_helper",
                    ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run([sys.executable, str(root / "packaging" / "windows" / "install_helper"), "check",
                           "--state", str(tmp_path / "state")], capture_output=True, text=True, timeout=120)
    assert done.returncode == install_helper.EXIT_NEEDS_INSTALL, done.stdout + done.stderr


def test_a_problem_to_fix_first_stops_before_any_download(tmp_path):
    root = checkout(tmp_path)
    commands = FakeCommands()
    facts = jose_facts(root=str(root), pointer_bytes=4)
    code = install_helper.main(["install", "--state", str(tmp_path / "s"), "--root", str(root)], commands, facts)
    result = json.loads((tmp_path / "s" / "install-result.json").read_text(encoding="utf-8-sig"))
    assert code == install_helper.EXIT_FIX_FIRST and not result["ok"]
    assert "32-bit" in result["message"] and commands.streamed == []


def test_windows_only_checks_apply_to_windows_paths():
    deep = "C:\\Users\\José\\" + "Documents\\Projekte und Sachen\\" * 4 + "AllTalk GUI"
    plan = planning.make_plan(jose_facts(root=deep, vc_runtime=(14, 38, 33130)), "2.9.1")
    assert [p.split(" ")[0:3] for p in plan.problems] == [["The", "AllTalk", "GUI"], ["PyTorch", "needs", "the"]]


def test_changing_the_build_replaces_torch(tmp_path):
    """An environment installed for the CPU gets the cu126 build when a GTX 1080 appears: the pin carries the
    local version, so pip cannot keep 2.9.1+cpu."""
    root = checkout(tmp_path)
    make_venv(root / ".venv")
    put_torch(root / ".venv", "2.9.1+cpu")
    stamp.write(root / ".venv", stamp.Stamp(stamp.pyproject_sha256(root), "cpu", False, "2.9.1+cpu"))
    commands = FakeCommands(pip_version="25.3")
    facts = jose_facts(root=str(root), os_name="posix")
    args = ["--state", str(tmp_path / "s"), "--root", str(root)]
    assert install_helper.main(["check", *args], commands, facts) == install_helper.EXIT_NEEDS_INSTALL
    assert install_helper.main(["install", *args], commands, facts) == 0
    assert stamp.installed_version(root / ".venv") == "2.9.1+cu126"
    assert [c for c in commands.commands() if "-m" in c and "venv" in c] == []  # the venv was kept


def test_a_forced_cpu_build_is_kept_on_later_starts(tmp_path):
    root = checkout(tmp_path)
    commands = FakeCommands(pip_version="25.3")
    facts = jose_facts(root=str(root), os_name="posix", gpus=tuple(recorded_gpus("rtx4090_driver_581")))
    args = ["--state", str(tmp_path / "s"), "--root", str(root)]
    assert install_helper.main(["install", "--cpu", *args], commands, facts) == 0
    assert stamp.read(root / ".venv").forced and stamp.installed_version(root / ".venv") == "2.9.1+cpu"
    assert install_helper.main(["check", *args], commands, facts) == 0  # no -Cpu this time: still the CPU build
    assert install_helper.main(["check", "--cuda", "https://download.pytorch.org/whl/cu128", *args], commands,
                               facts) == install_helper.EXIT_NEEDS_INSTALL


def test_the_old_launchers_one_line_stamp_means_install_again(tmp_path):
    root = checkout(tmp_path)
    make_venv(root / ".venv")
    (root / ".venv" / stamp.STAMP_FILE).write_text("ABC123 cuda:https://download.pytorch.org/whl/cu128\n")
    assert stamp.read(root / ".venv") is None
    facts = jose_facts(root=str(root), os_name="posix")
    assert install_helper.main(["check", "--root", str(root)], FakeCommands(), facts) == 10


@pytest.mark.parametrize("damage, reason", [
    ("no_cfg", "it has no pyvenv.cfg"),
    ("base_python_removed", "is no longer installed"),
    ("no_python", "it has no python"),
])
def test_a_half_made_venv_is_made_again(tmp_path, damage, reason):
    root = checkout(tmp_path)
    env_dir = root / ".venv"
    make_venv(env_dir, home=str(tmp_path / "Python311") if damage == "base_python_removed" else
              str(Path(sys.executable).parent))
    if damage == "no_cfg":
        (env_dir / "pyvenv.cfg").unlink()
    if damage == "no_python":
        (env_dir / "bin" / "python").unlink()
    (env_dir / "leftover.txt").write_text("from the interrupted install")
    state = venv.inspect(env_dir, FakeCommands().capture, "posix")
    assert state.kind == "broken" and reason in state.reason

    commands = FakeCommands(pip_version="25.3")
    facts = jose_facts(root=str(root), os_name="posix")
    assert install_helper.main(["install", "--state", str(tmp_path / "s"), "--root", str(root)], commands, facts) == 0
    assert commands.commands()[0] == [sys.executable, "-m", "venv", str(env_dir)]
    assert not (env_dir / "leftover.txt").exists()
    assert "The environment cannot be used: " in (tmp_path / "s" / "install.log").read_text(encoding="utf-8")


def test_a_real_venv_is_whole():
    """This test run's own environment passes the same inspection (its Python really starts and has pip)."""
    prefix = Path(sys.prefix)
    if prefix == Path(sys.base_prefix):
        pytest.skip("not running in a venv")
    assert venv.inspect(prefix, install.Commands().capture, "posix") == venv.VenvState("ok")


def test_a_second_install_waits_its_turn(tmp_path):
    root = checkout(tmp_path)
    state = tmp_path / "s"
    commands = FakeCommands()
    with install.locked(state):
        code = install_helper.main(["install", "--state", str(state), "--root", str(root)], commands,
                                   jose_facts(root=str(root), os_name="posix"))
    assert code == install_helper.EXIT_RUNNING and commands.streamed == []
    assert "already being installed" in json.loads((state / "install-result.json").read_text("utf-8-sig"))["message"]


def test_a_failed_step_is_named_with_the_log(tmp_path):
    root = checkout(tmp_path)
    state = tmp_path / "s"
    commands = FakeCommands(pip_version="25.3", fail="torch==")
    code = install_helper.main(["install", "--state", str(state), "--root", str(root)], commands,
                               jose_facts(root=str(root), os_name="posix"))
    result = json.loads((state / "install-result.json").read_text("utf-8-sig"))
    assert code == install_helper.EXIT_FAILED
    assert result["message"] == (f"Installing PyTorch failed (exit status 1). The end of the log is below; the whole "
                                 f"log is {state / 'install.log'}.")
    assert stamp.read(root / ".venv") is None  # not stamped: the next start tries again


def test_child_processes_get_utf8_and_no_foreign_python_path():
    env = install.child_environment({"PYTHONPATH": "C:\\elsewhere", "PYTHONHOME": "C:\\Python27", "PATH": "x"})
    assert env == {"PATH": "x", "PYTHONUTF8": "1", "PYTHONIOENCODING": "utf-8", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                   "PIP_NO_INPUT": "1"}


def test_torch_version_comes_from_pyproject():
    assert stamp.torch_version(ROOT) == "2.9.1"
    assert cuda.choose([]).flavour == "cpu"


def test_an_unknown_build_is_refused_with_a_message(tmp_path):
    root = checkout(tmp_path)
    code = install_helper.main(["install", "--cuda", "cu118", "--state", str(tmp_path / "s"), "--root", str(root)],
                               FakeCommands(), jose_facts(root=str(root), os_name="posix"))
    result = json.loads((tmp_path / "s" / "install-result.json").read_text("utf-8-sig"))
    assert code == install_helper.EXIT_FIX_FIRST and result["message"] == (
        "Unknown PyTorch build 'cu118'; use cpu, cu126 or cu128.")


@pytest.mark.slow
def test_a_real_venv_made_by_the_helper_in_an_odd_folder_is_whole(tmp_path):
    """The helper's own command runner makes a real venv (with pip, from Python's bundled wheel: offline) under a
    folder with a space, é, & and [ ], logs its output, and inspects it as whole; then damages it as a removed
    base Python would, and sees that."""
    env_dir = tmp_path / "José" / "AllTalk GUI [2] & co" / ".venv"
    env_dir.parent.mkdir(parents=True)
    base = getattr(sys, "_base_executable", sys.executable)
    commands = install.Commands()
    log_path = tmp_path / "install.log"
    with open(log_path, "w", encoding="utf-8") as log:
        install.run(commands, venv.create_command(env_dir, base), env_dir.parent, log, "Creating the environment")
    assert "> " in log_path.read_text(encoding="utf-8") and "(exit status 0" in log_path.read_text(encoding="utf-8")
    assert venv.inspect(env_dir, commands.capture, "posix") == venv.VenvState("ok")
    cfg = (env_dir / "pyvenv.cfg").read_text(encoding="utf-8")
    (env_dir / "pyvenv.cfg").write_text(cfg.replace("home = ", f"home = {tmp_path / 'gone'}/"), encoding="utf-8")
    assert venv.inspect(env_dir, commands.capture, "posix").kind == "broken"
