"""Auto on a machine without a CUDA GPU picks a profile that fits the RAM, offscreen on the Train page.

First rendering of Orpheus-TTS (docs/images/train_orpheus.png): "→ High: No CUDA GPU was found..." beside High's
own red "~26.0 GiB of 20.9 GiB free" (a full fine-tune of 3.3 B parameters with AdamW in fp32); Auto took High on
every CPU whatever it needed. Now it is the fastest profile whose estimate fits 90 % of the free RAM, and the
reason says why High was passed over; where High fits (XTTS v2's) it stays High."""

from __future__ import annotations

import pytest

from alltalk_gui.core.machine.gpu import DeviceInfo
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.gui.train.train_page import TrainPage

CPU = DeviceInfo("cpu", 0, "AMD EPYC", 23.5, 20.9, False, cores=2)


def _auto_on_cpu(qtbot, tmp_path, monkeypatch, engine: str):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    project = VoiceProject.create(tmp_path / "voice", name="Voice", language="en", engine=engine)
    page = TrainPage()
    qtbot.addWidget(page)
    page.setup.set_devices([CPU])
    page.resize(1200, 900)
    page.set_project(project)
    picker = page.setup.picker
    assert picker.choice() == "auto"
    return picker


def test_auto_passes_over_a_profile_the_ram_cannot_hold(qtbot, tmp_path, monkeypatch):
    picker = _auto_on_cpu(qtbot, tmp_path, monkeypatch, "orpheus")
    assert "#c62828" in picker.fit_labels["high"].text()  # High's own estimate: too big for the RAM
    chosen = picker.resolved()
    assert chosen in ("medium", "low") and "#2e7d32" in picker.fit_labels[chosen].text()  # Auto's pick fits
    reason = picker.auto_reason.text()
    assert "High would need about" in reason and "20.9 GiB free" in reason


def test_auto_stays_high_where_high_fits(qtbot, tmp_path, monkeypatch):
    picker = _auto_on_cpu(qtbot, tmp_path, monkeypatch, "xtts")
    assert picker.resolved() == "high" and "would need" not in picker.auto_reason.text()


@pytest.mark.parametrize("engine", ["f5", "parler"])
def test_the_other_engines_fit_high_in_this_ram(qtbot, tmp_path, monkeypatch, engine):
    assert _auto_on_cpu(qtbot, tmp_path, monkeypatch, engine).resolved() == "high"
