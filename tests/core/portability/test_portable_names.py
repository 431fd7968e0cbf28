"""Names made from user text are names Windows takes (and stay as typed where they already are)."""

from __future__ import annotations

import pytest

from alltalk_gui.core.portability.portable_names import is_device_name, portable_name, unique_name, windows_problem


@pytest.mark.parametrize("name", ["CON", "con", "Prn", "AUX", "nul", "COM1", "com9", "LPT1", "lpt9", "COM0",
                                  "COM\u00b9", "CONIN$", "conout$", "NUL.wav", "con.json", "aux.tar.gz",
                                  "CON .txt", "Com1.Take 3.wav"])
def test_device_names_in_any_case_and_with_any_extension(name):
    assert is_device_name(name)
    assert windows_problem(name) is not None
    made = portable_name(name)
    assert not is_device_name(made) and windows_problem(made) is None


@pytest.mark.parametrize("name", ["CONSOLE", "icon", "COM10", "LPT", "nullish.wav", "con-voice", "Aux_take",
                                  "com_1"])
def test_names_that_only_look_like_devices_stay(name):
    assert not is_device_name(name) and portable_name(name) == name


@pytest.mark.parametrize("typed, made", [
    ("Grandma's voice", "Grandma's voice"),
    ("José & Ana (2024)", "José & Ana (2024)"),
    ("日本語の声", "日本語の声"),
    ("a<b>c:d\"e/f\\g|h?i*j", "a_b_c_d_e_f_g_h_i_j"),
    ("tab\there\x00nul", "tab_here_nul"),
    ("voice.", "voice"),
    ("voice. . ", "voice"),
    ("  spaced  ", "spaced"),
    ("...", "untitled"),
    ("???", "untitled"),  # nothing but replaced characters: no name was typed
    ("CON", "CON_"),
    ("nul.wav", "nul_.wav"),
    ("Jose\u0301", "Jos\u00e9"),  # decomposed (macOS) becomes composed
])
def test_portable_name_changes_only_what_windows_refuses(typed, made):
    assert portable_name(typed) == made
    assert windows_problem(made) is None


def test_long_names_are_cut_and_keep_their_extension():
    made = portable_name("word " * 60 + ".wav", max_length=40)
    assert len(made) <= 40 and made.endswith(".wav") and windows_problem(made) is None
    assert len(portable_name("x" * 300)) == 100


def test_an_empty_result_takes_the_fallback():
    assert portable_name("", fallback="voice") == "voice"
    assert portable_name(" . ", fallback="voice") == "voice"


@pytest.mark.parametrize("name, problem", [
    ("", "it is empty"), ("a:b", "Windows does not allow :"), ("a?*", "Windows does not allow * ?"),
    ("x\x07", "Windows does not allow \\x07"), ("end.", "dot or space at the end"), ("end ", "dot or space"),
    ("LPT3.log", "LPT3 is a device name"), ("n" * 256, "longer than 255"),
])
def test_windows_problem_says_why(name, problem):
    assert problem in windows_problem(name)


def test_unique_names_differ_by_more_than_case():
    assert unique_name("Anna.wav", ["anna.WAV"]) == "Anna-2.wav"
    assert unique_name("Anna.wav", ["anna.wav", "ANNA-2.wav"]) == "Anna-3.wav"
    assert unique_name("Anna.wav", ["Bob.wav"]) == "Anna.wav"
    assert unique_name("Voice", ["voice"], separator="_") == "Voice_2"
    assert unique_name(".hidden", [".HIDDEN"]) == ".hidden-2"
