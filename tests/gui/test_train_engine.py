"""The Train page's engine choice, offscreen: XTTS v2 or F5-TTS v1 per project (saved in project.json), with each
engine's profiles and estimates, Advanced fields, base-model folder (found or missing, chosen, downloaded after
its own licence) and language caveat; and a real F5-TTS training run on the tiny F5 model started, stopped and
resumed from the page, its events plotted as XTTS's are."""

from __future__ import annotations

from dataclasses import replace

import pytest

from alltalk_gui.core import app_settings
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.events import Done, Eval, Started, Step
from alltalk_gui.gui.train.train_page import TrainPage

pytest.importorskip("f5_tts", reason="f5-tts is not installed: pip install --no-deps f5-tts==1.1.22")

RUN_TIMEOUT_MS = 240_000  # a child start is a torch + f5-tts import; the CPU is shared
F5_KEY = "f5_base_model_dir"
# What a quick CPU run of the tiny F5 model needs beyond the page's own settings (the profile's 1-30 s clips
# stay): a big step, a memory sample and a checkpoint every step, a step limit.
F5_FAST = dict(device="cpu", lr=1e-3, warmup_steps=0, memory_interval_s=0.0, save_every_steps=1, keep_last=2,
               epochs=30, batch_size=1, grad_accum_steps=1, max_steps=6)


@pytest.fixture(scope="module")
def tiny_xtts(tmp_path_factory):
    from alltalk_gui.core.engines.xtts.tiny_model import build_tiny_xtts

    return build_tiny_xtts(tmp_path_factory.mktemp("tiny_xtts"))


@pytest.fixture(scope="module")
def tiny_f5(tmp_path_factory):
    from alltalk_gui.core.engines.f5.tiny_model import build_tiny_f5

    return build_tiny_f5(tmp_path_factory.mktemp("tiny_f5") / "f5tts_v1_tiny")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """An exported dataset of espeak-ng speech (3 train clips, 1 eval), copied into each test's project."""
    from alltalk_gui.testing.speech import make_speech_dataset

    folder = tmp_path_factory.mktemp("speech") / "dataset"
    make_speech_dataset(folder, n_train=3, n_eval=1)
    return folder


def _project(root, dataset, language="en") -> VoiceProject:
    import shutil

    project = VoiceProject.create(root / "voice", name="Voice", language=language)
    shutil.copytree(dataset, project.dataset_dir, dirs_exist_ok=True)
    return project


@pytest.fixture
def config_dir(tmp_path, monkeypatch, tiny_xtts, tiny_f5):
    """App settings of this test only, with both engines' base models chosen."""
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    app_settings.set_value("base_model_dir", str(tiny_xtts))
    app_settings.set_value(F5_KEY, str(tiny_f5))
    return tmp_path / "config"


def _page(qtbot, project: VoiceProject) -> TrainPage:
    from alltalk_gui.core.machine.gpu import list_devices

    page = TrainPage()
    qtbot.addWidget(page)
    page.setup.set_devices(list_devices())  # rather than the page's own child process: one torch import fewer
    page.resize(1200, 900)
    page.set_project(project)
    return page


def _choose(page: TrainPage, engine: str) -> None:
    page.setup.engine_choice.buttons[engine].click()
    assert page.setup.engine == engine


def _saved_engine(project: VoiceProject) -> str:
    return VoiceProject.open(project.root).engine


def _shown(page: TrainPage, field: str) -> bool:
    advanced = page.setup.advanced
    return field in advanced.captions and advanced.form.isRowVisible(advanced.captions[field])


