#!/bin/sh
# Signs "Captain Hook.app" with a Developer ID identity, inside out: every helper, then the main
# executable, then the bundle, each with the hardened runtime and a secure timestamp (both are
# required for notarization). macOS only; nothing here can run on Linux.
#
#   CAPT_HOOK_SIGN_IDENTITY  the identity, e.g. "Developer ID Application: Jane Doe (TEAMID1234)"
#                            (`security find-identity -v -p codesigning` lists yours)
#   CAPT_HOOK_KEYCHAIN       optional: the keychain holding it (CI imports one)
#
# usage: macos-app/sign.sh "target/app/Captain Hook.app"
set -eu

app="${1:?usage: sign.sh <path to Captain Hook.app>}"
if [ "$(uname -s)" != Darwin ]; then
  echo "sign.sh: codesign exists only on macOS; this is $(uname -s)" >&2
  exit 1
fi
identity="${CAPT_HOOK_SIGN_IDENTITY:?set CAPT_HOOK_SIGN_IDENTITY to a Developer ID Application identity}"
here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
[ -f "$app/Contents/Info.plist" ] || { echo "sign.sh: $app is not an app bundle (no Contents/Info.plist)" >&2; exit 1; }

set -- --force --options runtime --timestamp --entitlements "$here/entitlements.plist" --sign "$identity"
if [ -n "${CAPT_HOOK_KEYCHAIN:-}" ]; then
  set -- "$@" --keychain "$CAPT_HOOK_KEYCHAIN"
fi

# Nested code first: a bundle's signature seals the signatures of what it contains.
for helper in "$app"/Contents/Helpers/*; do
  codesign "$@" "$helper"
done
codesign "$@" "$app/Contents/MacOS/capt-hook"
codesign "$@" "$app"

codesign --verify --strict --deep --verbose=2 "$app"
echo "signed $app as $identity"
