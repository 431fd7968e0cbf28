"""Fixtures of the Parler-TTS engine tests: the engine's own environment (made by ``alltalk-gui engine-env parler``,
which the test command runs), the tiny random model (made once per session with that environment), and a voice
project named Jenny with an espeak-ng dataset.

Parler's classes run only in the engine's environment, so these tests drive them as the app does: training through
the launcher's child, preview and export through the engine's worker, and the checks that need Parler's own code
through :mod:`tests.core.engines.parler.engine_side`, called in a child of that environment.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import session_folder
from tests.engine_envs import parler_python, tiny_parler  # noqa: F401  (fixtures)


@pytest.fixture(scope="session")
def jenny(tmp_path_factory) -> Path:
    """A project called Jenny (the speaker's name goes into the description) with 4 + 1 espeak-ng clips, shared by
    the session's Parler tests (each run has its own name under runs/)."""
    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.testing.speech import make_speech_dataset, speech_available

    if not speech_available():
        pytest.skip("espeak-ng is not installed (Debian: espeak-ng)")
    root = session_folder(tmp_path_factory, "jenny") / "Jenny"
    VoiceProject.create(root, name="Jenny", language="en")
    make_speech_dataset(root / "dataset", n_train=4, n_eval=1)
    return root


@pytest.fixture(scope="session")
def full_run(jenny, tiny_parler) -> list[dict]:
    """The session's one full fine-tune of Jenny (3 epochs, 6 steps, an eval after each): its events. It fills the
    codec cache, the loop tests read its losses and the preview/export tests speak with its checkpoint."""
    from tests.core.engines.parler.training_runs import parler_config, train

    return train(parler_config(jenny, tiny_parler, "full", epochs=3))


@pytest.fixture(scope="session")
def engine_side(parler_python):
    """A child of the engine's environment running :mod:`tests.core.engines.parler.engine_side`."""
    from alltalk_gui.core.engine_api.engine_child import EngineChild

    child = EngineChild(parler_python, "tests.core.engines.parler.engine_side")
    yield child
    child.close()
