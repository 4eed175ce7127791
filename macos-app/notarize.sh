#!/bin/sh
# Notarizes a signed "Captain Hook.app" and staples the ticket, so Gatekeeper accepts it offline.
# macOS with Xcode's command line tools only; nothing here can run on Linux.
#
# Credentials, one of:
#   CAPT_HOOK_NOTARY_PROFILE   a keychain profile made once with `xcrun notarytool store-credentials`
#   CAPT_HOOK_APPLE_ID, CAPT_HOOK_TEAM_ID, CAPT_HOOK_APP_PASSWORD
#                              an Apple ID, its team, and an app-specific password (CI)
#
# usage: macos-app/notarize.sh "target/app/Captain Hook.app"
set -eu

app="${1:?usage: notarize.sh <path to Captain Hook.app>}"
if [ "$(uname -s)" != Darwin ]; then
  echo "notarize.sh: notarytool and stapler exist only on macOS; this is $(uname -s)" >&2
  exit 1
fi
codesign --verify --strict --deep "$app" || { echo "notarize.sh: sign $app first (macos-app/sign.sh)" >&2; exit 1; }

if [ -n "${CAPT_HOOK_NOTARY_PROFILE:-}" ]; then
  set -- --keychain-profile "$CAPT_HOOK_NOTARY_PROFILE"
elif [ -n "${CAPT_HOOK_APPLE_ID:-}" ] && [ -n "${CAPT_HOOK_TEAM_ID:-}" ] && [ -n "${CAPT_HOOK_APP_PASSWORD:-}" ]; then
  set -- --apple-id "$CAPT_HOOK_APPLE_ID" --team-id "$CAPT_HOOK_TEAM_ID" --password "$CAPT_HOOK_APP_PASSWORD"
else
  echo "notarize.sh: set CAPT_HOOK_NOTARY_PROFILE, or CAPT_HOOK_APPLE_ID + CAPT_HOOK_TEAM_ID + CAPT_HOOK_APP_PASSWORD" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
zip="$work/Captain Hook.zip"
# notarytool takes a zip, dmg or pkg; ditto keeps the bundle's symlinks and extended attributes.
ditto -c -k --keepParent "$app" "$zip"
xcrun notarytool submit "$zip" --wait "$@"
xcrun stapler staple "$app"
spctl --assess --type execute --verbose "$app"
echo "notarized and stapled $app"
