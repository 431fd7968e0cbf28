"""The listing commands (``segments``, ``sources``, ``checkpoints``, ``--help``) never import torch or coqui, nor
pyarrow (which only a parquet dataset import needs).

Importing torch takes about 2 s and 600 MB; a listing must answer at once. Each command runs in a fresh
interpreter on a small real project (two clips, flags as saved), and the test reads which modules got loaded.
How long the commands take is measured by benchmarks/listing_commands.py, not asserted here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from alltalk_gui.core.transcript.segments import SegmentList
from tests.core.transcript.test_segments_support import add_source, make_project, segment, voice_like

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "TTS", "whisper", "faster_whisper", "ctranslate2", "transformers", "PySide6", "pyarrow")

PROBE = r"""
import json, sys
from alltalk_gui.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in %r)), file=sys.stderr)
""" % (HEAVY,)


@pytest.fixture(scope="module")
def project_dir(tmp_path_factory):
    project = make_project(tmp_path_factory.mktemp("listing"))
    add_source(project, "take.wav", voice_like(8.0))
    SegmentList.create(project, [segment("c00001", "s001", 0, 3000, "A first clip."),
                                 segment("c00002", "s001", 3000, 6000, "And a second one.")]).close()
    return project.root


@pytest.mark.parametrize("command", [["--help"], ["segments", "{dir}", "--json"], ["segments", "{dir}"],
                                     ["sources", "{dir}", "--json"], ["checkpoints", "{dir}"]])
def test_listing_commands_import_neither_torch_nor_coqui(project_dir, command):
    args = [a.replace("{dir}", str(project_dir)) for a in command]
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    loaded = json.loads(done.stderr.strip().splitlines()[-1])
    assert loaded == [], f"{' '.join(command)} imported {loaded}"
    assert done.stdout.strip()  # it did answer
