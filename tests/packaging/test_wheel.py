"""The wheel carries the icons and the style sheet where gui/style.py's resource_path() looks for them."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from tests.packaging.conftest import ROOT


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_wheel_ships_icons_and_style_sheet_under_share(tmp_path):
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
                          capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stdout + done.stderr
    wheel = next(tmp_path.glob("alltalk_gui-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    data = next(n.split("/data/")[0] for n in names if ".data/data/" in n) + "/data/"
    expected = [f"share/alltalk-gui/icons/{p.name}" for p in (ROOT / "resources" / "icons").iterdir()]
    expected.append("share/alltalk-gui/style/app.qss")
    missing = [name for name in expected if data + name not in names]
    assert not missing, missing
    assert "alltalk_gui/gui/style.py" in names
