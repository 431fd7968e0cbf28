#!/usr/bin/env bash
# Starts AllTalk GUI from the desktop menu (packaging/linux/install.sh points the menu entry here).
#
# Later starts: the app's environment (.venv in the checkout) is there and matches pyproject.toml, so the app
# starts at once. First start, or after an update changed pyproject.toml: the environment is created or updated
# first (packaging/linux/first_run_install.sh, a few GB, several minutes) with a visible progress window:
#   1. a Tk window (install_progress.py), when the system python3 has tkinter and a display is there;
#   2. else zenity's progress dialog;
#   3. else a terminal window (x-terminal-emulator, gnome-terminal, konsole, xfce4-terminal, xterm);
#   4. else, when started from a terminal, in that terminal;
#   5. else silently, with desktop notifications (notify-send) at the start and the end.
# Every install writes its output to ~/.local/state/alltalk_gui/install.log.
# ALLTALK_GUI_PROGRESS=tk|zenity|terminal|console|notify forces one of these (for tests and for users whose
# desktop lacks the usual ones).
set -uo pipefail
HERE="$(cd "$(dirname "$(readlink -f "$0")")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
VENV="$ROOT/.venv"
STAMP="$VENV/.alltalk-gui-installed"
STATE="${XDG_STATE_HOME:-$HOME/.local/state}/alltalk_gui"
LOG="$STATE/install.log"
# ALLTALK_GUI_INSTALL_SCRIPT replaces the install step (the tests use it to try every kind of progress display
# without downloading several GB each time).
INSTALL=(bash "${ALLTALK_GUI_INSTALL_SCRIPT:-$HERE/first_run_install.sh}")

# The environment is current when it was installed from this exact pyproject.toml (dependencies and version).
wanted="$(sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1)"
if [ -x "$VENV/bin/alltalk-gui" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$wanted" ]; then
  exec "$VENV/bin/alltalk-gui" "$@"
fi

notify() { command -v notify-send >/dev/null 2>&1 && notify-send -i "$ROOT/resources/icons/alltalk-gui-128.png" "AllTalk GUI" "$1"; true; }

# A Python the app supports (3.10-3.12) for the environment; setup scripts read $PYTHON.
if [ -z "${PYTHON:-}" ]; then
  for candidate in python3 python3.12 python3.11 python3.10; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys, venv; sys.exit(not (3, 10) <= sys.version_info[:2] <= (3, 12))' 2>/dev/null; then
      PYTHON="$candidate"; break
    fi
  done
fi
if [ -z "${PYTHON:-}" ]; then
  message="AllTalk GUI needs Python 3.10, 3.11 or 3.12 with its venv module (Debian/Ubuntu: python3-venv)."
  echo "$message" >&2; notify "$message"; exit 1
fi
export PYTHON
mkdir -p "$STATE"
export SUDO_ASKPASS="$HERE/askpass.sh"  # used by system_packages.sh only when there is no terminal

have_display() { [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; }

run_with_tk() {
  "$PYTHON" "$HERE/install_progress.py" "$LOG" "${INSTALL[@]}"
}

run_with_zenity() {
  # zenity reads lines starting with '#' as the text to show; everything also goes to the log.
  set -o pipefail
  { "${INSTALL[@]}" 2>&1 | tee -a "$LOG" | sed -u 's/^/# /'; } |
    zenity --progress --pulsate --auto-close --no-cancel --width=560 --title="Installing AllTalk GUI" \
      --text="Setting up AllTalk GUI for its first start (a few GB, several minutes)…"
  local status=${PIPESTATUS[0]}
  [ "$status" = 0 ] || zenity --error --width=480 --text="The installation failed. See $LOG"
  return "$status"
}

run_in_terminal() {
  local term script="$STATE/install-in-terminal.sh" command waited
  local status_file="$STATE/install.status" pid_file="$STATE/install.pid"
  command="$(printf '%q ' "${INSTALL[@]}")"
  for term in x-terminal-emulator gnome-terminal konsole xfce4-terminal xterm; do
    command -v "$term" >/dev/null 2>&1 || continue
    rm -f "$status_file" "$pid_file"
    cat >"$script" <<EOF
echo \$\$ > $(printf '%q' "$pid_file")
echo "Setting up AllTalk GUI for its first start (a few GB, several minutes)."
$command 2>&1 | tee -a $(printf '%q' "$LOG"); status=\${PIPESTATUS[0]}
echo \$status > $(printf '%q' "$status_file")
[ \$status = 0 ] || { echo "The installation failed; the log is in $LOG. Press Enter to close."; read -r _; }
EOF
    case "$term" in
      gnome-terminal) "$term" --wait -- bash "$script" ;;
      *) "$term" -e bash "$script" ;;
    esac
    # Some terminals return at once and run the script in a server process, so follow the script itself: it
    # writes its PID when it starts and its status when it ends. A window closed early leaves no status.
    waited=0
    while [ ! -s "$pid_file" ] && [ "$waited" -lt 30 ]; do sleep 1; waited=$((waited + 1)); done
    [ -s "$pid_file" ] || continue  # this terminal did not run it; try the next one
    while [ ! -s "$status_file" ] && kill -0 "$(cat "$pid_file")" 2>/dev/null; do sleep 1; done
    [ -s "$status_file" ] || return 130
    return "$(cat "$status_file")"
  done
  return 127
}

run_in_console() {
  echo "Setting up AllTalk GUI for its first start (a few GB, several minutes); log: $LOG"
  "${INSTALL[@]}" 2>&1 | tee -a "$LOG"
  return "${PIPESTATUS[0]}"
}

run_with_notifications() {
  notify "Setting up AllTalk GUI for its first start: a few GB, several minutes. It opens when ready."
  "${INSTALL[@]}" >>"$LOG" 2>&1
  local status=$?
  [ "$status" = 0 ] || notify "The installation failed; see $LOG"
  return "$status"
}

install() {
  local mode="${ALLTALK_GUI_PROGRESS:-}" status
  if [ -z "$mode" ] || [ "$mode" = tk ]; then
    if have_display || [ "$mode" = tk ]; then
      run_with_tk; status=$?
      [ "$status" != 3 ] && return "$status"  # 3: no window could be opened; try the next way
    fi
  fi
  if { [ -z "$mode" ] && have_display && command -v zenity >/dev/null 2>&1; } || [ "$mode" = zenity ]; then
    run_with_zenity; return $?
  fi
  if { [ -z "$mode" ] && have_display && [ ! -t 1 ]; } || [ "$mode" = terminal ]; then
    run_in_terminal; status=$?
    [ "$status" != 127 ] && return "$status"
  fi
  if { [ -z "$mode" ] && [ -t 1 ]; } || [ "$mode" = console ]; then
    run_in_console; return $?
  fi
  run_with_notifications
}

install
status=$?
if [ "$status" != 0 ]; then
  echo "AllTalk GUI: the installation did not finish (status $status); log: $LOG" >&2
  exit "$status"
fi
echo "$wanted" >"$STAMP"
exec "$VENV/bin/alltalk-gui" "$@"
