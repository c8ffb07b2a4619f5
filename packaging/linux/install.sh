#!/bin/sh
# Install this Captionist folder for the current user (no root needed):
#   the folder      -> ~/.local/opt/captionist
#   the command     -> ~/.local/bin/captionist
#   the menu entry  -> ~/.local/share/applications/captionist.desktop, icons under ~/.local/share/icons
# ./install.sh --uninstall removes all of it again (settings, models and transcripts stay).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
DATA=${XDG_DATA_HOME:-$HOME/.local/share}
DEST=$HOME/.local/opt/captionist
BIN=$HOME/.local/bin
ICONS=$DATA/icons/hicolor

refresh_menus() {  # where the desktop has these caches; a failure here leaves the install usable
  if command -v update-desktop-database >/dev/null 2>&1; then
    update-desktop-database -q "$DATA/applications" || true
  fi
  if command -v gtk-update-icon-cache >/dev/null 2>&1; then
    gtk-update-icon-cache -q -t "$ICONS" || true
  fi
}

if [ "${1:-}" = "--uninstall" ]; then
  rm -rf "$DEST"
  rm -f "$BIN/captionist" "$DATA/applications/captionist.desktop"
  find "$ICONS" -name 'captionist.*' -path '*/apps/*' -delete 2>/dev/null || true
  refresh_menus
  echo "Captionist removed."
  exit 0
fi

if [ "$HERE" != "$DEST" ]; then
  rm -rf "$DEST"
  mkdir -p "$(dirname "$DEST")"
  cp -a "$HERE" "$DEST"
fi
mkdir -p "$BIN" "$DATA/applications"
ln -sf "$DEST/captionist" "$BIN/captionist"
sed "s|^Exec=.*|Exec=\"$DEST/captionist\"|; s|^Icon=.*|Icon=captionist|" \
  "$DEST/share/applications/captionist.desktop" > "$DATA/applications/captionist.desktop"
(cd "$DEST/share/icons/hicolor" && find . -type f) | while read -r icon; do
  mkdir -p "$ICONS/$(dirname "$icon")"
  cp "$DEST/share/icons/hicolor/$icon" "$ICONS/$icon"
done
refresh_menus
echo "Captionist installed: open it from the applications menu, or run $BIN/captionist"
