"""Render a Chinese project in the Transcribe & Edit step offscreen to PNG: ``python docs/make_chinese_screenshot.py``.

Builds a throw-away zh-cn project, brings in a small LJSpeech-style dataset folder of espeak-ng Mandarin
(``Import dataset…``: the clips arrive with their Chinese text), corrects one clip's text and leaves one clip
whose text XTTS's Chinese check flags, and grabs the main window: ``docs/images/transcript_chinese.png``.
Needs a CJK font (Debian: fonts-noto-cjk, installed by packaging/system_packages.sh).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from offscreen_screen import use_screen  # noqa: E402 (docs/, the script's folder, is on sys.path)

use_screen()  # a screen as large as the pictures: offscreen Qt's own 800x800 one cuts the window
OUT = Path(__file__).parent / "images"

SENTENCES = [
    "今天天气很好，我们去公园散步吧。",
    "公园里有很多人在跑步和打太极拳。",
    "我们走了一个小时，然后回家吃饭。",
    "晚上我们一起看了一部很好看的电影。",
    "谢谢你们，明天见！",
    "奶奶做的饺子是世界上最好吃的。",
    "下雨的时候，我喜欢在家里看书。",
    "这个周末我们打算去海边看日出。",
]


def wait(app, condition) -> None:
    while not condition():
        app.processEvents()


def main() -> int:
    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.gui.app import create_application
    from alltalk_gui.gui.main_window import MainWindow
    from alltalk_gui.gui.settings import use_settings_folder
    from alltalk_gui.gui.style import apply_style
    from alltalk_gui.testing.speech import synthesize

    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        use_settings_folder(tmp_path / "settings")
        app = create_application()
        apply_style(app, dark=False)
        data = tmp_path / "普通话数据"
        (data / "wavs").mkdir(parents=True)
        for i, text in enumerate(SENTENCES):
            synthesize(text, data / "wavs" / f"zh_{i:02d}.wav", voice="cmn", words_per_minute=120)
        (data / "metadata.csv").write_text("".join(f"zh_{i:02d}|{t}\n" for i, t in enumerate(SENTENCES)),
                                           encoding="utf-8")
        window = MainWindow()
        window.resize(1280, 820)
        window.show()
        project = VoiceProject.create(tmp_path / "奶奶的声音", name="奶奶的声音", language="zh-cn")
        window.set_project(project)
        window.sidebar.setCurrentRow(1)
        page = window.pages[1]
        page.import_dataset(str(data))
        wait(app, lambda: page.segments is not None and len(page.segments) == len(SENTENCES))
        editor = page.editor
        clips = page.segments.segments
        page.segments.set_text(clips[5].id, "奶奶做的饺子是世界上最好吃的 ☺")  # a symbol XTTS cannot read: flagged
        # The text check answers from a child process: wait for its flag, or the picture shows the clip unflagged.
        wait(app, lambda: not page.segments.text_checks_pending)
        editor.select(clips[2].id)
        app.processEvents()
        window.grab().save(str(OUT / "transcript_chinese.png"))
        page.shutdown()
        window.close()
    print(f"screenshot written to {OUT / 'transcript_chinese.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
