"""Test-wide settings: Qt runs offscreen, nothing reaches the network."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Tests never download: huggingface_hub and transformers stay offline.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# numba (imported by librosa) starts colorama for its coloured error messages, and colorama's exit hook then writes
# to the sys.stdout of that moment: in a test calling the CLI in-process, a capsys stream closed long before exit.
os.environ.setdefault("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING", "1")


import shutil  # noqa: E402

import pytest  # noqa: E402

SESSION_PREFIX = "session_"  # a tmp_path_factory folder shared by several test modules


def session_folder(tmp_path_factory, name: str):
    """A new folder for a session-scoped fixture: named with :data:`SESSION_PREFIX`, so the module that happens to
    make it first does not remove it when that module ends (a GPU run lost its voice project that way)."""
    return tmp_path_factory.mktemp(SESSION_PREFIX + name)

@pytest.fixture(scope="module", autouse=True)
def _module_temporaries_go_with_the_module(request, tmp_path_factory):
    """Remove the folders a test module's fixtures made (tiny XTTS models are ~90 MB each) once the module is
    done, unless one of its tests failed: pytest itself would keep them all until the session ends, and on a
    small CI disk that was gigabytes. (A passing test's own tmp_path goes at once: tmp_path_retention_policy.)
    Folders named with :data:`SESSION_PREFIX` hold what several modules share and stay for the session."""
    base = tmp_path_factory.getbasetemp()
    before = set(base.iterdir())
    failed = request.session.testsfailed
    yield
    if request.session.testsfailed == failed:
        for path in set(base.iterdir()) - before:
            if not path.name.startswith(SESSION_PREFIX):
                shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(autouse=True)
def _windows_fsync(request, monkeypatch):
    """The atomic-write, checkpoint and export tests run with ``os.fsync`` refusing read-only files as on
    Windows (see tests/windows_fsync.py); ALLTALK_TEST_WINDOWS_FSYNC=1 applies it to every test."""
    from pathlib import Path

    from tests import windows_fsync

    module = Path(request.path).resolve().relative_to(Path(__file__).resolve().parents[1]).as_posix()
    if module in windows_fsync.MODULES or os.environ.get(windows_fsync.SESSION_ENV) == "1":
        windows_fsync.refuse_read_only(monkeypatch)
