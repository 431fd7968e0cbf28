"""The Preview & Export page on a checkpoint trained on the tiny F5-TTS model: the page follows the checkpoint's
engine (one reference clip with its editable words, the sampling steps with a CPU time estimate, F5's export
formats), an A/B pair at 4 steps with Whisper's WER, the words as typed reaching synthesis and the export, and a
project holding runs of both engines switching between them."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from alltalk_gui.core.dataset.metadata import TRAIN_CSV, read_metadata
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.gui.preview.preview_page import PreviewPage
from tests.gui.test_preview_page import _wait_idle, open_page
from tests.trained_voice import trained_voice

pytest.importorskip("f5_tts", reason="f5-tts is not installed: pip install --no-deps f5-tts==1.1.22")



@dataclass(frozen=True)
class F5Voice:
    project: Path
    base_model: Path


@pytest.fixture(scope="module")
def f5_voice(tmp_path_factory) -> F5Voice:
    """A project trained for two epochs (two checkpoints, each with an eval loss) on the tiny F5 model."""
    from alltalk_gui.core.engines.f5.tiny_model import build_tiny_f5
    from alltalk_gui.core.training.config import TrainConfig
    from alltalk_gui.core.training.events import Done
    from alltalk_gui.core.training.loop import train
    from alltalk_gui.testing.speech import make_speech_dataset

    root = tmp_path_factory.mktemp("f5_voice")
    base = build_tiny_f5(root / "f5tts_v1_tiny")
    project = VoiceProject.create(root / "voice", name="F5 Voice", language="en")
    make_speech_dataset(project.dataset_dir, n_train=3, n_eval=1)
    config = TrainConfig(engine="f5", project_dir=str(project.root), base_model_dir=str(base), run_name="f5run",
                         device="cpu", language="en", epochs=2, batch_size=2, lr=1e-3, warmup_steps=0, keep_last=2,
                         max_audio_seconds=30.0, min_audio_seconds=1.0, memory_interval_s=60.0)
    events = list(train(config))
    assert isinstance(events[-1], Done) and events[-1].reason == "finished", events[-1]
    return F5Voice(project.root, base)


@pytest.fixture
def page(qtbot, f5_voice):
    yield from open_page(qtbot, f5_voice.project, steps=4)  # a tiny take: 4 ODE steps


def _dataset_text(project: Path, clip: Path) -> str:
    rows = read_metadata(project / "dataset" / TRAIN_CSV)
    return next(r.text for r in rows if (project / "dataset" / r.audio_file).resolve() == clip.resolve())


def test_an_f5_checkpoint_shows_f5s_inputs_settings_and_formats(page, f5_voice):
    assert page.inputs.engine.name == "f5" and page.selected_checkpoint().engine == "f5"
    picker = page.inputs.picker
    assert picker.caption.text() == "Reference" and picker.clip_box.isVisibleTo(page)
    assert picker.words.isVisibleTo(page) and not picker.label.isVisibleTo(page)
    assert len(page.references) == 1 and picker.clip_box.count() >= 2  # one clip, the others a click away
    assert page.inputs.reference_text() == _dataset_text(f5_voice.project, page.references[0])

    page.generation.toggle.setChecked(True)
    shown = [name for name, box in page.generation.boxes.items() if box.isVisibleTo(page.generation.body)]
    assert shown == ["speed", "seed"]  # F5 reads steps, speed and seed only; steps stay in view
    steps = page.generation.boxes["steps"]
    assert steps.isVisibleTo(page) and not steps.isVisibleTo(page.generation.body)
    assert [steps.itemData(i) for i in range(steps.count())] == [8, 16, 32, 64, 4]
    assert page.generation.settings().options["steps"] == 4
    page.text_box.setCurrentText("Good morning, how are you today?")
    items = [steps.itemText(i) for i in range(steps.count())]
    assert all("(about " in item for item in items), items
    note = page.generation.note.text()
    assert "per take on the CPU" in note and "estimated for 2 cores" in note

    panel = page.export_panel
    assert [panel.format.itemData(i) for i in range(panel.format.count())] == ["alltalk", "f5"]
    assert panel.format.itemText(0) == "AllTalk v2 (models/f5tts/<name>)"
    assert not panel.training_files.isVisibleTo(page) and panel.half.isVisibleTo(page)
    assert "its models/f5tts/" in panel.folder.placeholderText()


@pytest.mark.timeout(600)
def test_an_ab_pair_at_four_steps_with_the_wer(page, qtbot, f5_voice):
    page.text_box.setCurrentText("Hello world.")
    words = page.inputs.reference_text()
    page.compare_button.click()
    assert not page.compare_button.isEnabled()  # one job at a time
    _wait_idle(qtbot, page)
    assert page.message.text() == "", page.message.text()
    row = page.rows[0]
    assert [t.result.label for t in row.takes] == ["base", "fine-tuned"]
    assert "f5run · step 4" in row.takes[1].title.text()
    assert all(t.plot.listDataItems() and t.wer_label.text().startswith("WER ") for t in row.takes)
    for take in row.takes:
        saved = json.loads(take.result.info.read_text())
        assert saved["settings"]["options"]["steps"] == 4 and saved["reference_text"] == words
        assert saved["references"] == [str(page.references[0])] and saved["sample_rate"] == 24000


@pytest.mark.timeout(600)
def test_the_words_as_typed_reach_synthesis_and_none_block_it(page, qtbot):
    words = page.inputs.picker.words
    words.setText("")
    assert not page.generate_button.isEnabled() and not page.compare_button.isEnabled()
    assert "type exactly the words" in page.message.text()
    words.setText("The quick brown fox.")
    assert page.generate_button.isEnabled() and page.message.text() == ""
    page.text_box.setCurrentText("Hello world.")
    page.generate_button.click()
    _wait_idle(qtbot, page)
    saved = json.loads(page.rows[0].takes[0].result.info.read_text())
    assert saved["reference_text"] == "The quick brown fox." and saved["label"] == "fine-tuned"


@pytest.mark.timeout(600)
def test_an_f5_export_through_the_form(page, qtbot, tmp_path, f5_voice):
    panel = page.export_panel
    panel.folder.setText(str(tmp_path))
    panel.format.setCurrentIndex(panel.format.findData("alltalk"))
    panel.half.setChecked(True)
    panel.name.setText("gui voice")
    panel.button.click()
    _wait_idle(qtbot, page)
    folder = tmp_path / "f5tts_v1_gui_voice"  # a name AllTalk lists under models/f5tts
    assert "Exported to" in panel.result.text() and "weights " in panel.result.text(), panel.result.text()
    assert list(folder.glob("model_*.safetensors")) and (folder / "vocab.txt").is_file()
    clip_words = page.inputs.reference_text()
    words_file = folder / "voices" / "gui_voice.reference.txt"  # beside voices/gui_voice.wav, as AllTalk keeps them
    assert words_file.read_text().strip() == clip_words

    # Corrected words go with the export; the dataset's own transcript is not touched.
    page.inputs.picker.words.setText("The quick brown fox.")
    panel.overwrite.setChecked(True)
    panel.button.click()
    _wait_idle(qtbot, page)
    assert "Exported to" in panel.result.text(), panel.result.text()
    assert words_file.read_text().strip() == "The quick brown fox."
    assert _dataset_text(f5_voice.project, page.references[0]) == clip_words


def test_a_project_with_runs_of_both_engines_follows_the_chosen_checkpoint(qtbot, tmp_path, f5_voice,
                                                                         tmp_path_factory):
    xtts = trained_voice(tmp_path_factory)
    project = tmp_path / "both"
    shutil.copytree(f5_voice.project, project)
    shutil.copytree(xtts.project / "runs" / xtts.run, project / "runs" / "xttsrun")
    page = PreviewPage()
    qtbot.addWidget(page)
    page.set_project(VoiceProject.open(project))
    box = page.checkpoint_box
    labels = [box.itemText(i) for i in range(box.count())]

    box.setCurrentIndex(next(i for i, label in enumerate(labels) if label.startswith("XTTS v2 · xttsrun")))
    assert page.inputs.engine.name == "xtts" and page.inputs.picker.label.isVisibleTo(page)
    assert not page.inputs.picker.words.isVisibleTo(page) and len(page.references) > 1
    assert "steps" not in page.generation.boxes and page.generation.note.text() == ""
    assert page.generation.boxes["temperature"].isVisibleTo(page.generation.body)
    assert page.export_panel.format.findData("coqui") >= 0 and page.export_panel.training_files.isVisibleTo(page)

    box.setCurrentIndex(next(i for i, label in enumerate(labels) if label.startswith("F5-TTS v1 · f5run")))
    assert page.inputs.engine.name == "f5" and page.inputs.picker.words.isVisibleTo(page)
    assert len(page.references) == 1 and page.inputs.reference_text()
    assert page.export_panel.format.findData("coqui") < 0 and page.export_panel.format.findData("f5") >= 0


@pytest.mark.timeout(900)
def test_an_f5_export_after_an_xtts_export_lands_in_models_f5tts(qtbot, tmp_path, f5_voice, tmp_path_factory):
    """The walk's case, end to end: the XTTS voice exported with AllTalk's models/xtts chosen, then the F5 voice
    from the same form: it goes into models/f5tts (shown before Export), where AllTalk looks for F5 voices."""
    xtts = trained_voice(tmp_path_factory)
    project = tmp_path / "both"
    shutil.copytree(f5_voice.project, project)
    shutil.copytree(xtts.project / "runs" / xtts.run, project / "runs" / "xttsrun")
    root = tmp_path / "alltalk_tts"
    (root / "models" / "xtts").mkdir(parents=True)
    page = PreviewPage()
    qtbot.addWidget(page)
    page.set_project(VoiceProject.open(project))
    panel, box = page.export_panel, page.checkpoint_box
    labels = [box.itemText(i) for i in range(box.count())]

    box.setCurrentIndex(next(i for i, label in enumerate(labels) if label.startswith("XTTS v2 · xttsrun")))
    panel.folder.setText(str(root / "models" / "xtts"))
    panel.name.setText("Ada's voice")
    panel.button.click()
    _wait_idle(qtbot, page)
    assert (root / "models" / "xtts" / "Adas_voice" / "model.pth").is_file(), panel.result.text()

    box.setCurrentIndex(next(i for i, label in enumerate(labels) if label.startswith("F5-TTS v1 · f5run")))
    target = root / "models" / "f5tts" / "f5tts_v1_Adas_voice"
    assert f"Exports to <b>{target}</b>" in panel.result.text()  # before Export is pressed
    panel.button.click()
    _wait_idle(qtbot, page)
    assert list(target.glob("model_*.safetensors")) and "Exported to" in panel.result.text(), panel.result.text()
    assert sorted(p.name for p in (root / "models" / "xtts").iterdir()) == ["Adas_voice"]  # nothing F5 there
