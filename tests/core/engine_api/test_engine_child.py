"""EngineChild: an engine's functions called in a child process (the way an engine with its own environment
previews and exports): results and arrays come back, errors keep their kind, state stays between calls, a dying
child is reported with its output, and closing ends it."""

from __future__ import annotations

import sys
import tempfile

import numpy as np
import pytest

from alltalk_gui.core.engine_api.engine import BaseModelError, EngineError
from alltalk_gui.core.engine_api.engine_child import EngineChild, call_once

MODULE = "tests.core.engine_api.child_functions"


@pytest.fixture(scope="module")
def child():
    child = EngineChild(sys.executable, MODULE)
    yield child
    child.close()


def test_results_arrays_and_kept_state_come_back(child):
    assert child.call("echo", value={"a": [1, 2], "b": "text"}) == {"a": [1, 2], "b": "text"}
    samples = np.linspace(-1, 1, 44_100, dtype=np.float32)
    out = child.call("scale", samples=samples, factor=0.5)
    assert out["length"] == 44_100 and out["samples"].dtype == np.float32
    np.testing.assert_array_equal(out["samples"], samples * 0.5)
    child.call("remember", key="voice", value="loaded once")
    assert child.call("recall", key="voice") == "loaded once"


def test_progress_reaches_the_caller(child):
    seen = []
    assert child.call("steps", count=3, progress=lambda text, fraction: seen.append((text, fraction))) == 3
    assert seen == [("step 1", 1 / 3), ("step 2", 2 / 3), ("step 3", 1.0)]


def test_errors_keep_their_kind_and_message(child):
    with pytest.raises(BaseModelError, match="holds no model.json"):
        child.call("refuse_base_model", folder="/nowhere")
    with pytest.raises(EngineError, match="too long for this engine"):
        child.call("refuse", text="too long for this engine")
    with pytest.raises(EngineError, match="ZeroDivisionError"):
        child.call("divide", a=1.0, b=0.0)
    assert child.call("divide", a=1.0, b=4.0) == 0.25  # the child goes on after an error


def test_a_child_that_dies_is_reported_with_its_output_and_leaves_no_files(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where both sides make their temporary folders:
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the parent's, and the child's (which inherits the environment)
    child = EngineChild(sys.executable, MODULE)
    child.call("scale", samples=np.zeros(8, dtype=np.float32), factor=1.0)  # the child has written an array
    with pytest.raises(EngineError, match=r"(?s)ended unexpectedly.*exit code 3.*dying now"):
        child.call("die")
    with pytest.raises(EngineError, match="ended unexpectedly"):
        child.call("echo", value=1)
    child.close()
    assert not list(tmp_path.iterdir())  # the child's folder went with the parent's, though it died first


def test_close_ends_the_child_and_call_once_runs_one_function():
    child = EngineChild(sys.executable, MODULE)
    assert child.alive
    child.close()
    assert not child.alive
    assert call_once(sys.executable, MODULE, "interpreter") == sys.executable


def test_an_interpreter_that_cannot_start_is_an_engine_error(tmp_path):
    with pytest.raises(EngineError, match="Cannot start the engine's process"):
        EngineChild(str(tmp_path / "no-python"), MODULE)


def test_a_dropped_child_ends_its_process():
    """A voice the preview or the judge drops is an EngineChild nobody holds any more: its process (a loaded model)
    must end then, not when the app quits."""
    import gc

    child = EngineChild(sys.executable, MODULE)
    assert child.call("echo", value=1) == 1
    process = child.process
    del child
    gc.collect()
    process.wait(timeout=30)
    assert process.returncode is not None
