#!/usr/bin/env bash
# Puts AllTalk GUI into the desktop's application menu for this user: the icon (every size, plus the SVG) in
# the hicolor theme and a menu entry whose Exec is this checkout's launcher. Nothing is installed system-wide
# and nothing is downloaded; the first start from the menu sets up the environment (see the launcher).
# Usage: install.sh                  menu entry for this checkout (its launcher sets up .venv on first start)
#        install.sh --frozen DIR     menu entry for a frozen build (DIR/alltalk-gui, from packaging/build.sh)
#        install.sh --uninstall
set -euo pipefail
HERE="$(cd "$(dirname "$(readlink -f "$0")")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DATA="${XDG_DATA_HOME:-$HOME/.local/share}"
APPS="$DATA/applications"
ICONS="$DATA/icons/hicolor"
ENTRY="$APPS/alltalk-gui.desktop"
SIZES="16 24 32 48 64 128 256 512"

refresh_caches() {
  # Menus pick up new entries by themselves on most desktops; these make it immediate where they exist.
  command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database -q "$APPS" || true
  # Only refresh an icon cache that already exists: creating one would hide icons other programs add later.
  if [ -f "$ICONS/icon-theme.cache" ] && command -v gtk-update-icon-cache >/dev/null 2>&1; then
    gtk-update-icon-cache -q -t "$ICONS" 2>/dev/null || true
  fi
}

if [ "${1:-}" = "--uninstall" ]; then
  rm -f "$ENTRY" "$ICONS/scalable/apps/alltalk-gui.svg"
  for size in $SIZES; do rm -f "$ICONS/${size}x${size}/apps/alltalk-gui.png"; done
  refresh_caches
  echo "Removed AllTalk GUI from the menu."
  exit 0
fi

for size in $SIZES; do
  install -D -m 644 "$ROOT/resources/icons/alltalk-gui-$size.png" "$ICONS/${size}x${size}/apps/alltalk-gui.png"
done
install -D -m 644 "$ROOT/resources/icons/alltalk-gui.svg" "$ICONS/scalable/apps/alltalk-gui.svg"

# Exec and TryExec point at this checkout's launcher (or the frozen app); Exec quotes the path (the spec's rule
# for spaces), TryExec takes it bare.
launcher="$HERE/alltalk-gui-launcher.sh"
if [ "${1:-}" = "--frozen" ]; then
  launcher="$(realpath "${2:?--frozen needs the build folder, e.g. build-frozen/dist/alltalk-gui}")/alltalk-gui"
  [ -x "$launcher" ] || { echo "$launcher is not there; build it with packaging/build.sh" >&2; exit 1; }
fi
# Escaping, in the spec's order: inside the double quotes \ " ` $ take a backslash, % becomes %% (field codes),
# then the whole value is a desktop-file string, where every backslash is doubled. The values go into the file
# through awk's ENVIRON, never through a sed replacement, where & | and \ in a path would mean something.
exec_arg="$(printf '%s' "$launcher" | sed -e 's/[\\"`$]/\\&/g' -e 's/%/%%/g' -e 's/\\/\\\\/g')"
try_exec="$(printf '%s' "$launcher" | sed -e 's/\\/\\\\/g')"
mkdir -p "$APPS"
workdir="$(mktemp -d)"
trap 'rm -rf "$workdir"' EXIT
tmp="$workdir/alltalk-gui.desktop"  # validated before it goes where the menu can see it
EXEC_LINE="Exec=\"$exec_arg\"" TRY_EXEC_LINE="TryExec=$try_exec" awk '
  /^Exec=/ { print ENVIRON["EXEC_LINE"]; next }
  /^TryExec=/ { print ENVIRON["TRY_EXEC_LINE"]; next }
  { print }' "$HERE/alltalk-gui.desktop" >"$tmp"
if command -v desktop-file-validate >/dev/null 2>&1 && ! desktop-file-validate "$tmp"; then
  echo "The menu entry did not validate (see above); nothing was installed." >&2
  exit 1
fi
install -m 644 "$tmp" "$ENTRY"
refresh_caches
echo "Installed the menu entry $ENTRY"
echo "Start AllTalk GUI from the menu; its first start sets up the environment (a few GB, several minutes)."
