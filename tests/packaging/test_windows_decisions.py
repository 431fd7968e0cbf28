"""The Windows launcher's decisions (packaging/windows/install_helper), from recorded values: which PyTorch build
for which card and driver, which Python and folder can work, the Visual C++ runtime, pip behind proxies and
mirrors."""

from __future__ import annotations

import pytest

from tests.packaging.windows_helper_fakes import recorded_gpus

from install_helper import checks, cuda, pip_options  # noqa: E402 (path set by windows_helper_fakes)


@pytest.mark.parametrize("case, flavour, fix", [
    ("gtx1080_driver_457", "cu126", "Update the NVIDIA driver to version 528.33 or newer (this computer has 457.51)"),
    ("gtx1080_driver_566", "cu126", ""),
    ("rtx3060_driver_537", "cu126", ""),  # Ampere, but the driver predates CUDA 12.8: cu126 runs on it
    ("rtx4090_driver_581", "cu128", ""),
    ("rtx5090_driver_576", "cu128", ""),  # Blackwell: only cu128 has its kernels
    ("gtx780_driver_474", "cpu", ""),  # Kepler: no PyTorch CUDA build has kernels for 3.5
    ("driver_not_loaded", "cpu", ""),
    ("missing", "cpu", ""),
])
def test_the_build_follows_the_card_and_the_driver(case, flavour, fix):
    choice = cuda.choose(recorded_gpus(case), "nt")
    assert choice.flavour == flavour, choice.reason
    assert choice.fix.startswith(fix) if fix else choice.fix == ""
    assert choice.index_url == f"https://download.pytorch.org/whl/{flavour}"


def test_an_old_driver_without_compute_cap_is_read_by_the_cards_name():
    [gpu] = recorded_gpus("gtx1080_driver_457")
    assert gpu == cuda.Gpu("GeForce GTX 1080", (6, 1), "457.51") and gpu.driver_version == (457, 51)


def test_a_kepler_card_is_named_in_the_reason():
    choice = cuda.choose(recorded_gpus("gtx780_driver_474"))
    assert "GeForce GTX 780 (compute capability 3.5) is older than any card" in choice.reason


def test_a_pascal_card_beside_a_blackwell_one_is_said_to_be_unused():
    choice = cuda.choose(recorded_gpus("gtx1070_and_rtx5080_driver_576"))
    assert choice.flavour == "cu128" and choice.fix == ""
    assert choice.notes == ("The GeForce GTX 1070 (compute capability 6.1) is not covered by the cu128 build that "
                            "the newer card needs and will not be used.",)


@pytest.mark.parametrize("name, capability", [
    ("NVIDIA GeForce GTX 1080 Ti", (6, 1)), ("GeForce GTX 970", (5, 2)), ("NVIDIA GeForce RTX 2070 SUPER", (7, 5)),
    ("NVIDIA GeForce GTX 1660", (7, 5)), ("NVIDIA GeForce RTX 3090", (8, 6)), ("NVIDIA A100-SXM4-80GB", (8, 0)),
    ("NVIDIA H100 80GB HBM3", (9, 0)), ("NVIDIA GeForce RTX 5060", (12, 0)), ("Tesla K80", (3, 5)),
    ("Some Future Card", None),
])
def test_capability_from_name(name, capability):
    assert cuda.capability_from_name(name) == capability


def test_a_card_of_unknown_capability_gets_the_widest_build():
    assert cuda.choose([cuda.Gpu("Some Future Card", None, "590.10")]).flavour == "cu126"


def test_a_forced_build_without_kernels_for_the_card_is_named():
    gpus = recorded_gpus("gtx1080_driver_566")
    assert cuda.coverage_problem("cu128", gpus).startswith("The cu128 build has no kernels for the GeForce GTX 1080")
    assert cuda.coverage_problem("cu126", gpus) == "" and cuda.coverage_problem("cpu", gpus) == ""


