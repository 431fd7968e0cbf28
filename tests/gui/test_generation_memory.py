"""F5-TTS's sampling steps default to what the computer affords and are remembered per project (the walk of
2026-11-26: 32 steps on a CPU-only machine, about 10 minutes per take by the app's own estimate, and back to 32
after a restart)."""

from __future__ import annotations

import pytest

from alltalk_gui.core.engine_api.engine import get_engine
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.voice.preview import CPU_TAKE_BUDGET_S, GenerationSettings, affordable_on_cpu
from alltalk_gui.gui.preview import preview_page
from alltalk_gui.gui.preview.preview_page import PreviewPage
from tests.gui.walked_project import fake_run, walked_project


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    project = walked_project(tmp_path)
    fake_run(project, "f5run", "f5", 4, finished=True)
    return project.root


def _page(qtbot, root, gpu: bool, monkeypatch) -> PreviewPage:
    monkeypatch.setattr(preview_page, "gpu_present", lambda: gpu)
    page = PreviewPage()
    qtbot.addWidget(page)
    page.set_project(VoiceProject.open(root))
    assert page.inputs.engine.name == "f5"
    return page


def test_the_cpu_default_is_what_a_take_can_afford(qtbot, project, monkeypatch):
    f5 = get_engine("f5")
    assert GenerationSettings.for_engine(f5).options["steps"] == 32  # F5-TTS's own default
    for language in ("en", "de", "zh-cn", "ja", "fr", "es"):
        steps = affordable_on_cpu(f5, GenerationSettings.for_engine(f5), language).options["steps"]
        assert steps <= 16, (language, steps)
    page = _page(qtbot, project, gpu=False, monkeypatch=monkeypatch)
    assert page.generation.settings().options["steps"] == 16
    cost = f5.generation_estimate(page.generation.settings(), "The quick brown fox jumps over the lazy dog.", 6.0,
                                  "Good morning! I hope you slept well, because today is going to be a busy day.")
    assert cost <= CPU_TAKE_BUDGET_S
    on_gpu = _page(qtbot, project, gpu=True, monkeypatch=monkeypatch)
    assert on_gpu.generation.settings().options["steps"] == 32  # a GPU affords the model's own


def test_the_choice_is_remembered_per_project(qtbot, project, monkeypatch):
    page = _page(qtbot, project, gpu=False, monkeypatch=monkeypatch)
    page.generation.set_value("steps", 8)  # as the user picks it
    page.generation.toggle.setChecked(True)
    page.generation.boxes["speed"].setValue(1.1)
    saved = VoiceProject.open(project).settings["generation"]["f5"]
    assert saved == {"steps": 8, "speed": 1.1, "advanced_open": True}

    again = _page(qtbot, project, gpu=False, monkeypatch=monkeypatch)  # after a restart
    assert again.generation.settings().options == {"steps": 8, "speed": 1.1}
    assert again.generation.toggle.isChecked()
    again.generation.set_value("steps", 16)  # back to the default: nothing left to remember for it
    again.generation.boxes["speed"].setValue(1.0)
    again.generation.toggle.setChecked(False)
    assert VoiceProject.open(project).settings["generation"]["f5"] == {}