def test_the_engine_switch_changes_profiles_estimates_fields_and_base_model(qtbot, tmp_path, config_dir, tiny_xtts,
                                                                          tiny_f5, dataset):
    project = _project(tmp_path, dataset)
    page = _page(qtbot, project)
    setup, picker = page.setup, page.setup.picker
    assert setup.engine == "xtts" and _saved_engine(project) == "xtts"  # a new project's: XTTS v2
    assert setup.base_label.text() == f"XTTS v2 found in {tiny_xtts}"
    assert "12 GB card" in picker.summaries["high"].text()
    xtts_estimates = {name: label.text() for name, label in picker.fit_labels.items()}
    assert _shown(page, "freeze_conditioning") and not _shown(page, "ema_decay")
    assert not _shown(page, "add_missing_characters")
    # A change to an XTTS-only field, made before switching, is kept for XTTS but never reaches an F5 run.
    freeze = setup.advanced.editors["freeze_conditioning"]
    flipped = not freeze.isChecked()
    freeze.setChecked(flipped)

    _choose(page, "f5")
    assert _saved_engine(project) == "f5"  # remembered in project.json, where the CLI reads it too
    assert setup.base_label.text() == f"F5-TTS v1 found in {tiny_f5}"
    assert "16 GB card" in picker.summaries["high"].text() and "4 GB card" in picker.summaries["low"].text()
    f5_estimates = {name: label.text() for name, label in picker.fit_labels.items()}
    assert f5_estimates != xtts_estimates and all("GiB" in text for text in f5_estimates.values())
    assert not _shown(page, "freeze_conditioning")
    assert _shown(page, "ema_decay") and _shown(page, "add_missing_characters")
    assert "moving average" in setup.advanced.editors["ema_decay"].toolTip()
    assert "vocabulary" in setup.advanced.editors["add_missing_characters"].toolTip()
    setup.advanced.editors["ema_decay"].setValue(0.999)
    config = setup.build_config()
    assert (config.engine, config.base_model_dir, config.max_audio_seconds) == ("f5", str(tiny_f5), 30.0)
    assert config.options["ema_decay"] == 0.999
    assert "freeze_conditioning" not in config.options  # the XTTS-only change is not applied
    config.validate(cuda_available=False)
    assert "MB needed for checkpoints" in setup.disk_label.text()  # the tiny model's weights, optimizer moments

    again = _page(qtbot, VoiceProject.open(project.root))  # the project opened again: F5-TTS is its engine
    assert again.setup.engine == "f5" and again.setup.engine_choice.buttons["f5"].isChecked()
    assert again.setup.build_config().engine == "f5"

    _choose(page, "xtts")
    assert _saved_engine(project) == "xtts" and page.setup.build_config().engine == "xtts"
    assert page.setup.build_config().engine_options().freeze_conditioning == flipped  # XTTS's own change is back
    assert "ema_decay" not in page.setup.build_config().options  # and F5's is not applied to XTTS


def test_each_engine_has_its_own_base_model_folder(qtbot, tmp_path, config_dir, tiny_xtts, tiny_f5, dataset,
                                                   monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    app_settings.set_value(F5_KEY, "")
    page = _page(qtbot, _project(tmp_path, dataset))
    _choose(page, "f5")
    text = page.setup.base_label.text()
    assert "F5-TTS v1: not chosen yet" in text and "about 1.4 GB" in text

    app_settings.set_value(F5_KEY, str(tiny_xtts))  # XTTS's folder: said so, not F5's files listed as missing
    page.setup.refresh_facts()
    text = page.setup.base_label.text()
    assert "holds a base model for XTTS v2, not for F5-TTS v1" in text and "choose XTTS v2 as the engine" in text
    (tmp_path / "empty").mkdir()
    app_settings.set_value(F5_KEY, str(tmp_path / "empty"))  # a folder of neither engine: what it lacks
    page.setup.refresh_facts()
    text = page.setup.base_label.text()
    assert "does not hold the F5-TTS v1 files" in text and "model_*.safetensors" in text and "vocab.txt" in text

    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *a, **k: str(tiny_f5))
    page.setup.choose_base.click()
    assert app_settings.get(F5_KEY) == str(tiny_f5) and app_settings.get("base_model_dir") == str(tiny_xtts)
    assert page.setup.base_label.text() == f"F5-TTS v1 found in {tiny_f5}"
    assert page.setup.build_config().base_model_dir == str(tiny_f5)
    _choose(page, "xtts")
    assert page.setup.base_label.text() == f"XTTS v2 found in {tiny_xtts}"


