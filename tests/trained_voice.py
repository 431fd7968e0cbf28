"""A voice project trained for a few steps on the tiny XTTS model, shared by the preview and export tests.

Built once per test session (about 20 s on a CPU): the tiny random base model, a project whose dataset is
espeak-ng speech, and a two-epoch training run (two checkpoints, each with an eval loss). Tests must not change
it; a test that needs to break something copies it first.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.conftest import session_folder

_CACHE: dict[str, "TrainedVoice"] = {}


@dataclass(frozen=True)
class TrainedVoice:
    project: Path
    base_model: Path
    run: str


def trained_voice(tmp_path_factory) -> TrainedVoice:
    if "voice" in _CACHE:
        return _CACHE["voice"]
    from alltalk_gui.core.training.config import TrainConfig
    from alltalk_gui.core.training.events import Done
    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.core.training.loop import train
    from alltalk_gui.core.engines.xtts.tiny_model import build_tiny_xtts
    from alltalk_gui.testing.speech import make_speech_dataset

    root = session_folder(tmp_path_factory, "trained_voice")
    base = build_tiny_xtts(root / "tiny_base")
    project = VoiceProject.create(root / "voice", name="Test Voice", language="en")
    make_speech_dataset(project.dataset_dir, n_train=3, n_eval=1)
    config = TrainConfig(project_dir=str(project.root), base_model_dir=str(base), run_name="run1", device="cpu",
                         language="en", epochs=2, batch_size=2, lr=1e-3, warmup_steps=0, keep_last=2,
                         memory_interval_s=60.0)
    events = list(train(config))
    assert isinstance(events[-1], Done) and events[-1].reason == "finished", events[-1]
    _CACHE["voice"] = TrainedVoice(project.root, base, "run1")
    return _CACHE["voice"]


def whisper_tiny_en() -> str:
    """The real faster-whisper tiny.en model folder (see alltalk_gui.testing.tiny_whisper)."""
    from alltalk_gui.testing.tiny_whisper import faster_tiny_en

    return str(faster_tiny_en())


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
