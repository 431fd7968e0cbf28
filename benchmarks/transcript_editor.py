"""Cost of one transcript edit at 1,000 and 5,000 clips: in the core alone, and through the editor's Qt models.

Builds a project whose segments.json holds N clips (4 s each, word timings included, a few duplicate texts) and
times text edits, splits, merges, deletes and undos the way the app makes them: with the real text check
(coqui's cleaning, warmed up first, as the Transcribe page does off the GUI thread) and the real save (the edit
journal; segments.json is folded in by the background thread). The audio-based flags are left out (``audio``
None): measuring one clip's audio costs the same whatever the number of clips.

"gui" runs the same edits through :class:`TranscriptEditor` offscreen (undo stack, table model, summary) and
lets Qt process the events each edit posts, so the time is what the GUI thread spends per edit.

    python benchmarks/transcript_editor.py [--clips 1000 5000] [--edits 40] [--out benchmarks/results/...json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from alltalk_gui.core.machine.gpu import cpu_name  # noqa: E402
from alltalk_gui.core.project.folder import Source, VoiceProject  # noqa: E402
from alltalk_gui.core.transcript.segments import Segment, SegmentList, Word  # noqa: E402

WORDS = ("the quick brown fox jumps over a lazy dog while seven sailors sing about the calm harbour at dawn and "
         "nobody listens").split()
SOURCES = 10


def make_project(root: Path, clips: int) -> VoiceProject:
    """A project with ``clips`` clips over 10 sources (no audio files: the audio flags are not measured)."""
    project = VoiceProject.create(root / "voice", language="en")
    per_source = -(-clips // SOURCES)
    project.sources = [Source(id=f"s{k + 1:03d}", name=f"take {k + 1}.wav", file=f"sources/take {k + 1}.wav",
                              audio_file=f"audio/s{k + 1:03d}.wav", sha256="0" * 64, size_bytes=0,
                              imported_at="2026-11-23T00:00:00", analysis={"duration_s": per_source * 4.5})
                       for k in range(SOURCES)]
    project.save()
    rng = random.Random(0)
    segments = []
    for number in range(clips):
        source, slot = divmod(number, per_source)
        start = slot * 4500
        words = [rng.choice(WORDS) for _ in range(10)]
        if number % 50 == 7:
            words = ["this", "sentence", "comes", "back"]  # a few duplicate texts
        timed = tuple(Word(start + 100 + i * 380, start + 100 + i * 380 + 300, w, 0.9) for i, w in enumerate(words))
        segments.append(Segment(f"c{number + 1:05d}", f"s{source + 1:03d}", start, start + 4000,
                                " ".join(words).capitalize() + ".", words=timed))
    SegmentList.create(project, segments, meta={"backend": "benchmark"}, audio=None).close()
    return project


def open_list(project: VoiceProject) -> SegmentList:
    clips = SegmentList.open(project, audio=None)
    clips.audio = None
    clips.warm_up()  # the page does this on a worker thread when it opens the list
    clips.prepare_edits()  # and this on the GUI thread (the indexes edits use), as part of opening
    return clips


def edits(clips: SegmentList, count: int, rng: random.Random):
    """Yield (kind, callable making one edit) in a mix like a person's: text, split, merge, delete, undo."""
    ids = clips.ids()
    for i in range(count):
        target = ids[rng.randrange(len(ids) // 4, 3 * len(ids) // 4)]
        kind = ("text", "split", "merge", "delete", "undo")[i % 5]
        yield kind, target


def run_core(clips: SegmentList, count: int) -> dict[str, list[float]]:
    rng = random.Random(1)
    times: dict[str, list[float]] = {}
    last = None
    for kind, target in edits(clips, count, rng):
        segment = clips[target]
        start = time.perf_counter()
        if kind == "text":
            last = clips.set_text(target, segment.text + " Corrected")
        elif kind == "split":
            last = clips.split(target, segment.start_ms + 2000, len(segment.text) // 2)
        elif kind == "merge":
            last = clips.merge_with_next(target) if clips.next_in_source(target) else clips.delete(target)
        elif kind == "delete":
            last = clips.delete(target)
        else:
            clips.undo(last)
        times.setdefault(kind, []).append((time.perf_counter() - start) * 1000)
    return times


def run_gui(clips: SegmentList, count: int) -> dict[str, list[float]]:
    from PySide6.QtWidgets import QApplication

    from alltalk_gui.gui.transcript.segments_model import Column
    from alltalk_gui.gui.transcript.transcript_editor import TranscriptEditor

    app = QApplication.instance() or QApplication([])
    editor = TranscriptEditor()
    editor.resize(1200, 800)
    editor.show()
    editor.set_segments(clips)
    app.processEvents()
    rng = random.Random(1)
    times: dict[str, list[float]] = {}
    for kind, target in edits(clips, count, rng):
        editor.select(target)
        app.processEvents()
        segment = clips[target]
        start = time.perf_counter()
        if kind == "text":
            row = editor.model.row_of(target)
            editor.model.setData(editor.model.index(row, Column.TEXT), segment.text + " Corrected")
        elif kind == "split":
            editor._edit(lambda: clips.split(target, segment.start_ms + 2000, len(segment.text) // 2))
        elif kind == "merge":
            editor.merge_with_next()
        elif kind == "delete":
            editor.delete_or_restore()
        else:
            editor.undo_stack.undo()
        app.processEvents()
        times.setdefault(kind, []).append((time.perf_counter() - start) * 1000)
    editor.set_segments(None)
    editor.deleteLater()
    app.processEvents()
    return times


def summarise(times: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    out = {kind: {"median_ms": round(statistics.median(v), 2), "max_ms": round(max(v), 2), "n": len(v)}
           for kind, v in times.items()}
    every = [t for v in times.values() for t in v]
    out["all"] = {"median_ms": round(statistics.median(every), 2), "max_ms": round(max(every), 2),
                  "p90_ms": round(sorted(every)[int(0.9 * len(every))], 2), "n": len(every)}
    return out


def measure(clips_n: int, count: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        project = make_project(Path(tmp), clips_n)
        size = project.segments_file.stat().st_size
        start = time.perf_counter()
        clips = open_list(project)
        open_s = time.perf_counter() - start
        first = time.perf_counter()
        clips.set_text(clips.ids()[3], "The very first edit after opening.")
        first_ms = (time.perf_counter() - first) * 1000
        core = summarise(run_core(clips, count))
        start = time.perf_counter()
        clips.flush()
        fold_ms = (time.perf_counter() - start) * 1000
        gui = summarise(run_gui(clips, count))
        clips.close()
    return {"clips": clips_n, "segments_json_bytes": size, "open_warm_and_prepare_s": round(open_s, 2),
            "first_edit_ms": round(first_ms, 2), "core": core, "gui": gui,
            "background_fold_in_ms": round(fold_ms, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--edits", type=int, default=40)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" /
                        f"transcript_editor_{date.today().isoformat()}.json")
    args = parser.parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    results = [measure(n, args.edits) for n in args.clips]
    load = os.getloadavg()
    report = {"benchmark": "transcript_editor", "date": date.today().isoformat(), "cpu": cpu_name(),
              "cpus": os.cpu_count(), "load_average_1_5_15": [round(x, 2) for x in load], "results": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
