"""The engines' own Python environments in tests: ``parler_python``, the interpreter of Parler-TTS's environment.

The test command makes it first (``alltalk-gui engine-env parler``, in ``packaging/test.sh``) and sets
``ALLTALK_REQUIRE_ENGINE_ENVS=1``, so there a missing environment fails the tests that need it; elsewhere (a
checkout without it) they are skipped with the command to run. ``tiny_parler``: the tiny random Parler model, made once per session with that environment. Import the fixtures
where they are used."""

from __future__ import annotations

import os

import pytest

REQUIRE_ENV = "ALLTALK_REQUIRE_ENGINE_ENVS"


def require_environment(name: str) -> str:
    """The interpreter of engine ``name``'s environment; skips (or, under the test command, fails) without it."""
    from alltalk_gui.core.engine_api import environment
    from alltalk_gui.core.engine_api.engine import get_engine

    engine = get_engine(name)
    if not environment.is_ready(engine.environment):
        message = (f"{engine.title}'s environment is not set up in {environment.environment_dir(engine.environment)}: "
                   f"run 'alltalk-gui engine-env {name}'.")
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(message)
        pytest.skip(message)
    return environment.python_for(engine)


@pytest.fixture(scope="session")
def parler_python() -> str:
    return require_environment("parler")


_MADE: dict[str, object] = {}  # what the session made once, whichever module's fixture asked first


@pytest.fixture(scope="session")
def tiny_parler(parler_python, tmp_path_factory):
    """The tiny random Parler-TTS model (its real architecture, a few MB), made once per session (pytest keeps one
    value per place a fixture is imported into, so the value is kept here)."""
    from alltalk_gui.core.engine_api.engine import get_engine
    from tests.conftest import session_folder

    if "tiny_parler" not in _MADE:
        folder = session_folder(tmp_path_factory, "tiny_parler") / "tiny"
        _MADE["tiny_parler"] = get_engine("parler").make_test_model(folder)
    return _MADE["tiny_parler"]
