"""Render the Train and Preview steps with Orpheus-TTS and Parler-TTS offscreen to PNG:
``python docs/make_orpheus_parler_screenshots.py [orpheus] [parler]`` (both by default).

For each engine, builds a throw-away project that trains with it on the engine's tiny random model of the real
architecture (espeak-ng speech as the dataset, written at the engine's rate as the export would) and shows the
Train page before a run with the Advanced settings open (``docs/images/train_orpheus.png``: its profiles and
estimates, its options, the speaker name it learns the voice under; ``train_parler.png``: the voice description
measured from the recordings, Parler's reference), trains two short epochs of the tiny model in the training child,
and generates one sentence on the Preview page
(``preview_orpheus.png``: spoken as the speaker name; ``preview_parler.png``: spoken as the description). Parler runs
in its own environment (``alltalk-gui engine-env parler`` makes it once). The tiny models speak noise: the pictures
show the pages working, not a voice.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from make_train_screenshots import OUT, settle, wait  # noqa: E402 (docs/ is on sys.path)

ENGINES = ("orpheus", "parler")
BASE_KEYS = {"orpheus": "orpheus_base_model_dir", "parler": "parler_base_model_dir"}
TINY_TAKES = {"orpheus": {"max_seconds": 0.9}, "parler": {"max_seconds": 0.5}}  # the tiny models never stop


def main(engines: list[str]) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        os.environ["ALLTALK_GUI_CONFIG_DIR"] = str(tmp_path / "config")  # app settings: the base-model choices
        from alltalk_gui.gui.settings import use_settings_folder

        from alltalk_gui.core import app_settings
        from alltalk_gui.core.engine_api.engine import get_engine
        from alltalk_gui.core.project.folder import VoiceProject
        from alltalk_gui.gui.app import create_application
        from alltalk_gui.gui.main_window import MainWindow
        from alltalk_gui.gui.style import apply_style
        from alltalk_gui.gui.train.train_page import TrainPage

        use_settings_folder(tmp_path / "settings")
        app = create_application()
        apply_style(app, dark=False)
        OUT.mkdir(exist_ok=True)
        window = MainWindow()
        window.resize(1280, 960)
        window.show()
        written = []
        for name in engines:
            base = get_engine(name).make_test_model(tmp_path / f"{name}_tiny")
            app_settings.set_value(BASE_KEYS[name], str(base))
            project = make_project(tmp_path / name, name)
            window.set_project(VoiceProject.open(project.root))
            window.sidebar.setCurrentRow(2)
            page = window.stack.currentWidget()
            assert isinstance(page, TrainPage)
            wait(app, lambda: bool(page.setup.devices))  # the device list comes from a child process
            written.append(render_train(app, window, page, name))
            train_tiny_voice(project.root, name, base)
            written.append(render_preview(app, window, name))
        window.close()
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


def make_project(folder: Path, name: str):
    """A project that trains with ``name``, its dataset as the export writes it for that engine: espeak-ng speech at
    the engine's rate, the project's speaker name in the metadata, the engine and rate recorded."""
    import soundfile as sf

    from alltalk_gui.core.audio.decode import resample
    from alltalk_gui.core.dataset.export import speaker_name
    from alltalk_gui.core.dataset.info import write_info
    from alltalk_gui.core.engine_api.engine import get_engine
    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.testing.speech import make_speech_dataset

    project = VoiceProject.create(folder / "Grandma's voice", name="Grandma's voice", language="en", engine=name)
    make_speech_dataset(project.dataset_dir, n_train=4, n_eval=1, speaker=speaker_name(project))
    rate = get_engine(name).sample_rate
    for wav in sorted((project.dataset_dir / "wavs").glob("*.wav")):
        audio, spoken_rate = sf.read(str(wav), dtype="float32")
        sf.write(str(wav), resample(audio, spoken_rate, rate), rate)
    write_info(project.dataset_dir, name, rate)
    return project


def render_train(app, window, page, name: str) -> Path:
    """``name``'s Train page before a run: its profiles and estimates, the voice prompt it learns the voice under
    (read, or measured from the recordings, in a worker), the Advanced settings open."""
    editor = page.setup.voice_prompt
    wait(app, lambda: bool(editor.text.toPlainText()), timeout_s=300)
    page.setup.advanced.setChecked(True)
    page.scroll.verticalScrollBar().setValue(0)
    settle(app)
    path = OUT / f"train_{name}.png"
    window.grab().save(str(path))
    return path


def train_tiny_voice(root: Path, name: str, base: Path) -> None:
    """Two short epochs of the tiny model, in the training child as the page starts it (Parler's environment)."""
    from alltalk_gui.core.training.config import TrainConfig
    from alltalk_gui.core.training.launch import start_training

    config = TrainConfig(engine=name, project_dir=str(root), base_model_dir=str(base), run_name=f"{name}_run",
                         device="cpu", language="en", epochs=2, batch_size=2, lr=1e-3, warmup_steps=0, keep_last=2,
                         max_audio_seconds=30.0, min_audio_seconds=1.0, memory_interval_s=60.0)
    if name == "orpheus":
        config = config.with_values({"base_weights": "fp32", "lora_rank": 4, "lora_alpha": 8.0})  # as its tests train
    child = start_training(config, lower_priority=False)
    if child.process.wait(timeout=900) != 0:
        raise RuntimeError(f"the {name} training child failed: see {config.run_dir}")


def render_preview(app, window, name: str) -> Path:
    """The Preview page on the run just made: one sentence generated, the advanced generation settings open."""
    from PySide6.QtCore import QEvent

    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.gui.preview.preview_page import PreviewPage
    from alltalk_gui.testing.tiny_whisper import faster_tiny_en

    window.sidebar.setCurrentRow(3)
    page = window.stack.currentWidget()
    assert isinstance(page, PreviewPage)
    page.whisper_model = str(faster_tiny_en())
    page.set_project(VoiceProject.open(window.project.root))  # the new run's checkpoints
    # The previous project's takes are deleteLater'd: without an event loop of its own the script delivers that.
    app.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    page.generation.set_defaults(page.generation.defaults.with_values(TINY_TAKES[name]))
    page.text_box.setCurrentIndex(0)
    page.generate_button.click()
    wait(app, lambda: not page.is_busy(), timeout_s=600)
    page.generation.toggle.setChecked(True)
    settle(app)
    path = OUT / f"preview_{name}.png"
    window.grab().save(str(path))
    return path


if __name__ == "__main__":
    sys.exit(main([a for a in sys.argv[1:] if a in ENGINES] or list(ENGINES)))
