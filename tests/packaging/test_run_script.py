"""packaging/run.sh installs only when pyproject.toml or the virtual environment changed, else starts at once.

The script runs in a copy of the checkout's layout where setup_env.sh is a stand-in that records each install and
makes a venv whose ``alltalk-gui`` only prints; the real install takes minutes and a few GB.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FAKE_SETUP = """#!/usr/bin/env bash
set -euo pipefail
cd "$(dirname "$0")/.."
echo install >> installs.log
mkdir -p .venv/bin .venv/lib/python3.11/site-packages
touch .venv/pyvenv.cfg
ln -sf "$(command -v bash)" .venv/bin/python
printf '#!/usr/bin/env bash\\necho "app started $*"\\n' > .venv/bin/alltalk-gui
chmod +x .venv/bin/alltalk-gui
"""


@pytest.fixture
def checkout(tmp_path):
    (tmp_path / "packaging").mkdir()
    for name in ("run.sh", "venv_stamp.sh", "no_deps_requirements.txt", "judge_requirements.txt"):
        shutil.copy2(ROOT / "packaging" / name, tmp_path / "packaging" / name)
    (tmp_path / "packaging" / "setup_env.sh").write_text(FAKE_SETUP)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "alltalk-gui"\n')
    return tmp_path


def start(checkout: Path) -> tuple[str, float]:
    began = time.monotonic()
    done = subprocess.run(["bash", str(checkout / "packaging" / "run.sh"), "--flag"], capture_output=True,
                          text=True, timeout=60, check=True)
    return done.stdout, time.monotonic() - began


def installs(checkout: Path) -> int:
    log = checkout / "installs.log"
    return len(log.read_text().split()) if log.exists() else 0


def test_installs_once_then_starts_at_once(checkout):
    out, _ = start(checkout)
    assert out.strip() == "app started --flag" and installs(checkout) == 1
    out, seconds = start(checkout)
    assert out.strip() == "app started --flag" and installs(checkout) == 1  # nothing changed: no install
    assert seconds < 5  # measured: about 0.02 s here; an install took 3.9 s before the stamp


def test_a_changed_pyproject_or_venv_installs_again(checkout):
    start(checkout)
    (checkout / "pyproject.toml").write_text('[project]\nname = "alltalk-gui"\ndependencies = ["numpy"]\n')
    start(checkout)
    assert installs(checkout) == 2
    time.sleep(1.1)  # site-packages' timestamp has one-second resolution in the stamp
    (checkout / ".venv/lib/python3.11/site-packages/extra.pth").write_text("")  # a package added by hand
    start(checkout)
    assert installs(checkout) == 3
    shutil.rmtree(checkout / ".venv")  # a deleted venv
    start(checkout)
    assert installs(checkout) == 4
    start(checkout)
    assert installs(checkout) == 4
