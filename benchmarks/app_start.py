"""How long the desktop app takes to show its main window, and how long the listing commands take to answer.

Each run is a fresh interpreter: ``python -m alltalk_gui`` offscreen with its own settings folder, timed from
the start of the process to the "ready" line the app logs once the main window is shown and the event loop
runs. "main_window" is a normal start (the first-run page was seen before); "main_window_first_start" starts
with empty settings, so the first-run page opens and its checks start (the graphics-card check imports torch on
a worker thread, which competes for the interpreter). Then ``alltalk-gui --help``, ``segments``, ``sources`` and ``checkpoints`` on a small project, timed to
exit. Medians of ``--repeat`` runs; results go to benchmarks/results/app_start_DATE.json.

With ``--xvfb`` the app runs on a private Xvfb display (Qt's xcb platform, as on a desktop) instead of
offscreen: offscreen windows are never exposed, and QSplashScreen.show() then waits its full 1 s timeout for an
expose event, which a real display sends at once.

    python benchmarks/app_start.py [--repeat 5] [--xvfb]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from alltalk_gui.core.machine.gpu import cpu_name  # noqa: E402


def window_seconds(env: dict[str, str]) -> float:
    began = time.monotonic()
    child = subprocess.Popen([sys.executable, "-m", "alltalk_gui"], cwd=ROOT, env=env, stderr=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, text=True)
    try:
        for line in child.stderr:
            if " ready" in line:
                return time.monotonic() - began
        raise RuntimeError("the app exited without saying ready")
    finally:
        child.kill()
        child.wait()


def mark_first_run_done(env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "-c", "from alltalk_gui.gui.app import create_application\n"
                    "create_application()\n"
                    "from alltalk_gui.gui.start.first_run_page import set_first_run_done\n"
                    "set_first_run_done()\n"
                    "from PySide6.QtCore import QSettings\nQSettings().sync()\n"], cwd=ROOT, env=env, check=True)


def command_seconds(env: dict[str, str], args: list[str]) -> float:
    began = time.monotonic()
    subprocess.run([sys.executable, "-m", "alltalk_gui", *args], cwd=ROOT, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - began


def small_project(folder: Path) -> Path:
    from alltalk_gui.core.transcript.segments import SegmentList
    from tests.core.transcript.test_segments_support import add_source, make_project, segment, voice_like

    project = make_project(folder)
    add_source(project, "take.wav", voice_like(8.0))
    SegmentList.create(project, [segment("c00001", "s001", 0, 3000, "A first clip."),
                                 segment("c00002", "s001", 3000, 6000, "And a second one.")]).close()
    return project.root


def start_xvfb() -> tuple[subprocess.Popen, str]:
    display = f":{150 + os.getpid() % 100}"
    server = subprocess.Popen(["Xvfb", display, "-screen", "0", "1280x1024x24", "-nolisten", "tcp"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    return server, display


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--xvfb", action="store_true", help="show the app on a private Xvfb display")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" /
                        f"app_start_{date.today().isoformat()}.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen",
               "XDG_CONFIG_HOME": str(Path(tmp) / "config"), "XDG_CACHE_HOME": str(Path(tmp) / "cache")}
        xvfb = None
        if args.xvfb:
            xvfb, display = start_xvfb()
            env.update(QT_QPA_PLATFORM="xcb", DISPLAY=display)
        project = str(small_project(Path(tmp)))
        mark_first_run_done(env)
        runs: dict[str, list[float]] = {"main_window": [], "main_window_first_start": [], "--help": [], "segments --json": [], "sources --json": [],
                                        "checkpoints": []}
        load_before = os.getloadavg()
        for _ in range(args.repeat):
            runs["main_window"].append(window_seconds(env))
            fresh = {**env, "XDG_CONFIG_HOME": tempfile.mkdtemp(dir=tmp)}
            runs["main_window_first_start"].append(window_seconds(fresh))
            runs["--help"].append(command_seconds(env, ["--help"]))
            runs["segments --json"].append(command_seconds(env, ["segments", project, "--json"]))
            runs["sources --json"].append(command_seconds(env, ["sources", project, "--json"]))
            runs["checkpoints"].append(command_seconds(env, ["checkpoints", project]))
        if xvfb is not None:
            xvfb.terminate()
            xvfb.wait()
    report = {"benchmark": "app_start", "date": date.today().isoformat(), "cpu": cpu_name(), "cpus": os.cpu_count(),
              "platform": "xcb on Xvfb" if args.xvfb else "offscreen",
              "load_average_1_5_15_before": [round(x, 2) for x in load_before],
              "load_average_1_5_15_after": [round(x, 2) for x in os.getloadavg()],
              "median_s": {k: round(statistics.median(v), 3) for k, v in runs.items()},
              "min_s": {k: round(min(v), 3) for k, v in runs.items()},
              "runs_s": {k: [round(x, 3) for x in v] for k, v in runs.items()}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
