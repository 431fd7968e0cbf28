@echo off
rem Double-click to start AllTalk GUI. The first start installs it (a few GB, several minutes) with a
rem progress window; later starts are immediate. See packaging\windows\README.md.
powershell.exe -NoProfile -ExecutionPolicy Bypass -WindowStyle Hidden -File "%~dp0alltalk-gui-launcher.ps1" %*
