# AllTalk GUI launcher for Windows (started by "AllTalk GUI.bat", which a desktop shortcut can point at).
#
# Later starts: the app's environment (.venv in the checkout) matches pyproject.toml and the PyTorch flavour
# chosen for this computer, so the app starts at once. First start, or after an update: a small window with a
# busy bar and the installer's last lines stays up while the environment is created or updated, then the app
# starts. PyTorch comes from PyTorch's own package index as the CUDA build when an NVIDIA driver is present
# (PyPI's Windows wheels are CPU-only), else as the CPU build. Everything is logged to
# %LOCALAPPDATA%\AllTalkGUI\install.log.
#
# Parameters: -Cpu forces the CPU build of PyTorch; -CudaIndex picks another CUDA build of it.
param(
    [switch]$Cpu,
    [string]$CudaIndex = "https://download.pytorch.org/whl/cu128"
)
$ErrorActionPreference = "Stop"
$Root = (Resolve-Path (Join-Path $PSScriptRoot "..\..")).Path
$Venv = Join-Path $Root ".venv"
$Stamp = Join-Path $Venv ".alltalk-gui-installed"
$State = Join-Path $env:LOCALAPPDATA "AllTalkGUI"
$Log = Join-Path $State "install.log"
$TorchPins = @("torch==2.9.1", "torchaudio==2.9.1")  # the pair pyproject.toml pins

New-Item -ItemType Directory -Force -Path $State | Out-Null
$HasNvidia = -not $Cpu -and [bool](Get-Command nvidia-smi.exe -ErrorAction SilentlyContinue)
$Flavour = if ($HasNvidia) { "cuda:$CudaIndex" } else { "cpu" }
$Hash = (Get-FileHash (Join-Path $Root "pyproject.toml") -Algorithm SHA256).Hash
$Wanted = "$Hash $Flavour"
$App = Join-Path $Venv "Scripts\python.exe"

function Start-App {
    # python.exe in a hidden console rather than pythonw.exe: under pythonw sys.stdout is None, and libraries
    # that print progress (downloads, tqdm) would fail.
    Start-Process -FilePath $App -ArgumentList "-m", "alltalk_gui" -WorkingDirectory $Root -WindowStyle Hidden
}

if ((Test-Path $App) -and (Test-Path $Stamp) -and ((Get-Content $Stamp -Raw).Trim() -eq $Wanted)) {
    Start-App
    exit 0
}

function Find-Python {
    # The py launcher knows every installed Python; fall back to python.exe on PATH. "Continue": with "Stop",
    # Windows PowerShell turns a probe's stderr output into a terminating error.
    $ErrorActionPreference = "Continue"
    foreach ($version in "3.11", "3.12", "3.10") {
        if (Get-Command py.exe -ErrorAction SilentlyContinue) {
            & py.exe "-$version" -c "import sys" 2>$null
            if ($LASTEXITCODE -eq 0) { return "py.exe", "-$version" }
        }
    }
    if (Get-Command python.exe -ErrorAction SilentlyContinue) {
        & python.exe -c "import sys; sys.exit(not (3, 10) <= sys.version_info[:2] <= (3, 12))" 2>$null
        if ($LASTEXITCODE -eq 0) { return "python.exe" }
    }
    # Nothing found: no output, so @(Find-Python) below is empty.
}

Add-Type -AssemblyName System.Windows.Forms, System.Drawing
$Python = @(Find-Python)  # @() keeps a single answer ("python.exe") an array rather than a string
if ($Python.Count -eq 0) {
    [System.Windows.Forms.MessageBox]::Show(
        "AllTalk GUI needs Python 3.10, 3.11 or 3.12 (from python.org, with the 'py' launcher).",
        "AllTalk GUI", "OK", "Error") | Out-Null
    exit 1
}

