"""Child processes start without a console window on Windows when the app has none (and as before elsewhere)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from alltalk_gui.core.portability import process_flags
from alltalk_gui.core.portability.process_flags import (
    BELOW_NORMAL_PRIORITY_CLASS, CREATE_NEW_PROCESS_GROUP, CREATE_NO_WINDOW, creation_flags, popen_options,
)


def test_the_flags_are_windows_own_values():
    """The numbers Windows' SDK gives (subprocess names them only on Windows)."""
    assert (CREATE_NO_WINDOW, CREATE_NEW_PROCESS_GROUP, BELOW_NORMAL_PRIORITY_CLASS) == (0x08000000, 0x200, 0x4000)
    if sys.platform == "win32":
        assert CREATE_NO_WINDOW == subprocess.CREATE_NO_WINDOW


@pytest.mark.parametrize("new_group, lower, expected", [
    (False, False, CREATE_NO_WINDOW),
    (True, False, CREATE_NO_WINDOW | CREATE_NEW_PROCESS_GROUP),
    (True, True, CREATE_NO_WINDOW | CREATE_NEW_PROCESS_GROUP | BELOW_NORMAL_PRIORITY_CLASS),
])
def test_a_windowed_app_starts_every_child_without_a_window(new_group, lower, expected):
    assert creation_flags(console_window=False, new_group=new_group, lower_priority=lower) == expected
    assert popen_options(new_group=new_group, lower_priority=lower, windows=True, console_window=False) == {
        "creationflags": expected}


def test_the_cli_in_a_terminal_shares_its_console_with_the_child():
    """Output still shows in the terminal, and Ctrl+C / Ctrl+Break reach the child."""
    assert popen_options(windows=True, console_window=True) == {}
    assert popen_options(new_group=True, lower_priority=True, windows=True, console_window=True) == {
        "creationflags": CREATE_NEW_PROCESS_GROUP | BELOW_NORMAL_PRIORITY_CLASS}


def test_posix_gets_a_session_of_its_own_only_when_asked():
    assert popen_options(windows=False) == {}
    assert popen_options(new_group=True, lower_priority=True, windows=False) == {"start_new_session": True}
    assert process_flags.has_console_window() or sys.platform == "win32"


def test_this_systems_options_start_a_real_child():
    """What every caller passes to Popen here is accepted by this system's Popen."""
    done = subprocess.run([sys.executable, "-c", "print('ok')"], capture_output=True, text=True, timeout=60,
                          **popen_options(new_group=True, lower_priority=True))
    assert done.returncode == 0 and done.stdout.strip() == "ok"


WORDS = "José, Łukasz, 日本語の声"  # Ł and the Japanese are not in cp1252, Windows' code page for a file or pipe
PRINT = "import sys; print(sys.argv[1]); open(sys.argv[2], 'w').write(sys.argv[1])"


def _child(env, tmp_path):
    out, made = tmp_path / "output.log", tmp_path / "made.txt"
    with open(out, "wb") as log:
        code = subprocess.run([sys.executable, "-c", PRINT, WORDS, str(made)], stdout=log, stderr=subprocess.STDOUT,
                              env=env, timeout=60).returncode
    return code, out.read_bytes(), made


def test_windows_code_page_ends_a_child_that_prints_a_name_it_lacks(tmp_path):
    """What the child does without the app's environment when its streams use cp1252, as on Windows."""
    import os

    code, output, _made = _child(dict(os.environ, PYTHONIOENCODING="cp1252"), tmp_path)
    assert code != 0 and b"UnicodeEncodeError" in output


def test_a_child_writes_utf8_whatever_the_code_page(tmp_path):
    import os

    windows_like = dict(os.environ, PYTHONIOENCODING="cp1252")
    code, output, made = _child(process_flags.utf8_environment(windows_like), tmp_path)
    assert code == 0 and output.decode("utf-8").strip() == WORDS
    assert made.read_bytes().decode("utf-8") == WORDS  # open() without encoding: UTF-8 too (UTF-8 mode)


def test_the_training_child_and_engine_children_get_utf8():
    from alltalk_gui.core.training.launch import child_env

    env = child_env(1, base={"PATH": "x", "PYTHONIOENCODING": "cp1252"})
    assert env["PYTHONIOENCODING"] == "utf-8" and env["PYTHONUTF8"] == "1" and env["PATH"] == "x"
