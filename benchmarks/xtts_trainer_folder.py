"""What using AllTalk's training folder as an XTTS v2 model costs: peak memory and time, real size, on the CPU.

AllTalk's finetune leaves coqui Trainer saves of the whole GPTTrainer with AdamW's state (about 5.4 GB for the real
XTTS v2: the model's 1.9 GB and two fp32 moments per GPT weight). The app reads them weights-only and memory-mapped
and keeps only the ``"model"`` entry (:func:`alltalk_gui.core.engines.xtts.files.read_model_state`). This
benchmark writes a real-size base model with random weights (coqui's classes, :mod:`real_size`'s architecture) and
a training folder from it with coqui's own GPTTrainer and Trainer save function
(:mod:`alltalk_gui.core.engines.xtts.trainer_run`), then measures, each in a fresh process (peak RSS from
``getrusage``, which counts the file pages a mapped load touched):

* ``check``: the engine's check of the folder (the Train page, ``preview --model``, training's first step);
* ``train_gpt``: the GPT with the folder's weights, as training loads it;
* ``inference``: the whole Xtts with them, as a preview or an export's speaker file loads it;
* ``whole_save``: ``torch.load`` of the save without mmap (what reading it naively costs), for comparison;
* ``base_train_gpt``: the GPT of the compacted ``model.pth`` (AllTalk's models/trainedmodel/), for comparison.

    flock /work/wt/.heavy.lock python benchmarks/xtts_trainer_folder.py [--work DIR] [--keep]

Needs about 8 GB of free disk (deleted at the end unless --keep) and about 9 GB of memory while writing the save.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_size import XTTS_V2, write_front_end_files  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
CASES = ("check", "train_gpt", "inference", "whole_save", "base_train_gpt")
GIB = 1 << 30


def write_folders(work: Path) -> dict:
    """A real-size random base model in ``work/base`` and an AllTalk training folder from it in ``work/run``."""
    import torch
    from TTS.tts.models.xtts import Xtts

    from alltalk_gui.core.engines.xtts.files import load_tokenizer
    from alltalk_gui.core.engines.xtts.tiny_model import write_config
    from alltalk_gui.core.engines.xtts.trainer_run import write_trainer_run

    start = time.perf_counter()
    base = write_front_end_files(work / "base")
    config = write_config(base, XTTS_V2, load_tokenizer(base), "random real-size XTTS v2 for a benchmark")
    torch.manual_seed(0)
    model = Xtts(config)
    model.tokenizer = load_tokenizer(base)
    model.init_models()
    model.mel_stats.copy_(torch.load(base / "mel_stats.pth", weights_only=True))
    torch.save({"config": config.to_dict(), "model": model.state_dict()}, base / "model.pth")
    del model
    save = write_trainer_run(base, work / "run", step=1000, best=False)
    return {"write_s": round(time.perf_counter() - start, 1), "save": save.name,
            "save_bytes": save.stat().st_size, "base_model_pth_bytes": (base / "model.pth").stat().st_size}


def measure(case: str, work: Path) -> dict:
    """One case, in this (fresh) process: seconds and peak RSS, and the RSS before it (imports done)."""
    import torch

    from alltalk_gui.core.engines.xtts import model as xtts_model  # noqa: F401  (imports before the baseline)
    from alltalk_gui.core.engines.xtts.files import validate_base_model
    from alltalk_gui.core.engines.xtts.layout import model_files

    run, base = work / "run", work / "base"
    before = _rss_now()
    start = time.perf_counter()
    if case == "check":
        info = validate_base_model(run)
        said = f"{info.gpt_parameters / 1e6:.1f} M GPT parameters; {info.files.note()}"
    elif case == "train_gpt":
        gpt, _, _ = xtts_model.load_gpt(run)
        said = f"{sum(p.numel() for p in gpt.parameters()) / 1e6:.1f} M parameters"
    elif case == "inference":
        model = xtts_model.load_inference_model(run)
        said = f"{sum(p.numel() for p in model.parameters()) / 1e6:.1f} M parameters"
    elif case == "whole_save":
        save = torch.load(model_files(run).weights, map_location="cpu", weights_only=True)
        said = f"entries {sorted(save)}"
    elif case == "base_train_gpt":
        gpt, _, _ = xtts_model.load_gpt(base)
        said = f"{sum(p.numel() for p in gpt.parameters()) / 1e6:.1f} M parameters"
    else:
        raise SystemExit(f"unknown case {case}")
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux
    return {"case": case, "seconds": round(seconds, 2), "peak_rss_gib": round(peak / GIB, 2),
            "rss_before_gib": round(before / GIB, 2), "peak_over_before_gib": round((peak - before) / GIB, 2),
            "what": said}


def _rss_now() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def _child(*args: str) -> dict:
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{args} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(opts: argparse.Namespace) -> Path:
    import torch

    work = Path(opts.work) if opts.work else Path(tempfile.mkdtemp(prefix="xtts_trainer_folder_"))
    os.environ["ALLTALK_GUI_CONFIG_DIR"] = str(work / "settings")  # the run's base lends dvae/mel_stats
    from alltalk_gui.core import app_settings

    app_settings.set_value("base_model_dir", str(work / "base"))
    try:
        written = _child("--write", "--work", str(work)) if not (work / "run").is_dir() else {"write_s": None}
        cases = [_child("--measure", case, "--work", str(work)) for case in CASES]
        sizes = {"save_bytes": next((work / "run").glob("*.pth")).stat().st_size,
                 "base_model_pth_bytes": (work / "base" / "model.pth").stat().st_size}
    finally:
        if not opts.keep:
            shutil.rmtree(work, ignore_errors=True)
    record = {"benchmark": "xtts_trainer_folder", "date": date.today().isoformat(), "device": "cpu",
              "machine": {"cpus": os.cpu_count(), "memory_gib": round(os.sysconf("SC_PAGE_SIZE") *
                                                                     os.sysconf("SC_PHYS_PAGES") / GIB, 1),
                          "platform": platform.platform(), "torch": torch.__version__},
              "written": {**written, **sizes}, "cases": cases,
              "note": "each case in a fresh process; peak RSS includes the file pages a memory-mapped load touched "
                      "and the imports (rss_before_gib)"}
    out = Path(opts.out) if opts.out else RESULTS / f"xtts_trainer_folder_{record['date']}_cpu.json"
    out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", help="folder for the base model and the training folder (default: a temporary one)")
    p.add_argument("--keep", action="store_true", help="keep the written folders")
    p.add_argument("--out", help="result JSON (default benchmarks/results/xtts_trainer_folder_<date>_cpu.json)")
    p.add_argument("--write", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--measure", choices=CASES, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    if opts.write:
        print(json.dumps(write_folders(Path(opts.work))))
    elif opts.measure:
        print(json.dumps(measure(opts.measure, Path(opts.work))))
    else:
        print(run(opts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
