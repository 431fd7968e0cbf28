# AllTalk GUI launcher for Windows (started by "AllTalk GUI.bat", which a desktop shortcut can point at).
#
# This script stays thin on purpose: PowerShell cannot be tested where AllTalk GUI is developed, so every
# decision (which PyTorch build, whether .venv is whole, what to check first) is made by the Python install
# helper in packaging\windows\install_helper, which is tested there. This script only
#   1. asks the environment's own Python whether .venv is up to date, and if so starts the app at once;
#   2. otherwise finds a Python 3.10-3.12 (or offers to install 3.11), runs the helper's install with a window
#      that follows its log, and shows what it says (a problem to fix first, a failure, a note such as
#      "update the NVIDIA driver");
#   3. starts the app, and shows the end of the app's log if it exits at once.
# Paths go to programs as arguments of System.Diagnostics.Process (no cmd.exe, no batch file), and PowerShell
# path parameters are -LiteralPath, so a folder such as C:\Users\Jose\AllTalk GUI [2] & co works; this file
# itself must stay ASCII (Windows PowerShell 5.1 reads a script without a BOM in the ANSI code page).
# Logs: %LOCALAPPDATA%\AllTalkGUI\install.log (install) and alltalk-gui.log (the app).
#
# Parameters: -Cpu installs PyTorch's CPU build; -CudaIndex cu126|cu128 (or a PyTorch index URL ending in
# one) picks a CUDA build. Either choice is kept until another is given.
param(
    [switch]$Cpu,
    [string]$CudaIndex = ""
)
$ErrorActionPreference = "Stop"
# Exit codes: 0 fine, 2 a failure this script has shown. The .bat reads 1 as "PowerShell did not run us".
$Shown = 2
Add-Type -AssemblyName System.Windows.Forms, System.Drawing

$Root = [System.IO.Path]::GetFullPath([System.IO.Path]::Combine($PSScriptRoot, "..", ".."))
$State = [System.IO.Path]::Combine($env:LOCALAPPDATA, "AllTalkGUI")
$Log = [System.IO.Path]::Combine($State, "install.log")
$AppLog = [System.IO.Path]::Combine($State, "alltalk-gui.log")
$Result = [System.IO.Path]::Combine($State, "install-result.json")
$Helper = [System.IO.Path]::Combine($Root, "packaging", "windows", "install_helper")
$VenvPython = [System.IO.Path]::Combine($Root, ".venv", "Scripts", "python.exe")
$Stamp = [System.IO.Path]::Combine($Root, ".venv", ".alltalk-gui-installed")
[void][System.IO.Directory]::CreateDirectory($State)

function Show-Message([string]$Text, [string]$Icon = "Error") {
    [void][System.Windows.Forms.MessageBox]::Show($Text, "AllTalk GUI", "OK", $Icon)
}

trap {
    $details = ($_ | Out-String)
    try { [System.IO.File]::AppendAllText($Log, "--- launcher error:`r`n$details`r`n", [System.Text.Encoding]::UTF8) } catch { }
    Show-Message ("The AllTalk GUI launcher stopped with an error:`r`n`r`n$($_.Exception.Message)`r`n`r`n" +
        "$($_.InvocationInfo.PositionMessage)`r`n`r`nThe log is $Log.")
    exit $Shown
}

function Quote-Argument([string]$Text) {
    # The quoting CommandLineToArgvW undoes (Python's sys.argv): backslashes before a quote are doubled.
    if ($Text -ne "" -and $Text -notmatch '[\s"]') { return $Text }
    return '"' + (($Text -replace '(\\*)"', '$1$1\"') -replace '(\\+)$', '$1$1') + '"'
}

function Start-Program([string]$Exe, [string[]]$Arguments) {
    $info = New-Object System.Diagnostics.ProcessStartInfo
    $info.FileName = $Exe
    $info.Arguments = (@($Arguments | ForEach-Object { Quote-Argument $_ }) -join " ")
    $info.WorkingDirectory = $Root
    $info.UseShellExecute = $false
    $info.CreateNoWindow = $true  # python.exe in no window rather than pythonw.exe: under pythonw sys.stdout is None
    foreach ($name in "PYTHONPATH", "PYTHONHOME") { [void]$info.EnvironmentVariables.Remove($name) }
    return [System.Diagnostics.Process]::Start($info)
}