def test_download_shows_the_chosen_engines_licence_first(qtbot, tmp_path, config_dir, dataset, monkeypatch):
    from PySide6.QtWidgets import QFileDialog, QMessageBox

    page = _page(qtbot, _project(tmp_path, dataset))
    asked: list[tuple[str, str]] = []
    monkeypatch.setattr(QMessageBox, "question", lambda _parent, title, text, *a: (
        asked.append((title, text)), QMessageBox.StandardButton.No)[1])
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *a, **k: pytest.fail("no folder without licence"))
    _choose(page, "f5")
    assert "F5-TTS v1 from the Hugging Face Hub (about 1.4 GB)" in page.setup.download_base.toolTip()
    page.setup.download_base.click()
    title, text = asked[-1]
    assert title == "Creative Commons Attribution-NonCommercial 4.0"
    assert "F5-TTS v1 (about 1.4 GB)" in text and "CC BY-NC 4.0" in text and "non-commercial" in text
    assert page.setup.engine_choice.isEnabled()  # declined: nothing downloads, the choice stays open

    _choose(page, "xtts")
    page.setup.download_base.click()
    assert asked[-1][0].startswith("Coqui Public Model License") and "about 2 GB" in asked[-1][1]


def test_the_engines_language_caveat_is_shown_for_the_projects_language(qtbot, tmp_path, config_dir, dataset):
    page = _page(qtbot, _project(tmp_path, dataset, language="de"))
    note = page.setup.engine_choice.note
    assert not note.isVisibleTo(page)  # XTTS v2 speaks German
    _choose(page, "f5")
    assert note.isVisibleTo(page) and "English and Chinese only" in note.text()
    english = _page(qtbot, _project(tmp_path / "en", dataset))
    _choose(english, "f5")
    assert not english.setup.engine_choice.note.isVisibleTo(english)


def _wait_exit(qtbot, page):
    qtbot.waitUntil(lambda: not page.run.is_running() and page.run.supervisor.returncode is not None,
                    timeout=RUN_TIMEOUT_MS)
    qtbot.wait(50)  # let the queued child_exited reach the panel


@pytest.mark.timeout(900)
def test_an_f5_run_from_the_train_page_plots_stops_and_resumes(qtbot, tmp_path, config_dir, tiny_f5, dataset,
                                                               monkeypatch):
    page = _page(qtbot, _project(tmp_path, dataset))
    _choose(page, "f5")
    built = page.setup.build_config
    monkeypatch.setattr(page.setup, "build_config", lambda: replace(built(), **F5_FAST))
    run = page.run
    page.show()
    seen: list = []

    run.start_button.click()
    assert run.is_running() and "Training F5-TTS v1 with the " in page.running_note.text()
    run.supervisor.event_received.connect(seen.append)
    qtbot.waitUntil(lambda: run.history.step >= 2, timeout=RUN_TIMEOUT_MS)
    run.stop_button.click()
    _wait_exit(qtbot, page)
    stopped = run.done_event
    assert run.supervisor.returncode == 0 and stopped.reason == "stopped", run.log.shown_text()[-2000:]
    started = next(e for e in seen if isinstance(e, Started))
    assert started.config["engine"] == "f5" and started.config["base_model_dir"] == str(tiny_f5)
    steps = [e for e in seen if isinstance(e, Step)]
    assert steps and all(e.parts == {} for e in steps)  # F5 has one loss
    assert any(isinstance(e, Eval) and e.step == 0 for e in seen)  # the base model's eval, before step 1
    assert run.resume_button.isEnabled() and "Stopped at step" in run.status.text()

    run.resume_button.click()
    _wait_exit(qtbot, page)
    assert isinstance(run.done_event, Done) and run.done_event.reason == "max_steps", run.log.shown_text()[-2000:]
    assert run.history.loss.x == list(range(1, 7))  # one curve through the stop, each step once
    run.refresh_plots()
    assert len(run.loss_plot.curves["train"].xData) == 6
    assert list(run.loss_plot.curves["eval of the base model (step 0)"].xData) == [0]
    assert len(run.lr_plot.curves["learning rate"].xData) == 6
    assert len(run.memory_plot.curves["process RSS (CPU)"].xData) >= 1
    assert "Finished" in run.summary.text() and "base model before training: " in run.summary.text()
    assert "Traceback" not in run.log.shown_text()
    assert page.setup.engine == "f5"  # the page still shows the engine it trained
