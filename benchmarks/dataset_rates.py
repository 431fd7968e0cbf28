"""What keeping the recordings at their own rate costs, and how long a long project's engine switch takes.

Builds a project of ``--minutes`` of 48 kHz recordings (``--files`` of them, voice-like tones: the audio path is what
is timed, not a recogniser) cut into clips of about 6 s, then measures with the app's own code:

* the working copy of one recording: at its own rate (now) against the old 22,050 Hz copy (decode, resample,
  normalise, write), time and size on disk;
* the dataset export at XTTS v2's 22,050 Hz and at F5-TTS's 24 kHz (time, and the peak of Python's allocations,
  numpy's included, through tracemalloc);
* an older project's F5 export, which first makes its 22,050 Hz working copies again from the originals;
* an engine switch of the whole transcript, XTTS v2 -> F5-TTS -> XTTS v2 (plan, flags judged again, the dataset
  written again), as the command line runs it.

    python benchmarks/dataset_rates.py [--minutes 30] [--files 6] [--out benchmarks/results/dataset_rates_DATE.json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
import tracemalloc
from datetime import date
from pathlib import Path
from typing import Any, Callable

import numpy as np
import soundfile as sf

RATE = 48_000
CLIP_S = 6.0


def recording(seconds: float, seed: int) -> np.ndarray:
    """A voice-like harmonic tone with syllable-rate swells and a breath of noise, mono float32 at 48 kHz."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * RATE)) / RATE
    tone = sum(np.sin(2 * np.pi * 140 * k * t) / k for k in range(1, 8))
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 4 * t + rng.uniform(0, 6))
    return (0.15 * tone * envelope + 0.002 * rng.standard_normal(t.size)).astype(np.float32)


def measured(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """``fn()``'s result, its wall time in s and the peak of Python's allocations in MB while it ran."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        result = fn()
        seconds = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, round(seconds, 2), round(peak / 1e6, 1)


def build(work: Path, minutes: float, files: int, engine: str):
    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.core.project.importer import import_files
    from alltalk_gui.core.transcript.segments import Segment, SegmentList

    originals = work / "originals"
    originals.mkdir(parents=True)
    seconds = minutes * 60 / files
    for i in range(files):
        sf.write(originals / f"take{i:02d}.wav", recording(seconds, i), RATE, subtype="PCM_24")
    project = VoiceProject.create(work / "voice", engine=engine)
    _, import_s, import_mb = measured(lambda: import_files(project, [originals]))
    clips, number = [], 1
    for source in project.sources:
        start = 0.0
        while start + CLIP_S <= source.duration_s:
            clips.append(Segment(f"c{number:05d}", source.id, int(start * 1000), int((start + CLIP_S) * 1000),
                                 f"Clip number {number} of a long reading, said clearly."))
            number += 1
            start += CLIP_S + 0.5
    SegmentList.create(project, clips).close()
    from alltalk_gui.core.engine_api.engine import get_engine

    for name in ("xtts", "f5"):  # the text checks' first-use imports (coqui, f5-tts's tokenizer) are not timed
        get_engine(name).text_checker(project.language).warm_up()
    return project, {"import_s": import_s, "import_peak_mb": import_mb, "clips": len(clips)}


def working_copy(original: Path, work: Path) -> dict[str, Any]:
    from alltalk_gui.core.audio import decode as audio

    new = work / "new.wav"
    _, new_s, new_mb = measured(lambda: audio.make_working_copy(original, new))

    def old() -> None:  # the importer before working copies kept their rate
        mono, rate = audio.load(original)
        mono = audio.normalise(audio.resample(audio.to_mono(mono), rate, 22_050), 22_050)
        audio.write_wav(work / "old.wav", mono, 22_050)

    _, old_s, old_mb = measured(old)
    return {"seconds_of_audio": round(sf.info(str(original)).duration, 1),
            "own_rate": {"rate": sf.info(str(new)).samplerate, "s": new_s, "peak_mb": new_mb,
                         "mb_on_disk": round(new.stat().st_size / 1e6, 1)},
            "old_22050": {"s": old_s, "peak_mb": old_mb, "mb_on_disk": round((work / "old.wav").stat().st_size / 1e6, 1)}}


def export(project) -> dict[str, Any]:
    from alltalk_gui.core.dataset.export import export_dataset

    report, seconds, peak = measured(lambda: export_dataset(project))
    return {"rate": report.sample_rate, "clips": report.train + report.eval, "remade": report.remade, "s": seconds,
            "peak_mb": peak, "mb_on_disk": round(sum(p.stat().st_size for p in project.dataset_dir.rglob("*.wav")) / 1e6, 1)}


def old_copies(project) -> None:
    """Turn the working copies into what the old importer wrote: 22,050 Hz."""
    from alltalk_gui.core.audio import decode as audio

    for source in project.sources:
        mono, rate = audio.load(project.path(source.file))
        audio.write_wav(project.path(source.audio_file),
                        audio.normalise(audio.resample(audio.to_mono(mono), rate, 22_050), 22_050), 22_050)


def switch(project, name: str) -> dict[str, Any]:
    from alltalk_gui.core.dataset.engine_switch import rewrite_dataset, switch_engine
    from alltalk_gui.core.transcript.segments import SegmentList

    def run() -> Any:
        segments = SegmentList.open(project)
        try:
            started = time.perf_counter()
            change = switch_engine(project, name, segments)
            judged = time.perf_counter() - started
            report = rewrite_dataset(project, segments)
            return change, report, judged
        finally:
            segments.close()

    (change, report, judged), seconds, peak = measured(run)
    return {"to": name, "messages": change.messages(), "judge_s": round(judged, 2), "total_s": seconds,
            "peak_mb": peak, "written": report.train + report.eval, "rate": report.sample_rate}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--files", type=int, default=6)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    from alltalk_gui.core.machine.gpu import cpu_name

    work = Path(tempfile.mkdtemp(prefix="dataset_rates_"))
    try:
        project, made = build(work / "p", args.minutes, args.files, "xtts")
        result: dict[str, Any] = {"date": date.today().isoformat(), "cpu": cpu_name(), "minutes": args.minutes,
                                  "files": args.files, "project": made,
                                  "working_copy": working_copy(project.path(project.sources[0].file), work)}
        result["export_xtts"] = export(project)
        project.choose_engine("f5")
        result["export_f5"] = export(project)
        old_copies(project)
        result["export_f5_older_project"] = export(project)
        project.choose_engine("xtts")
        result["switch"] = [switch(project, "f5"), switch(project, "xtts")]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
