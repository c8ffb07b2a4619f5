#!/usr/bin/env bash
# Captionist.app -> a .dmg (the app and a link to /Applications). Signed, notarized and stapled when
# the credentials are in the environment; unsigned otherwise (the app then opens with right-click ->
# Open the first time).
#
#   bash packaging/macos/build_dmg.sh dist/Captionist.app dist/Captionist-0.1.0-macos-arm64.dmg \
#       packaging/macos/entitlements.plist
#
# Signing: MACOS_SIGN_IDENTITY      "Developer ID Application: NAME (TEAMID)"
#          MACOS_CERTIFICATE_P12    the certificate as base64 (optional: imported into a temporary
#          MACOS_CERTIFICATE_PASSWORD  keychain, as CI needs; without it the login keychain is used)
# Notarizing (needs signing): APPLE_ID, APPLE_TEAM_ID, APPLE_APP_PASSWORD (an app-specific password)
#
# Order: every Mach-O file inside out (libraries and plug-ins, then frameworks, then the app with the
# hardened runtime and entitlements), verify, notarize the app and staple it, build the .dmg, sign,
# notarize and staple the .dmg too, so both work offline on first open.
set -euo pipefail
APP=${1:?usage: build_dmg.sh APP DMG ENTITLEMENTS}
DMG=${2:?usage: build_dmg.sh APP DMG ENTITLEMENTS}
ENTITLEMENTS=${3:?usage: build_dmg.sh APP DMG ENTITLEMENTS}
IDENTITY=${MACOS_SIGN_IDENTITY:-}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"; [ -n "${KEYCHAIN:-}" ] && security delete-keychain "$KEYCHAIN" >/dev/null 2>&1 || true' EXIT

say() { echo "build_dmg: $*"; }

import_certificate() {
  KEYCHAIN="$WORK/signing.keychain-db"
  local password
  password=$(uuidgen)
  echo "$MACOS_CERTIFICATE_P12" | base64 --decode > "$WORK/cert.p12"
  security create-keychain -p "$password" "$KEYCHAIN"
  security set-keychain-settings -lut 3600 "$KEYCHAIN"
  security unlock-keychain -p "$password" "$KEYCHAIN"
  security import "$WORK/cert.p12" -k "$KEYCHAIN" -P "${MACOS_CERTIFICATE_PASSWORD:-}" -T /usr/bin/codesign
  security set-key-partition-list -S apple-tool:,apple: -s -k "$password" "$KEYCHAIN" >/dev/null
  local keychains=("$KEYCHAIN") line  # codesign searches the new keychain first, then the user's
  while IFS= read -r line; do
    line=${line#*\"}
    keychains+=("${line%\"*}")
  done < <(security list-keychains -d user)
  security list-keychains -d user -s "${keychains[@]}"
  rm -f "$WORK/cert.p12"
}

sign() {  # sign FILE [extra codesign options]
  local target=$1
  shift
  codesign --force --timestamp --options runtime --sign "$IDENTITY" "$@" "$target"
}

sign_app() {
  # 1. Every Mach-O file that is not a bundle's main executable, deepest first.
  find "$APP/Contents" -type f -print0 | while IFS= read -r -d '' f; do
    if file -b "$f" | grep -q "Mach-O"; then
      echo "$(awk -F/ '{print NF}' <<< "$f") $f"
    fi
  done | sort -rn | cut -d' ' -f2- | while IFS= read -r f; do
    [ "$f" = "$APP/Contents/MacOS/Captionist" ] && continue
    sign "$f"
  done
  # 2. Framework bundles (Qt), deepest first, sealing the files signed above.
  find "$APP/Contents" -type d -name "*.framework" | awk -F/ '{print NF" "$0}' | sort -rn | cut -d' ' -f2- \
    | while IFS= read -r fw; do sign "$fw"; done
  # 3. The app itself: its executable, with the hardened runtime's entitlements.
  sign "$APP" --entitlements "$ENTITLEMENTS"
  codesign --verify --deep --strict --verbose=2 "$APP"
  spctl --assess --type execute --verbose "$APP" || say "spctl: not accepted yet (accepted after notarization)"
}

notarize() {  # notarize FILE (a .zip or .dmg) and wait for Apple's verdict
  xcrun notarytool submit "$1" --apple-id "$APPLE_ID" --team-id "$APPLE_TEAM_ID" \
    --password "$APPLE_APP_PASSWORD" --wait --timeout 60m
}

make_dmg() {
  local staging="$WORK/dmg"
  mkdir -p "$staging"
  ditto "$APP" "$staging/$(basename "$APP")"
  ln -s /Applications "$staging/Applications"
  rm -f "$DMG"
  hdiutil create -volname "Captionist" -srcfolder "$staging" -fs HFS+ -format UDZO -ov "$DMG"
}

[ -d "$APP" ] || { echo "build_dmg: $APP not found (run make -C packaging macos)" >&2; exit 1; }
if [ -z "$IDENTITY" ]; then
  say "MACOS_SIGN_IDENTITY is not set: building an unsigned .dmg"
  make_dmg
  say "$DMG (unsigned)"
  exit 0
fi

[ -n "${MACOS_CERTIFICATE_P12:-}" ] && import_certificate
say "signing with $IDENTITY"
sign_app
NOTARIZE=0
if [ -n "${APPLE_ID:-}" ] && [ -n "${APPLE_TEAM_ID:-}" ] && [ -n "${APPLE_APP_PASSWORD:-}" ]; then
  NOTARIZE=1
  say "notarizing the app"
  ditto -c -k --keepParent "$APP" "$WORK/Captionist.zip"
  notarize "$WORK/Captionist.zip"
  xcrun stapler staple "$APP"
else
  say "APPLE_ID / APPLE_TEAM_ID / APPLE_APP_PASSWORD not set: signed but not notarized"
fi
make_dmg
codesign --force --timestamp --sign "$IDENTITY" "$DMG"
if [ "$NOTARIZE" = 1 ]; then
  say "notarizing the dmg"
  notarize "$DMG"
  xcrun stapler staple "$DMG"
  xcrun stapler validate "$DMG"
fi
say "$DMG (signed$([ "$NOTARIZE" = 1 ] && echo ", notarized and stapled"))"
