"""Killing the app in the middle of a burst of edits loses at most the edit in progress.

A child process makes edits as fast as it can and reports each one after it returns (saved). The test kills
it with SIGKILL part-way, then reopens the project: the file must load, and hold every reported edit.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from alltalk_gui.core.transcript.segments import SegmentList
from tests.core.transcript.test_segments_support import add_source, make_project, segment, voice_like

CHILD = r"""
import sys
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.transcript.segments import SegmentList

clips = SegmentList.open(VoiceProject.open(sys.argv[1]))
ids = clips.ids()
for i in range(100000):
    target = ids[i % len(ids)]
    clips.set_text(target, f"edit number {i}")
    if i % 7 == 0:
        clips.delete(target) if not clips[target].deleted else clips.restore(target)
    print(i, flush=True)
"""


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL is POSIX")
def test_sigkill_during_edits_keeps_every_completed_edit(tmp_path):
    project = make_project(tmp_path)
    add_source(project, "a.wav", voice_like(20.0))
    SegmentList.create(project, [segment(f"c0000{k + 1}", "s001", k * 4000, k * 4000 + 3000, f"Clip {k} text.")
                                 for k in range(4)])
    root = Path(__file__).resolve().parents[3]
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(project.root)], stdout=subprocess.PIPE, text=True,
                             cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    done = -1
    for line in child.stdout:
        done = int(line)
        if done >= 60:
            break
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    for line in child.stdout:  # edits it finished (and reported) between our last read and the kill
        done = int(line)

    reloaded = SegmentList.open(project)  # must parse: never a half-written file
    ids = reloaded.ids()
    for k, clip_id in enumerate(ids):
        last_reported = max(i for i in range(done + 1) if i % len(ids) == k)
        number = int(reloaded[clip_id].text.rsplit(" ", 1)[1])
        # the reported edit is there; at most the one edit in flight when the kill came may be there too
        assert last_reported <= number <= done + 1 and number % len(ids) == k
        toggles = sum(1 for i in range(number + 1) if i % len(ids) == k and i % 7 == 0)
        in_flight = number == done + 1 and number % 7 == 0  # its delete/restore may not have been saved
        assert reloaded[clip_id].deleted == bool(toggles % 2) or in_flight
