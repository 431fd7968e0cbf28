"""Time of a large import: saving project.json after every file (before issue 18) against every 100 files or
2 s (now), and the cost of one save as the project grows.

Writes ``count`` short, distinct WAV files (0.1 s, 22 050 Hz mono tones), imports them into a fresh project with
the importer's real code path, and reports the total time, the time per file and the number of project.json
saves. ``--save-every-file`` reproduces the old behaviour (a save after each accepted file). It also times one
``VoiceProject.save`` of a project holding ``count`` sources (with the analysis each one carries).

    python benchmarks/bulk_import.py --count 5000 [--save-every-file] [--out benchmarks/results/bulk_import_DATE.json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np
import soundfile as sf

from alltalk_gui.core.machine.gpu import cpu_name
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.project.importer import import_files


def write_files(folder: Path, count: int) -> None:
    t = np.arange(2205) / 22050
    for i in range(count):
        tone = 0.3 * np.sin(2 * np.pi * (100 + i * 0.37) * t)
        sf.write(folder / f"{i:05d}.wav", tone.astype(np.float32), 22050, subtype="PCM_16")


def run(count: int, save_every_file: bool) -> dict:
    work = Path(tempfile.mkdtemp(prefix="bulk_import_"))
    try:
        files = work / "files"
        files.mkdir()
        write_files(files, count)
        project = VoiceProject.create(work / "voice")
        saves = 0
        real_save = VoiceProject.save

        def counted(self):
            nonlocal saves
            saves += 1
            real_save(self)

        VoiceProject.save = counted
        started = time.perf_counter()
        try:
            kwargs = {"save_every_files": 1, "save_every_s": 0.0} if save_every_file else {}
            report = import_files(project, [files], **kwargs)
        finally:
            VoiceProject.save = real_save
        seconds = time.perf_counter() - started
        started = time.perf_counter()
        project.save()
        one_save = time.perf_counter() - started
        return {
            "files": count, "imported": len(report.imported), "save_every_file": save_every_file,
            "seconds": round(seconds, 1), "ms_per_file": round(1000 * seconds / count, 1), "saves": saves,
            "one_save_s_at_end": round(one_save, 3),
            "project_json_mb": round(project.project_file.stat().st_size / 1e6, 1),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--save-every-file", action="store_true", help="the old behaviour, for comparison")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = {"date": date.today().isoformat(), "cpu": cpu_name(), **run(args.count, args.save_every_file)}
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        runs = json.loads(args.out.read_text()) if args.out.exists() else []
        args.out.write_text(json.dumps([*runs, result], indent=2) + "\n")


if __name__ == "__main__":
    main()
