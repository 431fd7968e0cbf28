#!/usr/bin/env bash
# Installs (or, without root, names) the Debian/Ubuntu packages the app and its tests need:
#   Qt offscreen/xcb: libegl1 libgl1 libfontconfig1 libxkbcommon0 libglib2.0-0 libdbus-1-3 fonts-dejavu-core
#   Chinese, Japanese and Korean text in the transcript editor: fonts-noto-cjk
#   Qt's xcb plugin (windows on X11, and under XWayland): libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1
#     libxkbcommon-x11-0 libxcb-image0 libxcb-randr0 libxcb-render-util0 libxcb-shape0 libxcb-xkb1
#   QtMultimedia playback: libpulse0      synthetic speech for tests: espeak-ng
#   .desktop validation: desktop-file-utils      X display tests (progress window, window class): xvfb x11-utils
# On other systems it does nothing: Windows and macOS wheels of PySide6 bring what they need.
# Usage: system_packages.sh [runtime]   "runtime" leaves out the packages only the tests use (the desktop
# launcher passes it). Without a terminal, sudo asks for the password through $SUDO_ASKPASS when that is set.
set -euo pipefail
PACKAGES="libegl1 libgl1 libfontconfig1 libxkbcommon0 libglib2.0-0 libdbus-1-3 fonts-dejavu-core fonts-noto-cjk libpulse0"
PACKAGES="$PACKAGES libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxkbcommon-x11-0 libxcb-image0 libxcb-randr0"
PACKAGES="$PACKAGES libxcb-render-util0 libxcb-shape0 libxcb-xkb1"
[ "${1:-}" = runtime ] || PACKAGES="$PACKAGES espeak-ng desktop-file-utils xvfb x11-utils"
command -v dpkg-query >/dev/null 2>&1 || exit 0
missing=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "Installing system packages:$missing"
if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1; then
  SUDO="sudo"; [ ! -t 0 ] && [ -n "${SUDO_ASKPASS:-}" ] && SUDO="sudo -A"
else
  echo "Please install these packages (as root):$missing" >&2; exit 1
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