function Read-LogTail([string]$Path, [long]$From = 0, [int]$Lines = 30) {
    # Shared read and write: the installer still has the file open for writing.
    if (-not [System.IO.File]::Exists($Path)) { return "" }
    $stream = New-Object System.IO.FileStream($Path, "Open", "Read", "ReadWrite")
    try {
        [void]$stream.Seek([Math]::Max($From, $stream.Length - 65536), "Begin")
        $text = (New-Object System.IO.StreamReader($stream, [System.Text.Encoding]::UTF8)).ReadToEnd()
    } finally { $stream.Dispose() }
    return ((($text -split "`r?`n") | Select-Object -Last $Lines) -join "`r`n")
}

$HelperOptions = @("--state", $State)
if ($Cpu) { $HelperOptions += "--cpu" } elseif ($CudaIndex -ne "") { $HelperOptions += @("--cuda", $CudaIndex) }

# One launcher per checkout at a time: a second double-click during an install must not start a second pip.
$hash = [System.Security.Cryptography.SHA256]::Create().ComputeHash([System.Text.Encoding]::UTF8.GetBytes($Root.ToLowerInvariant()))
$Mutex = New-Object System.Threading.Mutex($false, "Local\AllTalkGUI-" + [BitConverter]::ToString($hash, 0, 8).Replace("-", ""))
$owned = $false
try { $owned = $Mutex.WaitOne(0) } catch {
    # A launcher that was killed left the mutex abandoned: it is ours now (.NET wraps the exception for PowerShell).
    $owned = ($_.Exception -is [System.Threading.AbandonedMutexException]) -or
        ($_.Exception.InnerException -is [System.Threading.AbandonedMutexException])
    if (-not $owned) { throw }
}
if (-not $owned) {
    Show-Message "AllTalk GUI is already starting or being installed from this folder; its window will appear." "Information"
    exit 0
}

function Start-App {
    $app = Start-Program $VenvPython @("-m", "alltalk_gui")
    $Mutex.ReleaseMutex()
    # An app that ends within seconds did not start (a broken environment, a DLL that does not load): say so
    # and let the next start check and repair the environment.
    if ($app.WaitForExit(15000) -and $app.ExitCode -ne 0) {
        if ([System.IO.File]::Exists($Stamp)) { [System.IO.File]::Delete($Stamp) }
        Show-Message ("AllTalk GUI stopped right after starting (exit status $($app.ExitCode)). The end of its log " +
            "($AppLog):`r`n`r`n$(Read-LogTail $AppLog 0 15)`r`n`r`nThe next start checks and repairs the " +
            "installation. If this happens again, please report it with both logs in $State.")
        exit $Shown
    }
    exit 0
}

if ([System.IO.File]::Exists($VenvPython)) {
    # A .venv whose Python cannot even start (its base Python was removed) simply goes through the install,
    # which repairs it.
    $upToDate = $false
    try {
        $check = Start-Program $VenvPython (@($Helper, "check") + $HelperOptions)
        $upToDate = $check.WaitForExit(120000) -and $check.ExitCode -eq 0
    } catch { }
    if ($upToDate) { Start-App }
}

function Find-Python {
    # The py launcher knows every installed Python (64-bit first); fall back to python.exe on PATH. The helper
    # itself refuses a 32-bit or unsupported one with a message. "Continue": with "Stop", Windows PowerShell
    # turns a probe's stderr output into a terminating error.
    $ErrorActionPreference = "Continue"
    if (Get-Command py.exe -ErrorAction SilentlyContinue) {
        foreach ($version in "3.11", "3.12", "3.10") {
            & py.exe "-$version" -c "import sys" 2>$null
            if ($LASTEXITCODE -eq 0) { return @("py.exe", "-$version") }
        }
    }
    $python = Get-Command python.exe -ErrorAction SilentlyContinue
    if ($python -and $python.Source -notlike "*\WindowsApps\*") { return @($python.Source) }  # not the Store stub
    return @()
}

$Python = @(Find-Python)
if ($Python.Count -eq 0) {
    $text = "AllTalk GUI needs Python 3.11 (64-bit). Install it now with winget (Windows' package manager)?`r`n`r`n" +
        "No: the download page opens; choose the Windows installer (64-bit) and tick 'py launcher'."
    $answer = [System.Windows.Forms.MessageBox]::Show($text, "AllTalk GUI", "YesNo", "Question")
    if ($answer -eq "Yes" -and (Get-Command winget.exe -ErrorAction SilentlyContinue)) {
        $winget = Start-Process -FilePath "winget.exe" -PassThru -Wait -ArgumentList @("install", "--exact", "--id",
            "Python.Python.3.11", "--scope", "user", "--accept-package-agreements", "--accept-source-agreements")
        $Python = @(Find-Python)
    }
    if ($Python.Count -eq 0) {
        Start-Process "https://www.python.org/downloads/windows/"
        Show-Message "Install Python 3.11 (64-bit, with the 'py launcher'), then start AllTalk GUI again." "Information"
        exit $Shown
    }
}

