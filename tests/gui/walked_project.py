"""A project as a new user leaves it after the walk, built in a second instead of minutes: two recordings, a
transcript with clean and flagged clips, an exported dataset, and training runs of both engines written as the
training child writes them (events.jsonl, launch_config.json, checkpoints with their state and config; the
weights file is a stand-in: nothing here loads it).

Used by the GUI tests that need every page filled (small screens, one engine in view, flags), where a real
transcription and two real trainings would cost minutes of the shared CPU and add nothing those tests check.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

from alltalk_gui.core.dataset.export import export_dataset
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.training.checkpoints import CONFIG_FILE, STATE_FILE, WEIGHTS_FILE
from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.events import Done, Eval, FinishReason, JsonlSink, Memory, Started, Step
from alltalk_gui.core.training.run_folders import EVENTS_FILE, LAUNCH_CONFIG
from alltalk_gui.core.transcript.flags import ClipChecker
from alltalk_gui.core.transcript.segments import SegmentList, Word
from tests.core.transcript.test_segments_support import add_source, segment, voice_like

TEXTS = ["Learning to cook is mostly about patience.", "Start with simple dishes, like soup or scrambled eggs.",
         "Taste as you go, and add salt a little at a time.", "A sharp knife is safer than a dull one.",
         "Keep your work space clean and tidy.", "When you make a mistake, write it down.",
         "The museum opens at nine in the morning.", "The first hall shows old maps of the city.",
         "Upstairs you will find paintings of the harbour.", "And a small room full of clocks."]


class PlainText:
    """The text check for these tests' plain English texts: nothing to report, and no coqui import."""

    vocab_file = None
    max_chars = None

    def problem(self, text: str) -> str | None:
        return None

    def warm_up(self) -> None:
        pass


def walked_project(root: Path, name: str = "Ada's voice") -> VoiceProject:
    """Recordings, a transcript (clip 3 unsure and "may not be speech" by Whisper's guess), and its dataset."""
    project = VoiceProject.create(root / name, name=name)
    add_source(project, "cooking_tips.wav", voice_like(30.0))
    add_source(project, "museum_tour.wav", voice_like(20.0, seed=1))
    clips = []
    for n, text in enumerate(TEXTS):
        source, slot = ("s001", n) if n < 6 else ("s002", n - 6)
        start = slot * 4500
        clip = segment(f"c{n + 1:05d}", source, start, start + 4000, text)
        if n == 2:  # Whisper unsure of the words and of the speech: two flags
            words = tuple(Word(w.start_ms, w.end_ms, w.text, 0.3) for w in clip.words)
            clip = segment(clip.id, source, start, start + 4000, text, words=words, no_speech_prob=0.8)
        clips.append(clip)
    segments = SegmentList.create(project, clips, checker=ClipChecker("xtts", "en", text_checker=PlainText()))
    export_dataset(project, segments=segments, skip_refused=True)
    segments.close()
    return project


def fake_run(project: VoiceProject, name: str, engine: str, steps: int, *, finished: bool,
             eval_losses: tuple[float, ...] = (3.9, 3.7), start_time: float = 1.8e9) -> Path:
    """A run folder as the training child leaves it: its events, its launch config, a checkpoint per eval."""
    run = project.runs_dir / name
    config = TrainConfig(engine=engine, project_dir=str(project.root), run_name=name, language="en",
                         base_model_dir=str(project.root.parent / f"{engine}_base"), profile="low", epochs=2)
    run.mkdir(parents=True)
    (run / LAUNCH_CONFIG).write_text(json.dumps(config.to_dict()), encoding="utf-8")
    per_epoch = max(1, steps // len(eval_losses))
    t = start_time
    with JsonlSink(run / EVENTS_FILE) as sink:
        sink.write(Started(run_dir=str(run), device="cpu", processes=1, train_clips=8, eval_clips=2,
                           steps_per_epoch=per_epoch, total_steps=per_epoch * len(eval_losses), start_step=0,
                           start_epoch=0, trainable_parameters=700_000, config=config.to_dict(), time=t))
        sink.write(Eval(step=0, epoch=0, loss=eval_losses[0] + 0.3, clips=2, best=False, time=t))
        history = []
        for step in range(1, steps + 1):
            t += 5
            sink.write(Step(step=step, epoch=(step - 1) // per_epoch, loss=4.0 - 0.05 * step, lr=1e-4,
                            grad_norm=1.0, samples_per_s=1.0, step_time_s=5.0,
                            total_steps=per_epoch * len(eval_losses), time=t))
            sink.write(Memory(step=step, stats={"rss": 1.0, "rss_peak": 1.1}, time=t))
            if step % per_epoch == 0:
                loss = eval_losses[step // per_epoch - 1]
                history.append({"step": step, "loss": loss})
                sink.write(Eval(step=step, epoch=step // per_epoch - 1, loss=loss, clips=2, best=True, time=t))
                _checkpoint(run, config, step, step // per_epoch, history)
        if steps % per_epoch:
            _checkpoint(run, config, steps, steps // per_epoch, history)
        reason = FinishReason.FINISHED if finished else FinishReason.STOPPED
        sink.write(Done(step=steps, epoch=steps // per_epoch, reason=reason, final_loss=4.0 - 0.05 * steps,
                        best_eval_loss=min(h["loss"] for h in history) if history else None, best_checkpoint=None,
                        last_checkpoint=str(run / "checkpoints" / f"step_{steps:07d}"), elapsed_s=t - start_time,
                        base_eval_loss=eval_losses[0] + 0.3, time=t))
    return run


def _checkpoint(run: Path, config: TrainConfig, step: int, epoch: int, history: list[dict]) -> None:
    folder = run / "checkpoints" / f"step_{step:07d}"
    folder.mkdir(parents=True)
    (folder / WEIGHTS_FILE).write_bytes(b"stand-in")
    (folder / CONFIG_FILE).write_text(json.dumps(config.to_dict()), encoding="utf-8")
    (folder / STATE_FILE).write_text(json.dumps({"global_step": step, "epoch": epoch, "history": list(history)}),
                                     encoding="utf-8")


@contextmanager
def walked_window(qtbot, root: Path, size: tuple[int, int] = (1400, 950)):
    """The main window, shown, with a :func:`walked_project` open (the device list given, not scanned); the
    project is closed (its text check stops listening) when the block ends."""
    from alltalk_gui.core.machine.gpu import DeviceInfo
    from alltalk_gui.gui.main_window import MainWindow

    project = walked_project(root)
    window = MainWindow()
    qtbot.addWidget(window)
    window.train_page.setup.set_devices([DeviceInfo("cpu", 0, "CPU", 16.0, 12.0, False, cores=2)])
    window.resize(*size)
    window.show()
    qtbot.waitExposed(window)
    window.activateWindow()
    assert window.open_project(str(project.root))
    try:
        yield window
    finally:
        window.transcript_page.shutdown()
        window.set_project(None)
