"""A project folder too deep for Windows' MAX_PATH is said when it is created or opened (on Windows only)."""

from __future__ import annotations

import pytest

from alltalk_gui.core.portability.portable_names import portable_name
from alltalk_gui.core.project.long_paths import (
    DEEPEST_IN_PROJECT, MAX_PATH, MAX_PROJECT_PATH, path_length_problem, project_path_problem, utf16_length,
)

# The brief's user: a long account name, OneDrive with a company name, the app's projects folder, a voice.
DEEP = ("C:\\Users\\Alexandra.Konstantinopoulou-Smith\\OneDrive - Northwind Traders International\\Documents\\"
        "AllTalk GUI projects\\Grandma's voice (recorded at Christmas 2025)")
SHALLOW = "C:\\Users\\Ann\\Documents\\AllTalk GUI projects\\Grandma's voice"


def test_the_limits_add_up():
    assert DEEPEST_IN_PROJECT == 128 and MAX_PROJECT_PATH == 130
    assert MAX_PROJECT_PATH + 1 + DEEPEST_IN_PROJECT == MAX_PATH - 1


@pytest.mark.parametrize("root, warned", [
    (SHALLOW, False),
    (DEEP, True),
    ("C:\\" + "v" * (MAX_PROJECT_PATH - 3), False),  # exactly at the limit
    ("C:\\" + "v" * (MAX_PROJECT_PATH - 2), True),
    ("C:\\" + "\U0001f600" * 64, True),  # 67 characters, but 131 UTF-16 units: Windows counts an emoji twice
])
def test_windows_without_long_paths_warns_past_the_limit(root, warned):
    problem = path_length_problem(root, windows=True, long_paths_enabled=False)
    assert bool(problem) is warned
    if warned:
        assert f"{utf16_length(root)} characters long" in problem and f"at most {MAX_PROJECT_PATH}" in problem
        assert "long paths" in problem


def test_long_paths_enabled_or_another_system_never_warns():
    assert path_length_problem(DEEP, windows=True, long_paths_enabled=True) == ""
    assert path_length_problem(DEEP, windows=False, long_paths_enabled=False) == ""
    assert project_path_problem("/home/" + "x" * 300) == ""  # this system: Linux has no such limit


def test_the_deepest_path_of_a_trained_project_is_within_the_measure(tmp_path_factory):
    """Every file of a real trained project (dataset, XTTS checkpoints, feature cache), with the temporary name the
    atomic write gives it while it is written, fits DEEPEST_IN_PROJECT."""
    from tests.trained_voice import trained_voice

    project = trained_voice(tmp_path_factory).project
    from alltalk_gui.core.audio.decode import SUPPORTED_EXTENSIONS

    # atomic.atomic_path names the temporary .<name>.<8 random><suffix>.tmp; audio writers (write_wav, copy_file)
    # repeat the extension as its suffix, the JSON and cache writers give none.
    temporary = len("..") + 8 + len(".tmp")

    def written(p):
        return len(p.relative_to(project).as_posix()) + temporary + (len(p.suffix) if p.suffix in
                                                                     SUPPORTED_EXTENSIONS else 0)

    deepest = max((written(p), p.relative_to(project)) for p in project.rglob("*") if p.is_file())
    assert deepest[0] <= DEEPEST_IN_PROJECT, deepest
    assert str(deepest[1]).startswith("feature_cache")  # the measure's deepest kind of file is the deepest here
    source_copy = len("sources/") + len(portable_name("n" * 250 + ".wav")) + temporary + len(".wav")
    assert source_copy <= DEEPEST_IN_PROJECT
