"""The GPU suite: every CUDA-only path of the app, run on a real NVIDIA GPU.

Each test here carries the ``gpu`` marker and is skipped when torch sees no CUDA device, so ``pytest`` on a CPU
machine (CI, a developer's laptop) collects and skips them cleanly. On a GPU machine ``pytest -m gpu`` (or
``bash benchmarks/gpu/run.sh``, which also runs the memory benchmark) runs them.

The fixtures build what the CPU tests build: the tiny random XTTS v2 and F5-TTS models and a voice project with
espeak-ng speech (from the speech cache the kit carries where espeak-ng is missing: ``alltalk_gui.testing.speech``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import session_folder

def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


_SKIP = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False)")


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    available = None
    for item in items:
        if here not in Path(str(item.fspath)).parents:
            continue
        item.add_marker(pytest.mark.gpu)
        if available is None:
            available = cuda_available()
        if not available:
            item.add_marker(_SKIP)


@pytest.fixture(scope="session")
def tiny_gpu(tmp_path_factory) -> Path:
    """The tiny random XTTS v2 base model (built on the CPU, trained on the GPU)."""
    from alltalk_gui.core.engines.xtts.tiny_model import build_tiny_xtts

    return build_tiny_xtts(session_folder(tmp_path_factory, "tiny_xtts_gpu"))


@pytest.fixture(scope="session")
def tiny_f5_gpu(tmp_path_factory) -> Path:
    """The tiny random F5-TTS base model (built on the CPU, trained on the GPU)."""
    from alltalk_gui.core.engines.f5.tiny_model import build_tiny_f5

    return build_tiny_f5(session_folder(tmp_path_factory, "tiny_f5_gpu") / "f5tts_v1_tiny")


@pytest.fixture(scope="session")
def gpu_project(tmp_path_factory) -> Path:
    """A voice project whose dataset is 8 training and 2 evaluation clips of espeak-ng speech."""
    from alltalk_gui.testing.speech import make_speech_dataset
    from alltalk_gui.core.project.folder import VoiceProject

    project = VoiceProject.create(session_folder(tmp_path_factory, "gpu_voice") / "voice", name="GPU Voice",
                                  language="en")
    from tests.gpu.kit import DATASET_CLIPS

    make_speech_dataset(project.dataset_dir, **DATASET_CLIPS)
    return project.root


@pytest.fixture(scope="session")
def parler_gpu(tmp_path_factory) -> Path:
    """Parler-TTS's environment (made from the kit's wheels if needed; a second test worker waits for the first
    one's) and the tiny Parler model made with it."""
    from alltalk_gui.core.engine_api import environment
    from alltalk_gui.core.engine_api.engine import get_engine

    engine = get_engine("parler")
    environment.create(engine.environment, progress=print)
    return engine.make_test_model(session_folder(tmp_path_factory, "tiny_parler_gpu") / "tiny")
