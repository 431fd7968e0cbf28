@echo off
rem Double-click to start AllTalk GUI. The first start installs it (a few GB, several minutes) with a
rem progress window; later starts are immediate. See packaging\windows\README.md.
rem The launcher exits with 0 (fine) or 2 (it showed its own message). 1 means PowerShell did not run it at
rem all, usually because a Group Policy forbids scripts (-ExecutionPolicy Bypass cannot override one); the
rem window is hidden, so that is said in a message box (-Command is not subject to the script policy).
setlocal
powershell.exe -NoProfile -ExecutionPolicy Bypass -WindowStyle Hidden -File "%~dp0alltalk-gui-launcher.ps1" %*
if errorlevel 2 exit /b 0
if errorlevel 1 powershell.exe -NoProfile -Command "Add-Type -AssemblyName System.Windows.Forms; [void][System.Windows.Forms.MessageBox]::Show('PowerShell did not run the AllTalk GUI launcher (alltalk-gui-launcher.ps1 beside AllTalk GUI.bat). Usually a Group Policy forbids PowerShell scripts on this computer: ask its administrator to allow this one. To see the exact error, run AllTalk GUI.bat from a Command Prompt.', 'AllTalk GUI', 'OK', 'Error')"
