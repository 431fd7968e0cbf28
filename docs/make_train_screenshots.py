"""Render the Train step offscreen to PNG: ``python docs/make_train_screenshots.py``.

Builds a throw-away project on the tiny random XTTS test model (espeak-ng speech as the dataset), opens it in
the main window, and shows the Train step before a run (``docs/images/train_before.png``: device card, memory
profiles with their estimates, Advanced settings, dataset, base model, disk) and during a real training run
started from the page (``docs/images/train_running.png``: plots, progress, log). This machine has no GPU, so
the card says "CPU only" and the memory plot shows the training process's RAM. The tiny model trains fast and
learns nothing useful: the picture shows the page working, not a voice.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
OUT = Path(__file__).parent / "images"


def wait(app, condition, timeout_s: float = 600) -> None:
    end = time.time() + timeout_s
    while not condition():
        if time.time() > end:
            raise TimeoutError("the page did not get there in time")
        app.processEvents()
        time.sleep(0.01)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        os.environ["ALLTALK_GUI_CONFIG_DIR"] = str(tmp_path / "config")  # app settings: the base-model choice
        from alltalk_gui.gui.settings import use_settings_folder

        from alltalk_gui.core.project.folder import VoiceProject
        from alltalk_gui.gui.start import system_checks
        from alltalk_gui.gui.app import create_application
        from alltalk_gui.gui.main_window import MainWindow
        from alltalk_gui.gui.train.train_page import TrainPage
        from alltalk_gui.gui.style import apply_style
        from alltalk_gui.core.engines.xtts.tiny_model import build_tiny_xtts
        from alltalk_gui.testing.speech import make_speech_dataset

        use_settings_folder(tmp_path / "settings")
        base = build_tiny_xtts(tmp_path / "xtts_tiny")
        system_checks.set_base_model_folder(base)
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
        page.setup.advanced.setChecked(True)
        app.processEvents()
        window.grab().save(str(OUT / "train_before.png"))

        # The page's own settings, plus what a quick CPU run of the tiny model needs (short voice prompts, a
        # memory sample per step).
        built = page.setup.build_config
        page.setup.build_config = lambda: replace(built(), device="cpu", epochs=12, batch_size=2,
                                                  grad_accum_steps=1, lr=1e-3, warmup_steps=4, save_every_steps=10,
                                                  min_conditioning_seconds=1.0, max_conditioning_seconds=2.0,
                                                  memory_interval_s=0.0)
        page.setup.advanced.setChecked(False)
        page.run.start_button.click()
        wait(app, lambda: page.run.history.step >= 30 and len(page.run.history.eval_loss.x) >= 3)
        page.run.refresh_plots()
        for _ in range(20):
            app.processEvents()
            time.sleep(0.02)
        window.grab().save(str(OUT / "train_running.png"))
        page.stop_and_wait()
        wait(app, lambda: not page.run.is_running())
        window.close()
    print(f"wrote {OUT / 'train_before.png'} and {OUT / 'train_running.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