@pytest.mark.parametrize("version, bits, problem", [
    ((3, 11, 9), 8, ""), ((3, 10, 0), 8, ""), ((3, 12, 7), 8, ""),
    ((3, 11, 9), 4, "is the 32-bit one, for which PyTorch does not exist"),
    ((3, 13, 1), 8, "is version 3.13; AllTalk GUI needs 3.10 to 3.12"),
    ((3, 9, 13), 8, "is version 3.9"),
])
def test_only_a_64_bit_python_3_10_to_3_12_is_accepted(version, bits, problem):
    found = checks.python_problem(version, bits, r"C:\Python311-32\python.exe")
    assert (problem in found and "Install the 64-bit Python 3.11" in found) if problem else found == ""


def test_path_length_counts_utf16_and_respects_long_paths():
    short = r"C:\Users\José\AllTalk GUI"
    deep = "C:\\Users\\José\\" + "Ordner mit einem sehr langen Namen\\" * 3
    assert checks.path_length_problem(short, long_paths_enabled=False) == ""
    assert checks.utf16_length(deep) > checks.MAX_ROOT_CHARS
    problem = checks.path_length_problem(deep, long_paths_enabled=False)
    assert f"is {checks.utf16_length(deep)} characters long" in problem and "C:\\AllTalkGUI" in problem
    assert checks.path_length_problem(deep, long_paths_enabled=True) == ""
    assert checks.utf16_length("C:\\🎙") == 5  # outside the BMP: two UTF-16 units, as Windows counts


def test_the_budget_below_the_checkout_fits_max_path():
    assert checks.MAX_ROOT_CHARS + 1 + checks.DEEPEST_IN_VENV < checks.MAX_PATH


@pytest.mark.parametrize("installed, ok", [(None, False), ((14, 38, 33135), False), ((14, 40, 33810), True),
                                           ((14, 44, 35211), True), ((15, 0, 1), True)])
def test_visual_cpp_runtime_must_be_14_40_or_newer(installed, ok):
    problem = checks.vc_runtime_problem(installed)
    assert (problem == "") is ok
    if not ok:
        assert checks.VC_RUNTIME_URL in problem and "14.40 or newer" in problem


def test_registry_readers_are_harmless_off_windows():
    assert checks.read_vc_runtime() is None and checks.read_long_paths_enabled() is True


@pytest.mark.parametrize("text, args", [
    ("pip 22.3 from C:\\x (python 3.11)", []),  # cannot use truststore without installing it
    ("pip 23.3.1 from C:\\x (python 3.11)", ["--use-feature=truststore"]),
    ("pip 24.0 from C:\\Users\\José\\x (python 3.11)", ["--use-feature=truststore"]),
    ("pip 24.2 from C:\\x (python 3.12)", []),  # truststore is the default from 24.2 on
    ("pip 25.3 from C:\\x (python 3.12)", []),
    ("No module named pip", []),
])
def test_truststore_for_pip_before_24_2(text, args):
    assert pip_options.truststore_args(pip_options.parse_pip_version(text)) == args


def test_a_mirror_in_pip_ini_is_kept_and_configured_extra_indexes_repeated():
    config = pip_options.parse_pip_config("global.index-url='https://mirror.example.com/simple'\n"
                                          "global.extra-index-url='https://extra.example.com/simple'\n"
                                          "global.timeout='60'\n")
    assert config["index-url"] == ["https://mirror.example.com/simple"]
    args = pip_options.torch_index_args("https://download.pytorch.org/whl/cu126", config)
    assert "--index-url" not in args
    assert args == ["--extra-index-url", "https://download.pytorch.org/whl/cu126",
                    "--extra-index-url", "https://extra.example.com/simple"]
    assert pip_options.torch_index_args("https://download.pytorch.org/whl/cpu", {}) == [
        "--extra-index-url", "https://download.pytorch.org/whl/cpu"]
