"""Render the main pages on a 1024x600 screen (a small laptop's) offscreen to PNG:
``python docs/make_small_screen_screenshots.py``.

Welcome, first run, Import, Transcribe & Edit (faster-whisper tiny.en), Train before a run with each engine the app
lists (XTTS v2, F5-TTS v1, Orpheus-TTS: each on its tiny random test model) and Preview & Export (the tiny XTTS
voice of ``make_preview_screenshots``, one A/B take), each at the window size 1024x600 on a 1024x600 screen, into
``docs/images/small/``. The script prints the size each window really had and stops when a page made it larger,
so a page that no longer fits the screen is caught. It reuses the other scripts' recordings, tiny voice and
Train-page helpers; the pictures show the pages' layout, not a voice.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from make_preview_screenshots import train_tiny_voice
from make_screenshots import make_recordings
from make_train_screenshots import choose_engine, settle, wait
from make_transcript_screenshots import transcribe_on_cpu
from offscreen_screen import use_screen

SIZE = (1024, 600)
use_screen(*SIZE)  # after the imports: each script asks for its own large screen when imported
OUT = Path(__file__).parent / "images" / "small"


def grab(app, window, name: str) -> Path:
    """The window at 1024x600, saved small; fails when a page forced the window larger than the screen."""
    from PIL import Image

    window.resize(*SIZE)
    settle(app)
    got = (window.width(), window.height())
    print(f"{name}: window {got[0]}x{got[1]}", flush=True)
    if got != SIZE:
        raise SystemExit(f"{name}: the window is {got[0]}x{got[1]}, not {SIZE[0]}x{SIZE[1]}")
    path = OUT / f"{name}.png"
    window.grab().save(str(path))
    Image.open(path).save(path, optimize=True)
    return path


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        os.environ["ALLTALK_GUI_CONFIG_DIR"] = str(tmp_path / "config")  # app settings: the base-model choices
        from alltalk_gui.core.dataset.export import export_dataset
        from alltalk_gui.core.engine_api.engine import engine_names, get_engine
        from alltalk_gui.core.project.folder import VoiceProject
        from alltalk_gui.gui.app import create_application
        from alltalk_gui.gui.main_window import MainWindow
        from alltalk_gui.gui.settings import use_settings_folder
        from alltalk_gui.gui.start import system_checks
        from alltalk_gui.gui.style import apply_style
        from alltalk_gui.testing.tiny_whisper import faster_tiny_en

        use_settings_folder(tmp_path / "settings")
        for name in engine_names():  # every engine's tiny random base model, chosen as the user's
            system_checks.set_base_model_folder(get_engine(name).make_test_model(tmp_path / f"{name}_tiny"), name)
        app = create_application()
        apply_style(app, dark=False)
        screen = app.primaryScreen().geometry()
        print(f"screen {screen.width()}x{screen.height()}", flush=True)
        window = MainWindow()
        window.show()
        written = [grab(app, window, "welcome")]

        window.show_first_run()
        wait(app, lambda: not window.first_run.is_checking())
        written.append(grab(app, window, "first_run"))

        project = VoiceProject.create(tmp_path / "Grandma's voice", name="Grandma's voice")
        window.set_project(project)
        window.sidebar.setCurrentRow(0)
        window.import_page.import_paths(make_recordings(tmp_path))
        wait(app, lambda: not window.import_page.is_importing())
        written.append(grab(app, window, "import"))

        window.sidebar.setCurrentRow(1)
        page = window.stack.currentWidget()
        transcribe_on_cpu(page)
        wait(app, lambda: page.editor.model.rowCount() > 0 and not page.is_busy())
        page.editor.select(page.editor.model.segment(min(2, page.editor.model.rowCount() - 1)).id)
        written.append(grab(app, window, "transcript"))
        export_dataset(VoiceProject.open(project.root))

        window.sidebar.setCurrentRow(2)
        train = window.train_page
        wait(app, lambda: bool(train.setup.devices))  # the device list comes from a child process
        for name in engine_names():
            choose_engine(app, train, name)
            written.append(grab(app, window, f"train_{name}"))

        window.set_project(VoiceProject.open(train_tiny_voice(tmp_path / "preview")))
        window.sidebar.setCurrentRow(3)
        preview = window.stack.currentWidget()
        preview.whisper_model = str(faster_tiny_en())
        preview.generation.set_defaults(preview.generation.defaults.with_values({"max_new_tokens": 30}))
        preview.text_box.setCurrentIndex(0)
        preview.compare_button.click()
        wait(app, lambda: not preview.is_busy())
        written.append(grab(app, window, "preview"))
        window.pages[1].shutdown()  # the transcript page's workers
        window.close()
    total = sum(p.stat().st_size for p in written)
    print(f"wrote {len(written)} pictures ({total / 1e6:.2f} MB) into {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
