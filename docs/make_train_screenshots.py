"""Render the Train step offscreen to PNG: ``python docs/make_train_screenshots.py [xtts] [f5]`` (both by default).

Builds a throw-away project on the tiny random test models (espeak-ng speech as the dataset), opens it in the
main window, and shows the Train step before a run with XTTS v2 (``docs/images/train_before.png``: engine, device
card, memory profiles with their estimates, Advanced settings, dataset, base model, disk), during a real XTTS
training run started from the page (``docs/images/train_running.png``: plots, progress, log), and with F5-TTS v1
chosen (``docs/images/train_f5.png``: its profiles and estimates, its Advanced fields, its base model). This
machine has no GPU, so the card says "CPU only" and the memory plot shows the training process's RAM. The tiny
models train fast and learn nothing useful: the pictures show the page working, not a voice.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from offscreen_screen import use_screen  # noqa: E402 (docs/, the script's folder, is on sys.path)

use_screen()  # a screen as large as the pictures: offscreen Qt's own 800x800 one cuts the window
OUT = Path(__file__).parent / "images"


def wait(app, condition, timeout_s: float = 600) -> None:
    end = time.time() + timeout_s
    while not condition():
        if time.time() > end:
            raise TimeoutError("the page did not get there in time")
        app.processEvents()
        time.sleep(0.01)


def main(engines: list[str]) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        os.environ["ALLTALK_GUI_CONFIG_DIR"] = str(tmp_path / "config")  # app settings: the base-model choice
        from alltalk_gui.gui.settings import use_settings_folder

        from alltalk_gui.core import app_settings
        from alltalk_gui.core.project.folder import VoiceProject
        from alltalk_gui.gui.start import system_checks
        from alltalk_gui.gui.app import create_application
        from alltalk_gui.gui.main_window import MainWindow
        from alltalk_gui.gui.train.train_page import TrainPage
        from alltalk_gui.gui.style import apply_style
        from alltalk_gui.core.engines.f5.tiny_model import build_tiny_f5
        from alltalk_gui.core.engines.xtts.tiny_model import build_tiny_xtts
        from alltalk_gui.testing.speech import make_speech_dataset

        use_settings_folder(tmp_path / "settings")
        system_checks.set_base_model_folder(build_tiny_xtts(tmp_path / "xtts_tiny"))
        app_settings.set_value("f5_base_model_dir", str(build_tiny_f5(tmp_path / "f5tts_v1_tiny")))
        project = VoiceProject.create(tmp_path / "Grandma's voice", name="Grandma's voice")
        make_speech_dataset(project.dataset_dir, n_train=8, n_eval=2)

        app = create_application()
        apply_style(app, dark=False)
        OUT.mkdir(exist_ok=True)
        window = MainWindow()
        window.resize(1280, 960)
        window.show()
        window.set_project(VoiceProject.open(project.root))
        window.sidebar.setCurrentRow(2)
        page = window.stack.currentWidget()
        assert isinstance(page, TrainPage)
        wait(app, lambda: bool(page.setup.devices))  # the device list comes from a child process
        written = []
        if "xtts" in engines:
            written += render_xtts(app, window, page)
        if "f5" in engines:
            written += render_f5(app, window, page)
        window.close()
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


def settle(app) -> None:
    for _ in range(20):
        app.processEvents()
        time.sleep(0.02)


def choose_engine(app, page, name: str) -> None:
    """Choose ``name`` on the Train page as a user who says yes to the switch's question (the switch may rewrite
    the dataset at the engine's rate, in a worker), and wait until the page shows it."""
    page.setup.ask_switch = lambda change: True  # offscreen nobody could answer the question box
    page.setup.engine_choice.buttons[name].click()
    wait(app, lambda: not page.setup.switcher.is_running() and page.setup.engine_choice.isEnabled())
    assert page.setup.engine == name, f"the page shows {page.setup.engine}, not {name}"
    page.scroll.verticalScrollBar().setValue(0)
    settle(app)


def render_xtts(app, window, page) -> list[Path]:
    """XTTS v2 before a run (Advanced open) and during a real run of the tiny model."""
    choose_engine(app, page, "xtts")
    page.setup.advanced.setChecked(True)
    settle(app)
    window.grab().save(str(OUT / "train_before.png"))

    # The page's own settings, plus what a quick CPU run of the tiny model needs (short voice prompts, a
    # memory sample per step).
    built = page.setup.build_config
    page.setup.build_config = lambda: built().with_values(dict(
        device="cpu", epochs=12, batch_size=2, grad_accum_steps=1, lr=1e-3, warmup_steps=4, save_every_steps=10,
        min_conditioning_seconds=1.0, max_conditioning_seconds=2.0, memory_interval_s=0.0))
    page.setup.advanced.setChecked(False)
    page.run.start_button.click()
    wait(app, lambda: page.run.history.step >= 30 and len(page.run.history.eval_loss.x) >= 3)
    page.run.refresh_plots()
    settle(app)
    window.grab().save(str(OUT / "train_running.png"))
    page.stop_and_wait()
    wait(app, lambda: not page.run.is_running())
    del page.setup.build_config  # the page's own method again
    return [OUT / "train_before.png", OUT / "train_running.png"]


def render_f5(app, window, page) -> list[Path]:
    """F5-TTS v1 chosen, before a run, with the Advanced settings open (EMA decay, missing characters)."""
    choose_engine(app, page, "f5")
    page.setup.advanced.setChecked(True)
    page.scroll.verticalScrollBar().setValue(0)
    settle(app)
    window.grab().save(str(OUT / "train_f5.png"))
    return [OUT / "train_f5.png"]


if __name__ == "__main__":
    sys.exit(main([a for a in sys.argv[1:] if a in ("xtts", "f5")] or ["xtts", "f5"]))
