"""Walk through the whole app as a new user would and grab every page at 1024x700 and at 1400x950:
``python docs/make_walk_screenshots.py [OUT_FOLDER]`` (default ``/tmp/alltalk_walk``).

Welcome, first run, Import (good, clipped, noisy and a damaged file), Transcribe & Edit (faster-whisper tiny.en),
Train (the tiny random XTTS model, a short run started by the one-click Low VRAM button, then its end) and
Preview & Export (references from the dataset, one take). Each picture is named ``<page>_<width>x<height>.png``;
the script prints the window size it really got, so a page that forces the window wider is caught. These
pictures are for looking at, not for the README (the other ``make_*_screenshots.py`` scripts write those).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from offscreen_screen import use_screen  # noqa: E402 (docs/, the script's folder, is on sys.path)

use_screen()  # a screen as large as the pictures: offscreen Qt's own 800x800 one cuts the window
sys.path.insert(0, str(Path(__file__).parent))
SIZES = [(1024, 600), (1400, 950)]


def settle(app, seconds: float = 0.3) -> None:
    end = time.time() + seconds
    while time.time() < end:
        app.processEvents()
        time.sleep(0.01)


def wait(app, condition, timeout_s: float = 900) -> None:
    end = time.time() + timeout_s
    while not condition():
        if time.time() > end:
            raise TimeoutError("the page did not get there in time")
        app.processEvents()
        time.sleep(0.01)


def grab_sizes(app, window, out: Path, name: str) -> None:
    for width, height in SIZES:
        window.resize(width, height)
        settle(app)
        got = window.size()
        window.grab().save(str(out / f"{name}_{width}x{height}.png"))
        note = "" if (got.width(), got.height()) == (width, height) else f"  (window is {got.width()}x{got.height()})"
        print(f"{name} {width}x{height}{note}")


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/alltalk_walk")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        os.environ["ALLTALK_GUI_CONFIG_DIR"] = str(tmp_path / "config")
        from alltalk_gui.gui.settings import use_settings_folder

        from alltalk_gui.core.dataset.export import export_dataset
        from alltalk_gui.core.engines.xtts.tiny_model import build_tiny_xtts
        from alltalk_gui.core.project.folder import VoiceProject
        from alltalk_gui.gui.app import create_application
        from alltalk_gui.gui.main_window import MainWindow
        from alltalk_gui.gui.start import system_checks
        from alltalk_gui.gui.style import apply_style
        from alltalk_gui.testing.tiny_whisper import faster_tiny_en
        from make_screenshots import make_recordings
        from make_transcript_screenshots import transcribe_on_cpu

        use_settings_folder(tmp_path / "settings")
        system_checks.set_base_model_folder(build_tiny_xtts(tmp_path / "xtts_tiny"))
        app = create_application()
        apply_style(app, dark=False)
        window = MainWindow()
        window.show()
        grab_sizes(app, window, out, "welcome")

        window.show_first_run()
        wait(app, lambda: not window.first_run.is_checking(), 300)
        grab_sizes(app, window, out, "first_run")

        recordings = make_recordings(tmp_path)
        (tmp_path / "broken.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEfmt " + os.urandom(200))
        project = VoiceProject.create(tmp_path / "Grandma's voice", name="Grandma's voice")
        window.set_project(project)
        window.sidebar.setCurrentRow(0)
        window.import_page.import_paths(recordings + [str(tmp_path / "broken.wav")])
        wait(app, lambda: not window.import_page.is_importing())
        grab_sizes(app, window, out, "import")

        window.sidebar.setCurrentRow(1)
        page = window.stack.currentWidget()
        transcribe_on_cpu(page)
        wait(app, lambda: 0 < page.panel.overall_bar.value() < 900 or not page.is_busy())
        if page.is_busy():
            grab_sizes(app, window, out, "transcribing")
        wait(app, lambda: page.editor.model.rowCount() > 0 and not page.is_busy())
        page.editor.select(page.editor.model.segment(min(2, page.editor.model.rowCount() - 1)).id)
        grab_sizes(app, window, out, "transcript")
        export_dataset(VoiceProject.open(project.root))

        window.sidebar.setCurrentRow(2)
        train = window.train_page
        wait(app, lambda: bool(train.setup.devices), 300)
        grab_sizes(app, window, out, "train_before")
        train.setup.advanced.setChecked(True)
        grab_sizes(app, window, out, "train_advanced")
        train.setup.advanced.setChecked(False)
        built = train.setup.build_config
        train.setup.build_config = lambda: built().with_values(dict(
            device="cpu", epochs=20, batch_size=1, grad_accum_steps=1, lr=1e-3, warmup_steps=4, save_every_steps=10,
            min_conditioning_seconds=1.0, max_conditioning_seconds=2.0, memory_interval_s=0.0))
        train.setup.picker.low_vram.click()
        wait(app, lambda: train.run.history.step >= 20)
        grab_sizes(app, window, out, "train_running")
        wait(app, lambda: not train.run.is_running())
        train.run.refresh_plots()
        grab_sizes(app, window, out, "train_done")

        train.run.to_preview.click()
        preview = window.stack.currentWidget()
        preview.whisper_model = str(faster_tiny_en())
        preview.generation.set_defaults(preview.generation.defaults.with_values({"max_new_tokens": 30}))
        grab_sizes(app, window, out, "preview")
        preview.compare_button.click()
        wait(app, lambda: not preview.is_busy())
        grab_sizes(app, window, out, "preview_ab")
        window.pages[1].shutdown()
        window.close()
    print(f"screenshots written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
