"""Orpheus-TTS on the app's pages, offscreen: the Train page offers it with its profiles, estimates and Advanced
option (base weights), and trains the tiny Orpheus model a few steps in its child process with both loss parts
plotted; the Preview page speaks a checkpoint as its speaker name (filled in from the run), A/B with the base
model at 24 kHz, and exports it as a Hugging Face folder through the form. Each page is rendered to a PNG
(``docs/images/train_orpheus.png``, ``preview_orpheus.png`` when ``ALLTALK_GUI_SCREENSHOTS`` names a folder)."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from alltalk_gui.core import app_settings
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.training.events import Done, Started, Step
from tests.gui.test_preview_page import _wait_idle, open_page
from tests.gui.test_train_engine import _page, _project, _wait_exit
from tests.orpheus_tiny import tiny_orpheus_folder

ORPHEUS_KEY = "orpheus_base_model_dir"
FAST = dict(device="cpu", lr=1e-3, warmup_steps=0, memory_interval_s=0.0, save_every_steps=1, keep_last=2,
            epochs=30, batch_size=1, grad_accum_steps=1, max_steps=3)


def screenshot(qtbot, widget, name: str) -> None:
    """Render ``widget`` at 1200 x 1000 to ``$ALLTALK_GUI_SCREENSHOTS/name`` when that variable names a folder."""
    folder = os.environ.get("ALLTALK_GUI_SCREENSHOTS")
    if folder:
        widget.resize(1200, 1000)
        widget.show()
        qtbot.wait(200)
        Path(folder).mkdir(parents=True, exist_ok=True)
        widget.grab().save(str(Path(folder) / name))


@pytest.fixture(scope="module")
def tiny_orpheus(tmp_path_factory) -> Path:
    return tiny_orpheus_folder(tmp_path_factory)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    from alltalk_gui.testing.speech import make_speech_dataset

    folder = tmp_path_factory.mktemp("speech") / "dataset"
    make_speech_dataset(folder, n_train=3, n_eval=1, speaker="Voice")
    return folder


@pytest.fixture
def config_dir(tmp_path, monkeypatch, tiny_orpheus):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    app_settings.set_value(ORPHEUS_KEY, str(tiny_orpheus))
    return tmp_path / "config"


@pytest.mark.timeout(900)
def test_the_train_page_offers_orpheus_and_trains_it(qtbot, tmp_path, config_dir, tiny_orpheus, dataset,
                                                     monkeypatch):
    project = _project(tmp_path, dataset)
    page = _page(qtbot, project)
    page.setup.ask_switch = lambda change: True  # the switch rewrites the dataset at 24 kHz: the user goes ahead
    page.setup.engine_choice.buttons["orpheus"].click()
    qtbot.waitUntil(lambda: not page.setup.switcher.is_running() and page.setup.engine_choice.isEnabled(),
                    timeout=120_000)  # the switch works in a worker
    assert page.setup.engine == "orpheus"
    setup, picker = page.setup, page.setup.picker
    assert VoiceProject.open(project.root).engine == "orpheus"
    assert setup.base_label.text() == f"Orpheus-TTS 3B found in {tiny_orpheus}"
    assert "6 GB card" in picker.summaries["low"].text() and "24 GB card" in picker.summaries["high"].text()
    assert all("GiB" in label.text() for label in picker.fit_labels.values())
    assert "4 bits" in setup.advanced.editors["base_weights"].toolTip()
    config = setup.build_config()
    assert config.engine == "orpheus" and config.max_audio_seconds == 30.0
    config.validate(cuda_available=False)

    built = setup.build_config
    monkeypatch.setattr(setup, "build_config", lambda: replace(built(), **FAST))
    run = page.run
    page.show()
    seen: list = []
    run.start_button.click()
    assert run.is_running() and "Training Orpheus-TTS 3B with the " in page.running_note.text()
    run.supervisor.event_received.connect(seen.append)
    _wait_exit(qtbot, page)
    assert isinstance(run.done_event, Done) and run.done_event.reason == "max_steps", run.log.shown_text()[-3000:]
    started = next(e for e in seen if isinstance(e, Started))
    assert started.config["engine"] == "orpheus" and started.config["base_model_dir"] == str(tiny_orpheus)
    steps = [e for e in seen if isinstance(e, Step)]
    assert steps and all(set(e.parts) == {"audio_ce", "end_ce"} for e in steps)
    run.refresh_plots()
    assert len(run.loss_plot.curves["train"].xData) == 3
    assert "Traceback" not in run.log.shown_text()
    screenshot(qtbot, page, "train_orpheus.png")


@pytest.fixture(scope="module")
def orpheus_voice(tmp_path_factory, tiny_orpheus, dataset):
    """A project trained for 2 epochs (LoRA, two checkpoints with eval losses) on the tiny Orpheus model."""
    import shutil

    from alltalk_gui.core.training.config import TrainConfig
    from alltalk_gui.core.training.loop import train

    root = tmp_path_factory.mktemp("orpheus_voice")
    project = VoiceProject.create(root / "voice", name="Voice", language="en")
    project.choose_engine("orpheus")
    shutil.copytree(dataset, project.dataset_dir, dirs_exist_ok=True)
    config = TrainConfig(engine="orpheus", project_dir=str(project.root), base_model_dir=str(tiny_orpheus),
                         run_name="orpheusrun", device="cpu", language="en", epochs=2, batch_size=2, lr=1e-3,
                         warmup_steps=0, keep_last=2, max_audio_seconds=30.0, min_audio_seconds=1.0,
                         memory_interval_s=60.0, lora_rank=4, lora_alpha=8.0).with_values({"base_weights": "fp32"})
    events = list(train(config))
    assert isinstance(events[-1], Done) and events[-1].reason == "finished", events[-3:]
    return project.root


@pytest.fixture
def preview(qtbot, orpheus_voice):
    yield from open_page(qtbot, orpheus_voice, max_seconds=0.9)  # 10 frames a take: quick on the tiny model


def test_the_preview_page_speaks_as_the_speaker_name(preview, qtbot):
    page = preview
    assert page.inputs.engine.name == "orpheus" and page.selected_checkpoint().engine == "orpheus"
    picker = page.inputs.picker
    assert picker.speaker.isVisibleTo(page) and picker.speaker.text() == "Voice"  # from the run's dataset
    assert not picker.words.isVisibleTo(page) and page.references == []
    page.generation.toggle.setChecked(True)
    shown = [name for name, box in page.generation.boxes.items() if box.isVisibleTo(page.generation)]
    assert {"temperature", "top_p", "repetition_penalty"} <= set(shown)
    assert page.generation.settings().options["max_seconds"] == 0.9

    page.text_box.setCurrentText("Hello world.")
    page.compare_button.click()
    _wait_idle(qtbot, page)
    assert page.message.text() == "", page.message.text()
    row = page.rows[0]
    assert [t.result.label for t in row.takes] == ["base", "fine-tuned"]
    for take in row.takes:
        saved = json.loads(take.result.info.read_text())
        assert saved["reference_text"] == "Voice" and saved["sample_rate"] == 24000
    picker.speaker.setText("")
    assert not page.generate_button.isEnabled()  # Orpheus speaks only as a speaker name
    picker.speaker.setText("Voice")
    screenshot(qtbot, page, "preview_orpheus.png")


@pytest.mark.timeout(600)
def test_an_orpheus_export_through_the_form(preview, qtbot, tmp_path):
    page = preview
    panel = page.export_panel
    assert [panel.format.itemData(i) for i in range(panel.format.count())] == ["orpheus", "lora"]
    panel.folder.setText(str(tmp_path))
    panel.format.setCurrentIndex(panel.format.findData("orpheus"))
    panel.name.setText("gui voice")
    panel.button.click()
    _wait_idle(qtbot, page)
    folder = tmp_path / "gui_voice"
    assert "Exported to" in panel.result.text(), panel.result.text()
    assert (folder / "model.safetensors").is_file() and (folder / "snac" / "pytorch_model.bin").is_file()
    assert "`Voice`" in (folder / "README.md").read_text()
    panel.format.setCurrentIndex(panel.format.findData("lora"))
    panel.name.setText("gui adapter")
    panel.button.click()
    _wait_idle(qtbot, page)
    assert (tmp_path / "gui_adapter" / "adapter_model.safetensors").is_file(), panel.result.text()
