"""Render the app's pages offscreen to PNG for the README: ``python docs/make_screenshots.py``.

Builds a throw-away project from espeak-ng speech (plus one deliberately clipped and one noisy recording, so
the verdicts show), imports it through the real import page, and grabs the window.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf

from offscreen_screen import use_screen  # noqa: E402 (docs/, the script's folder, is on sys.path)

use_screen()  # a screen as large as the pictures: offscreen Qt's own 800x800 one cuts the window
OUT = Path(__file__).parent / "images"

SENTENCES = [
    "The morning light came through the kitchen window and settled on the table.",
    "We walked along the river until the path turned towards the old mill.",
    "She laughed, put down her cup, and started telling the story again from the beginning.",
]


def make_recordings(folder: Path) -> list[str]:
    from alltalk_gui.testing.speech import synthesize

    paths = []
    for i, text in enumerate(SENTENCES, start=1):
        paths.append(str(synthesize(text, folder / f"chapter_{i}.wav")))
    speech, sr = sf.read(paths[0], dtype="float32")
    sf.write(folder / "too_loud.flac", np.clip(speech * 6, -1, 1), sr)
    rng = np.random.default_rng(0)
    sf.write(folder / "street_noise.ogg", speech + 0.05 * rng.standard_normal(len(speech)).astype("float32"), sr)
    return paths + [str(folder / "too_loud.flac"), str(folder / "street_noise.ogg")]


def main() -> int:
    from alltalk_gui.gui.settings import use_settings_folder

    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.gui.app import create_application
    from alltalk_gui.gui.main_window import MainWindow
    from alltalk_gui.gui.style import apply_style

    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        use_settings_folder(tmp_path / "settings")
        app = create_application()
        apply_style(app, dark=False)
        window = MainWindow()
        window.resize(1180, 720)
        window.show()
        app.processEvents()
        window.grab().save(str(OUT / "welcome.png"))

        recordings = make_recordings(tmp_path)
        project = VoiceProject.create(tmp_path / "Grandma's voice", name="Grandma's voice")
        window.set_project(project)
        page = window.import_page
        page.import_paths(recordings + [str(tmp_path / "notes.txt")])
        (tmp_path / "notes.txt").write_text("not audio")
        while page.is_importing():
            app.processEvents()
        app.processEvents()
        window.grab().save(str(OUT / "import.png"))
        window.close()
    print(f"screenshots written to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
