"""Smoke test for the frozen (PyInstaller) app: does the built folder really start?

Usage: ``python packaging/smoke_test.py DIST/alltalk-gui/alltalk-gui [--timeout SECONDS] [--no-first-run]``

It runs the frozen executable twice, offscreen (``QT_QPA_PLATFORM=offscreen``), with a fresh home, config
and settings folder so nothing of the builder's own settings leaks in:

1. ``alltalk-gui-cli --help`` (the CLI's console program beside the app; the app itself where there is none):
   the headless CLI must print its usage and exit 0; then ``alltalk-gui -m alltalk_gui gpu --json``, the way the
   app starts its child processes (training, the GPU scan), must print the device list.
   ``alltalk-gui-cli make-test-model DIR --engine f5`` must write a tiny F5-TTS model: the F5 modules the app
   imports by name and Vocos's parts are found in the build.
2. ``alltalk-gui``: the desktop app. Being a first start, it shows the first-run page, whose checks load torch
   and, since the test chooses a tiny XTTS v2 base-model folder for it, coqui-tts: the parts of the build most
   likely to miss a module or a data file. The test passes only when the log says both
   ``AllTalk GUI <version> ready`` and ``First-run checks finished`` with the base model found usable.

It fails at once on any line with ``Traceback``, ``ModuleNotFoundError``, ``ImportError`` or
``No module named``, when the app exits early, or when the lines do not come within the time limit. The tiny
model is built with the running (non-frozen) Python, so run this with the development environment.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

FAILURE_MARKERS = ("Traceback", "ModuleNotFoundError", "ImportError", "No module named")
READY = "ready"  # the line is "AllTalk GUI <version> ready"
CHECKS_DONE = "First-run checks finished"
CLI_NAME = "alltalk-gui-cli"  # the CLI's console program in the build (packaging/alltalk_gui.spec)


def isolated_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "QT_QPA_PLATFORM": "offscreen",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "ALLTALK_GUI_CONFIG_DIR": str(home / "alltalk_config"),
        "HF_HUB_OFFLINE": "1",
        "PYTHONUNBUFFERED": "1",
    })
    env.pop("PYTHONPATH", None)  # the frozen app must find everything inside its own folder
    return env


def check_cli(exe: Path, env: dict[str, str], timeout: float) -> None:
    done = subprocess.run([str(exe), "--help"], capture_output=True, text=True, env=env, timeout=timeout)
    output = done.stdout + done.stderr
    bad = [m for m in FAILURE_MARKERS if m in output]
    if done.returncode != 0 or bad or "usage" not in output.lower():
        raise SystemExit(f"FAIL: '{exe.name} --help' exited {done.returncode}:\n{output}")
    print(f"ok: {exe.name} --help")


def check_child_module(exe: Path, env: dict[str, str], timeout: float) -> None:
    """The app runs its child processes as ``sys.executable -m MODULE``: the frozen program must do the same."""
    done = subprocess.run([str(exe), "-m", "alltalk_gui", "gpu", "--json"], capture_output=True, text=True, env=env,
                          timeout=timeout)
    try:
        devices = json.loads(done.stdout)
    except ValueError:
        devices = None
    if done.returncode != 0 or not isinstance(devices, list) or not devices:
        raise SystemExit(f"FAIL: '{exe.name} -m alltalk_gui gpu --json' exited {done.returncode}:\n"
                         f"{done.stdout}{done.stderr}")
    print(f"ok: {exe.name} -m alltalk_gui gpu --json ({len(devices)} device(s))")


def check_f5_model(exe: Path, env: dict[str, str], timeout: float, home: Path) -> None:
    """A tiny F5-TTS model written by the program itself: f5-tts's model modules (imported by name), x-transformers,
    Vocos (whose parts are imported from the class paths in its config), safetensors and YAML must all be there."""
    folder = home / "tiny_f5"
    done = subprocess.run([str(exe), "make-test-model", str(folder), "--engine", "f5"], capture_output=True,
                          text=True, env=env, timeout=timeout)
    output = done.stdout + done.stderr
    bad = [m for m in FAILURE_MARKERS if m in output]
    written = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} if folder.is_dir() else set()
    if done.returncode != 0 or bad or not {"model_0.safetensors", "vocab.txt", "vocos/pytorch_model.bin"} <= written:
        raise SystemExit(f"FAIL: '{exe.name} make-test-model --engine f5' exited {done.returncode}:\n{output}")
    print(f"ok: {exe.name} make-test-model --engine f5")


def prepare_base_model(home: Path) -> Path | None:
    """A tiny XTTS v2 base model, chosen in the app settings, so the first-run check loads coqui-tts."""
    try:
        from alltalk_gui.core.engines.xtts.tiny_model import build_tiny_xtts
    except ImportError as exc:  # not run from the development environment
        print(f"note: no tiny base model ({exc}); the base-model check will only report 'not chosen'")
        return None
    folder = build_tiny_xtts(home / "tiny_xtts")
    config = home / "alltalk_config"
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.json").write_text(json.dumps({"base_model_dir": str(folder)}), encoding="utf-8")
    return folder


def run_app(exe: Path, env: dict[str, str], timeout: float, first_run: bool, model: Path | None) -> None:
    needed = [READY]
    if first_run:
        needed.append(CHECKS_DONE)
    process = subprocess.Popen([str(exe)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                               bufsize=1)
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    seen: list[str] = []
    found: set[str] = set()
    deadline = time.monotonic() + timeout
    try:
        while found != set(needed):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SystemExit(f"FAIL: no {sorted(set(needed) - found)} line within {timeout:.0f} s:\n"
                                 + "".join(seen))
            try:
                line = lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                raise SystemExit(f"FAIL: the app exited ({process.wait()}) before it was ready:\n" + "".join(seen))
            seen.append(line)
            print(line, end="")
            if any(marker in line for marker in FAILURE_MARKERS):
                time.sleep(0.5)  # collect the rest of the traceback for the report
                while not lines.empty():
                    rest = lines.get()
                    if rest:
                        seen.append(rest)
                raise SystemExit("FAIL: the app reported an error:\n" + "".join(seen))
            if "AllTalk GUI" in line and line.rstrip().endswith(READY):
                found.add(READY)
            if CHECKS_DONE in line:
                found.add(CHECKS_DONE)
                if model is not None and f"XTTS v2 base model in {model}" not in line:
                    raise SystemExit("FAIL: the first-run check did not accept the tiny base model:\n"
                                     + "".join(seen))
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
    print("ok: the app started" + (" and finished its first-run checks" if first_run else ""))


def cli_of(exe: Path) -> Path:
    """The build's console program for the CLI beside the app (``alltalk-gui-cli``, ``.exe`` on Windows, where the
    app is windowed); the app itself where there is none (a plain ``alltalk-gui`` script)."""
    cli = exe.with_name(CLI_NAME + exe.suffix)
    return cli if cli.is_file() else exe


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("executable", type=Path, help="dist/alltalk-gui/alltalk-gui (alltalk-gui.exe on Windows)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds to wait for each run (default 300)")
    parser.add_argument("--no-first-run", action="store_true",
                        help="only wait for the ready line (skip the first-run checks that load torch)")
    parser.add_argument("--no-child-module", action="store_true",
                        help="skip the '-m alltalk_gui' check (for a plain alltalk-gui script, which is not frozen)")
    args = parser.parse_args(argv)
    exe = args.executable.absolute()
    if not exe.is_file():
        raise SystemExit(f"FAIL: {exe} does not exist; build it first (packaging/build.sh)")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="alltalk_smoke_") as tmp:
        home = Path(tmp)
        env = isolated_env(home)
        check_cli(cli_of(exe), env, args.timeout)
        if not args.no_child_module:
            check_child_module(exe, env, args.timeout)
        if not args.no_first_run:  # both load torch: the quick mode skips them
            check_f5_model(cli_of(exe), env, args.timeout, home)
        model = None if args.no_first_run else prepare_base_model(home)
        run_app(exe, env, args.timeout, not args.no_first_run, model)
    print(f"PASS: frozen app smoke test ({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
