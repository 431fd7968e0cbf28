"""The card rehearsal (benchmarks/gpu/rehearsal.py) on a real card: the app's own Auto at real size for both
engines on pretended 4, 6, 8, 12 and 16 GiB cards (and an 8 GiB card with another program holding 1.5 GiB), and
the Low VRAM button on the 4 GiB one. Every case must train, or stop before training with a message a person
can act on. The table goes to the kit's results folder (``ALLTALK_KIT_RESULTS``, else this test's temporary
folder) and to the test's output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REHEARSAL = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu" / "rehearsal.py"


def test_auto_fits_every_card_or_says_why_and_the_low_button_trains_on_4_gib(tmp_path):
    out = Path(os.environ.get("ALLTALK_KIT_RESULTS") or tmp_path)
    done = subprocess.run([sys.executable, str(REHEARSAL), "--out", str(out), "--work", str(tmp_path / "work")],
                          capture_output=True, text=True, timeout=900)
    print(done.stdout)
    tables = sorted(out.glob("card_rehearsal_*.json"))
    assert tables, f"no table written (exit {done.returncode}):\n{done.stderr[-4000:]}"
    rows = json.loads(tables[-1].read_text(encoding="utf-8"))
    failed = [f"{r['case']}: {r['outcome']}" for r in rows if not r["ok"]]
    assert not failed, "\n".join(failed) + "\n" + done.stderr[-3000:]
    assert done.returncode == 0, done.stderr[-3000:]
    low_button = [r for r in rows if r["path"] == "low" and r["card_gib"] == 4.0]
    assert len(low_button) == 2 and all(r["outcome"] == "trained" for r in low_button), low_button