# The install: the helper (in the Python found) logs every step; this window follows the log.
$logStart = if ([System.IO.File]::Exists($Log)) { (New-Object System.IO.FileInfo($Log)).Length } else { 0 }
if ([System.IO.File]::Exists($Result)) { [System.IO.File]::Delete($Result) }
$Process = Start-Program $Python[0] (@($Python | Select-Object -Skip 1) + @($Helper, "install") + $HelperOptions)
$null = $Process.Handle  # without touching Handle, Windows PowerShell reports no ExitCode once it has exited

$Form = New-Object System.Windows.Forms.Form
$Form.Text = "Installing AllTalk GUI"
$Form.Size = New-Object System.Drawing.Size(660, 420)
$Form.StartPosition = "CenterScreen"
$Label = New-Object System.Windows.Forms.Label
$Label.Text = "Setting up AllTalk GUI for its first start: PyTorch, Qt and the speech models' code (a few GB). " +
    "This takes several minutes; later starts are immediate."
$Label.SetBounds(12, 10, 620, 62)  # room for a helper message of four lines
$Bar = New-Object System.Windows.Forms.ProgressBar
$Bar.Style = "Marquee"
$Bar.SetBounds(12, 76, 620, 18)
$Output = New-Object System.Windows.Forms.TextBox
$Output.Multiline = $true
$Output.ReadOnly = $true
$Output.ScrollBars = "Vertical"
$Output.Font = New-Object System.Drawing.Font("Consolas", 8)
$Output.SetBounds(12, 102, 620, 222)
$Button = New-Object System.Windows.Forms.Button
$Button.Text = "Cancel"
$Button.SetBounds(552, 336, 80, 26)
$Button.Add_Click({ $Form.Close() })
$Form.Controls.AddRange(@($Label, $Bar, $Output, $Button))
$script:Cancelled = $false

$Form.Add_FormClosing({
    param($source, $e)
    if ($Process.HasExited) { return }
    $answer = [System.Windows.Forms.MessageBox]::Show("Stop the installation? The next start continues it.",
        "AllTalk GUI", "YesNo", "Question")
    if ($answer -eq "Yes") {
        & taskkill.exe /T /F /PID $Process.Id | Out-Null
        $script:Cancelled = $true
    } else {
        $e.Cancel = $true  # closing the window must not leave the installer running unseen
    }
})

$Timer = New-Object System.Windows.Forms.Timer
$Timer.Interval = 500
$Timer.Add_Tick({
    $tail = Read-LogTail $Log $logStart 30
    if ($tail -ne $Output.Text) {
        $step = [regex]::Matches($tail, '(?m)^\[(\d)/(\d)\] (.*)$')  # the helper's "[3/5] Installing PyTorch ..."
        if ($step.Count -gt 0) {
            $last = $step[$step.Count - 1].Groups
            $Form.Text = "Installing AllTalk GUI: step $($last[1].Value) of $($last[2].Value)"
        }
        $Output.Text = $tail
        $Output.SelectionStart = $Output.Text.Length
        $Output.ScrollToCaret()
    }
    if ($Process.HasExited) {
        $Timer.Stop()
        if ($Process.ExitCode -eq 0) { $Form.Close(); return }
        $Bar.Style = "Blocks"
        $message = "The installation stopped (exit status $($Process.ExitCode)); the log is $Log."
        if ([System.IO.File]::Exists($Result)) {
            $message = ([System.IO.File]::ReadAllText($Result, [System.Text.Encoding]::UTF8) | ConvertFrom-Json).message
        }
        $Label.Text = $message
        $Label.ForeColor = [System.Drawing.Color]::DarkRed
        $Button.Text = "Close"
    }
})
$Timer.Start()
[void]$Form.ShowDialog()

if ($script:Cancelled -or -not $Process.HasExited -or $Process.ExitCode -ne 0) { exit $Shown }
$summary = [System.IO.File]::ReadAllText($Result, [System.Text.Encoding]::UTF8) | ConvertFrom-Json
if (@($summary.warnings).Count -gt 0) {
    Show-Message ("AllTalk GUI is installed. Please note:`r`n`r`n" + (@($summary.warnings) -join "`r`n`r`n")) "Warning"
}
Start-App
