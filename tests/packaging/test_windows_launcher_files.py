"""What can be checked of the Windows launcher without Windows: the files' encoding and line ends, and that the
.ps1 keeps to the rules that make odd paths work (see packaging/windows/README.md, "Windows checklist")."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.packaging.conftest import ROOT
from tests.packaging.windows_helper_fakes import cuda  # noqa: F401 (puts install_helper on the path)

import install_helper  # noqa: E402

WINDOWS = ROOT / "packaging" / "windows"
PS1 = WINDOWS / "alltalk-gui-launcher.ps1"
BAT = WINDOWS / "AllTalk GUI.bat"


@pytest.mark.parametrize("name", ["packaging/windows/AllTalk GUI.bat", "packaging/windows/alltalk-gui-launcher.ps1",
                                  "any/new/script.cmd"])
def test_windows_scripts_are_checked_out_with_crlf(name):
    done = subprocess.run(["git", "check-attr", "eol", "--", name], cwd=ROOT, capture_output=True, text=True)
    assert done.stdout.strip().endswith("eol: crlf"), done.stdout + done.stderr


@pytest.mark.parametrize("path", [PS1, BAT])
def test_scripts_are_ascii(path):
    """Windows PowerShell 5.1 reads a script without a BOM in the ANSI code page and cmd.exe in the OEM one:
    any non-ASCII byte would be misread. Non-ASCII paths reach programs only as data."""
    path.read_bytes().decode("ascii")


def test_the_launcher_keeps_paths_literal_and_avoids_cmd():
    text = PS1.read_text(encoding="ascii")
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert not re.search(r"-Path\b", code), "-Path treats [ ] as wildcards: use -LiteralPath or .NET"
    assert not re.search(r"\b(Test-Path|Get-Content|Set-Content|Add-Content|Join-Path|Resolve-Path)\b", code)
    assert "cmd.exe" not in code and "cmd /c" not in code  # cmd's quoting breaks on & ( ) @ ^ in paths


def test_the_launcher_shows_errors_and_runs_once():
    code = PS1.read_text(encoding="ascii")
    assert re.search(r"^trap \{", code, re.M)  # any error ends in a message box, not a silent exit
    assert "System.Threading.Mutex" in code  # a second double-click does not start a second install
    assert "Add_FormClosing" in code and "$e.Cancel = $true" in code  # X does not leave a hidden install running
    assert 'Read-LogTail $AppLog' in code  # an app that exits at once shows its log


def test_the_launcher_calls_the_helper_as_the_helper_expects():
    code = PS1.read_text(encoding="ascii")
    assert '@($Helper, "check") + $HelperOptions' in code and '@($Helper, "install") + $HelperOptions' in code
    for options in (["--state", "C:\\x"], ["--state", "C:\\x", "--cpu"], ["--state", "C:\\x", "--cuda", "cu126"]):
        install_helper.parse_args(["install", *options])
    assert 'install-result.json' in code and install_helper.RESULT_FILE == "install-result.json"
    assert "exit $Shown" in code and "$Shown = 2" in code


def test_the_bat_tells_a_blocked_script_from_a_handled_error():
    text = BAT.read_text(encoding="ascii")
    assert "if errorlevel 2 exit /b 0" in text and "if errorlevel 1 powershell.exe" in text
    assert '"%~dp0alltalk-gui-launcher.ps1" %*' in text  # quoted: & and spaces in the folder are safe


def test_the_window_title_follows_the_helpers_step_lines():
    """The .ps1 reads "[n/5] ..." lines with a .NET regex; the helper writes them (install.step)."""
    import io

    from install_helper import install

    pattern = re.search(r"\[regex\]::Matches\(\$tail, '([^']+)'\)", PS1.read_text(encoding="ascii")).group(1)
    log = io.StringIO()
    install.step(log, 3, "Installing PyTorch 2.9.1+cu126:", "for the GeForce GTX 1080")
    text = "--- start\r\n" + log.getvalue().replace("\n", "\r\n") + "Collecting torch\r\n"
    assert re.findall(pattern, text)[-1][:2] == ("3", "5")
