"""The first edit right after opening a long project returns at once (the walk of 2026-11-26 measured 2.1-2.6 s,
spent importing coqui's tokenizer on the GUI thread while its warm-up thread had not finished).

A fresh process opens a 300-clip project in the main window, edits five clips' text at once and times each edit
call with ``time.perf_counter``; the text check (coqui, torch) is still loading in its child process then, so the
edit is saved without it, and its flags follow when the check answers: the clip given a character XTTS cannot
encode gets that flag. The limit holds on this loaded 2-core machine because nothing the edit waits for runs in
the GUI's process: before, a warm-up thread's import held the GIL and edits took 28-137 ms.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from alltalk_gui.core.transcript.flags import ClipChecker
from alltalk_gui.core.transcript.segments import SegmentList, read_file
from tests.core.transcript.test_segments_support import add_source, make_project, segment, voice_like

pytest.importorskip("TTS", reason="coqui-tts is not installed")

CLIPS = 300
EDIT_LIMIT_MS = 16.0  # one frame at 60 Hz
TRIALS = 4
REPO = Path(__file__).resolve().parents[2]


class _NoTextCheck:
    """Writes the project without importing coqui here (the child process must import it itself)."""

    vocab_file = None
    max_chars = None

    def problem(self, text: str) -> None:
        return None

    def warm_up(self) -> None:
        pass


def _long_project(tmp_path: Path) -> Path:
    project = make_project(tmp_path)
    for k in range(3):
        add_source(project, f"take {k + 1}.wav", voice_like(450.0, seed=k))
    per_source = CLIPS // 3
    clips = [segment(f"c{n + 1:05d}", f"s{n // per_source + 1:03d}", (n % per_source) * 4500,
                     (n % per_source) * 4500 + 4000, f"Clip number {n + 1} says a few plain words.")
             for n in range(CLIPS)]
    SegmentList.create(project, clips, checker=ClipChecker("xtts", "en", text_checker=_NoTextCheck()), audio=None).close()
    return project.root


def _open_and_edit(root: Path, tmp_path: Path, trial: int) -> dict:
    """One fresh process: open the project (a copy, so each trial's edits are its first) and edit at once."""
    copy = tmp_path / f"trial{trial}"
    shutil.copytree(root, copy)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "ALLTALK_GUI_CONFIG_DIR": str(tmp_path / "config"),
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "tests.gui.open_and_edit", str(copy), str(tmp_path / "qsettings")],
                          capture_output=True, text=True, env=env, timeout=240, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["folder"] = copy
    return result


@pytest.mark.timeout(900)
def test_an_edit_right_after_opening_300_clips_returns_within_16_ms(tmp_path):
    root = _long_project(tmp_path)
    trials = []
    while len(trials) < TRIALS:
        result = _open_and_edit(root, tmp_path, len(trials))
        trials.append(result)
        assert result["clips"] == CLIPS
        # The case that froze: the check was still loading when the edits came, and this process never imports
        # torch for it (the check's child process does).
        assert not any(result["answered_before"]) and not result["torch_in_this_process"], result
        assert result["saved_at_once"] and "unencodable" not in result["flags_before"]
        # The GUI thread's own work per edit stays far under a frame in every trial.
        assert max(result["edit_cpu_ms"]) < EDIT_LIMIT_MS, result
        # ... and the flags followed once the check answered.
        assert "unencodable" in result["flags_after"] and "bad characters" in result["flags_shown_after"], result
        if max(result["edit_ms"]) < EDIT_LIMIT_MS:
            break
    # Each edit returned (perf_counter around the call) within a frame. A single wall-clock sample on this shared
    # 2-core machine also holds the time the OS gave the CPU to other programs (load 7-10 while the team works,
    # plus the check's child importing torch): that alone reached 38 ms once. So a trial with a slow edit is
    # repeated in a fresh process, and each edit (the first, the second...) must have returned within the limit
    # in some trial: a delay of the app's own (the 2 s import, or the 13-137 ms of a thread start or an import
    # holding the GIL, before this was fixed) comes back in every trial and fails here.
    best = [min(times) for times in zip(*(t["edit_ms"] for t in trials))]
    assert max(best) < EDIT_LIMIT_MS, [t["edit_ms"] for t in trials]
    saved = read_file(trials[-1]["folder"] / "segments.json")  # the snapshot with its journal, as on disk
    assert saved["segments"][0]["text"] == "An edit made at once ☺ with a smile."