# The install runs as a hidden cmd.exe script whose every step appends to the log; the window follows the log
# on a timer. Redirecting inside the script keeps cmd's quoting rules simple (one quoted path on its line).
$VenvPython = Join-Path $Venv "Scripts\python.exe"
$TorchIndex = if ($HasNvidia) { $CudaIndex } else { "https://download.pytorch.org/whl/cpu" }
$PyExe = $Python[0]
$PyArgs = if ($Python.Count -gt 1) { $Python[1] } else { "" }
$Steps = @(
    "echo Creating or updating the environment in $Venv",
    "if not exist `"$VenvPython`" $PyExe $PyArgs -m venv `"$Venv`"",
    "`"$VenvPython`" -m pip install --upgrade pip",
    "echo Installing PyTorch ($Flavour)",
    "`"$VenvPython`" -m pip install $($TorchPins -join ' ') --index-url $TorchIndex",
    "echo Installing AllTalk GUI",
    "`"$VenvPython`" -m pip install -e `"$Root`""
)
$Script = Join-Path $State "install.cmd"
Set-Content -Path $Script -Encoding ASCII -Value (@("@echo off", "setlocal") + ($Steps | ForEach-Object {
    "$_ >> `"$Log`" 2>&1 || exit /b 1" }) + @("exit /b 0"))
Add-Content -Path $Log -Value "--- $(Get-Date -Format s) install ($Flavour)"
$Process = Start-Process -FilePath "cmd.exe" -ArgumentList "/c", "`"$Script`"" -WindowStyle Hidden -PassThru
$null = $Process.Handle  # without touching Handle, Windows PowerShell reports no ExitCode once it has exited

$Form = New-Object System.Windows.Forms.Form
$Form.Text = "Installing AllTalk GUI"
$Form.Size = New-Object System.Drawing.Size(640, 400)
$Form.StartPosition = "CenterScreen"
$Icon = Join-Path $Root "resources\icons\alltalk-gui-32.png"
if (Test-Path $Icon) {
    $Form.Icon = [System.Drawing.Icon]::FromHandle(([System.Drawing.Bitmap]::FromFile($Icon)).GetHicon())
}
$Label = New-Object System.Windows.Forms.Label
$Label.Text = "Setting up AllTalk GUI for its first start: PyTorch ($Flavour), Qt and the speech models' code " +
    "(a few GB). This takes several minutes; later starts are immediate."
$Label.SetBounds(12, 10, 600, 40)
$Bar = New-Object System.Windows.Forms.ProgressBar
$Bar.Style = "Marquee"
$Bar.SetBounds(12, 55, 600, 18)
$Output = New-Object System.Windows.Forms.TextBox
$Output.Multiline = $true
$Output.ReadOnly = $true
$Output.ScrollBars = "Vertical"
$Output.Font = New-Object System.Drawing.Font("Consolas", 8)
$Output.SetBounds(12, 82, 600, 230)
$Button = New-Object System.Windows.Forms.Button
$Button.Text = "Cancel"
$Button.SetBounds(532, 322, 80, 26)
$Button.Add_Click({
    if (-not $Process.HasExited) { & taskkill.exe /T /F /PID $Process.Id | Out-Null; $script:Cancelled = $true }
    $Form.Close()
})
$Form.Controls.AddRange(@($Label, $Bar, $Output, $Button))
$script:Cancelled = $false

$Timer = New-Object System.Windows.Forms.Timer
$Timer.Interval = 500
$Timer.Add_Tick({
    if (Test-Path $Log) {
        $Output.Text = ((Get-Content $Log -Tail 30) -join "`r`n")
        $Output.SelectionStart = $Output.Text.Length
        $Output.ScrollToCaret()
    }
    if ($Process.HasExited) {
        $Timer.Stop()
        if ($Process.ExitCode -eq 0) { $Form.Close() }
        else {
            $Bar.Style = "Blocks"
            $Label.Text = "The installation failed (exit status $($Process.ExitCode)). The end of the log is " +
                "below; the whole log is $Log."
            $Button.Text = "Close"
        }
    }
})
$Timer.Start()
[void]$Form.ShowDialog()

if ($script:Cancelled -or -not $Process.HasExited -or $Process.ExitCode -ne 0) { exit 1 }
Set-Content -Path $Stamp -Value $Wanted
Start-App
