"""Render the checkpoint judge offscreen to PNG: ``python docs/make_judge_screenshots.py``.

Trains a tiny random XTTS v2 model on the CPU for three epochs (espeak-ng speech as the dataset) with the judge
scoring the base model and each checkpoint from the training process's events, as a real run does (Whisper is the
faster-whisper tiny.en of the test extra; the tiny model's audio is capped at 8 codes, as it rarely stops by
itself). Then it shows the Train page's run panel with the judge's plot (``docs/images/train_judge.png``) and the
Preview page with the judge's table (``docs/images/preview_judge.png``). The tiny model speaks noise: the judge
hears no words (WER 1) and no voice (no likeness) in it, and the pictures show the judge working, not a voice.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from offscreen_screen import use_screen  # noqa: E402 (docs/, the script's folder, is on sys.path)

use_screen()  # a screen as large as the pictures: offscreen Qt's own 800x800 one cuts the window
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = Path(__file__).parent / "images"


def train_judged(root: Path) -> Path:
    from alltalk_gui.core.engines.xtts.tiny_model import build_tiny_xtts
    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.core.training.config import TrainConfig
    from alltalk_gui.core.training.event_text import event_text
    from alltalk_gui.core.training.runner import run_to_sink
    from alltalk_gui.core.voice.judge.in_training import TrainingJudge
    from alltalk_gui.core.voice.preview import GenerationSettings
    from alltalk_gui.testing.speech import make_speech_dataset
    from alltalk_gui.testing.tiny_whisper import faster_tiny_en

    project = VoiceProject.create(root / "voice", name="Judged Voice", language="en")
    make_speech_dataset(project.dataset_dir, n_train=4, n_eval=2)
    config = TrainConfig(project_dir=str(project.root), base_model_dir=str(build_tiny_xtts(root / "tiny_base")),
                         run_name="run1", device="cpu", language="en", epochs=3, batch_size=2, lr=1e-3,
                         warmup_steps=0, keep_last=1, memory_interval_s=1.0, judge_whisper_model=str(faster_tiny_en()))
    judge = TrainingJudge(config, GenerationSettings(options={"max_new_tokens": 8}))
    for event in run_to_sink(config, resume=False, events_path=None, observers=[judge]):
        if event.type in ("judged", "checkpoint", "done"):
            print(event_text(event), flush=True)
    return project.root


def main() -> int:
    from PySide6.QtWidgets import QApplication

    from alltalk_gui.gui.style import apply_style

    app = QApplication([])
    apply_style(app, dark=False)
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        project_dir = train_judged(Path(tmp))
        from alltalk_gui.core.project.folder import VoiceProject
        from alltalk_gui.gui.preview.preview_page import PreviewPage
        from alltalk_gui.gui.train.train_run import RunPanel

        run = RunPanel()
        run.resize(1150, 720)
        run.show_run(project_dir / "runs")
        run.show()
        for _ in range(3):
            app.processEvents()
            run.refresh_plots()
        run.grab().save(str(OUT / "train_judge.png"))
        page = PreviewPage()
        page.resize(1150, 900)
        page.set_project(VoiceProject.open(project_dir))
        page.show()
        app.processEvents()
        page.grab().save(str(OUT / "preview_judge.png"))
        page.judge_table.player.stop()
    print(f"wrote {OUT / 'train_judge.png'} and {OUT / 'preview_judge.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
