"""The Train page with Parler-TTS, offscreen: the voice description box (measured from the recordings in a worker,
kept in project.json, edits kept, a fresh suggestion on request; hidden for XTTS v2), the bar that sets up an
engine's own environment (shown while it is missing, Start offers it instead of starting, made in a worker from
local wheels here, gone once ready), and a real training of the tiny Parler model started from the page."""

from __future__ import annotations

import json

import pytest
from PySide6.QtWidgets import QMessageBox

from alltalk_gui.core import app_settings
from alltalk_gui.core.engine_api import environment
from alltalk_gui.core.engine_api.engine import get_engine
from alltalk_gui.core.engines.parler.description import SETTING
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.gui.train.train_page import TrainPage
from tests.core.engine_api.test_environment import SIX, make_wheel
from tests.engine_envs import parler_python, tiny_parler  # noqa: F401  (fixtures)

RUN_TIMEOUT_MS = 600_000  # the child imports torch and Parler in the engine's environment; the CPU is shared


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    from alltalk_gui.testing.speech import make_speech_dataset, speech_available

    if not speech_available():
        pytest.skip("espeak-ng is not installed (Debian: espeak-ng)")
    folder = tmp_path_factory.mktemp("speech") / "dataset"
    make_speech_dataset(folder, n_train=3, n_eval=1)
    return folder


def _project(root, dataset, engine="parler") -> VoiceProject:
    import shutil

    project = VoiceProject.create(root / "Jenny", name="Jenny", language="en", engine=engine)
    shutil.copytree(dataset, project.dataset_dir, dirs_exist_ok=True)
    return project


def _page(qtbot, project: VoiceProject) -> TrainPage:
    from alltalk_gui.core.machine.gpu import list_devices

    page = TrainPage()
    qtbot.addWidget(page)
    page.setup.set_devices(list_devices())
    page.resize(1200, 1000)
    page.set_project(project)
    return page


def _description(page: TrainPage, qtbot) -> str:
    editor = page.setup.voice_prompt
    qtbot.waitUntil(lambda: not editor.text.isReadOnly(), timeout=120_000)
    return editor.text.toPlainText()


def test_the_description_is_measured_kept_and_edited(qtbot, tmp_path, dataset, monkeypatch):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    project = _project(tmp_path, dataset)
    page = _page(qtbot, project)
    editor = page.setup.voice_prompt
    assert not editor.isHidden() and editor.title() == "Voice description"
    measured = _description(page, qtbot)
    assert measured.startswith("Jenny speaks") and "The recording is" in measured
    kept = VoiceProject.open(project.root).settings[SETTING]
    assert kept["text"] == measured  # what the page shows is what a run trains with
    editor.text.setPlainText("Jenny speaks fast, in a very clear recording.")
    qtbot.waitUntil(lambda: VoiceProject.open(project.root).settings[SETTING]["text"].endswith("clear recording."),
                    timeout=5_000)
    assert editor.status.text() == "Kept in the project."
    editor.suggest.click()  # measured again, replacing the edit
    qtbot.waitUntil(lambda: editor.text.toPlainText() == measured, timeout=120_000)
    qtbot.waitUntil(lambda: VoiceProject.open(project.root).settings[SETTING]["text"] == measured, timeout=5_000)

    xtts_page = _page(qtbot, _project(tmp_path / "other", dataset, engine="xtts"))
    assert xtts_page.setup.voice_prompt.isHidden()  # XTTS learns from the clips alone


def test_the_environment_bar_sets_up_a_missing_environment(qtbot, tmp_path, dataset, monkeypatch):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv(environment.ROOT_ENV, str(tmp_path / "envs"))  # nothing set up there
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    make_wheel(wheels, "six", "0.0.1", "six", "WHO = 'the engine environment'\n")
    monkeypatch.setenv(environment.PIP_ARGS_ENV, f"--no-index --find-links {wheels}")
    # Parler's real environment needs the Package Index: here the engine declares the small one of the
    # environment tests, so the page's whole path runs offline.
    monkeypatch.setattr(get_engine("parler"), "environment", SIX)
    page = _page(qtbot, _project(tmp_path, dataset))
    bar = page.setup.environment
    assert not bar.isHidden() and "a few kB" in bar.label.text() and "Parler-TTS v1" in bar.label.text()
    asked = []
    monkeypatch.setattr(QMessageBox, "question", lambda *a: asked.append(a[2]) or QMessageBox.StandardButton.No)
    page.start()  # not ready: Start offers the set-up instead of starting
    assert asked and "It needs another six." in asked[0] and not page.is_training()
    monkeypatch.setattr(QMessageBox, "question", lambda *a: QMessageBox.StandardButton.Yes)
    with qtbot.waitSignal(bar.ready, timeout=120_000):
        bar.button.click()
    assert bar.isHidden() and environment.is_ready(SIX) and bar.is_ready()


@pytest.mark.timeout(1200)
def test_a_parler_run_starts_from_the_page(qtbot, tmp_path, dataset, tiny_parler, monkeypatch):
    from alltalk_gui.core.engines.parler.description import save_description
    from alltalk_gui.core.training.events import Done, Started, Step

    tiny = tiny_parler
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    app_settings.set_value("parler_base_model_dir", str(tiny))
    project = _project(tmp_path, dataset)
    save_description(project.settings, "Jenny speaks.", edited=True)  # kept: the page shows it, measures nothing
    project.save()
    page = _page(qtbot, project)
    assert page.setup.environment.isHidden()  # the session's environment is ready
    assert page.setup.base_label.text() == f"Parler-TTS v1 found in {tiny}"
    # A base model of a size never measured has no estimate, and the profiles say so (they were blank).
    for label in page.setup.picker.fit_labels.values():
        assert "no estimate" in label.text() and "model sizes it was measured at" in label.toolTip()
    assert _description(page, qtbot) == "Jenny speaks."
    page.setup.voice_prompt.text.setPlainText("Jenny speaks slowly.")
    page.setup.voice_prompt.save()
    fast = dict(device="cpu", lr=1e-3, warmup_steps=0, memory_interval_s=0.0, epochs=1, batch_size=2,
                grad_accum_steps=1, max_steps=1)
    built = page.setup.build_config
    monkeypatch.setattr(page.setup, "build_config", lambda: built().with_values(fast))
    run, seen = page.run, []
    page.show()
    run.start_button.click()
    assert run.is_running()
    run.supervisor.event_received.connect(seen.append)
    qtbot.waitUntil(lambda: not run.is_running() and run.supervisor.returncode is not None, timeout=RUN_TIMEOUT_MS)
    qtbot.wait(50)  # let the queued child_exited reach the panel
    assert run.supervisor.returncode == 0 and isinstance(run.done_event, Done), run.log.shown_text()[-2000:]
    assert run.done_event.reason == "max_steps"
    started = next(e for e in seen if isinstance(e, Started))
    assert started.config["engine"] == "parler" and started.config["base_model_dir"] == str(tiny)
    steps = [e for e in seen if isinstance(e, Step)]
    assert steps and set(steps[-1].parts) == {f"codebook_{k}" for k in range(9)}  # the loss's parts, by name
    run_dir = next(project.runs_dir.iterdir())
    assert (run_dir / "description.txt").read_text(encoding="utf-8").strip() == "Jenny speaks slowly."
    assert json.loads((run_dir / "train_config.json").read_text())["engine"] == "parler"
