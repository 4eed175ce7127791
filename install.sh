#!/bin/sh
# Installs a captain-hook release (made by `cargo xtask release`) for the current user, without
# Rust:
#
#   sh install.sh [--pubkey KEY] [--target TRIPLE] SOURCE
#
# SOURCE is a release directory or the URL of one (holding SHA256SUMS, SHA256SUMS.minisig,
# manifest.json and an archive per target). KEY is the minisign public key the release must be
# signed with: a file, or the key itself (the base64 line); else $CAPT_HOOK_RELEASE_PUBKEY, else
# the project's key below.
#
# Order of trust: nothing from SOURCE is unpacked or run before it is verified. First the
# signature over SHA256SUMS, then the digest of every file fetched, all in a temp directory;
# only then is the archive unpacked, and only then is anything in the user's home changed. On
# any mismatch it refuses, names the file, and changes nothing.
#
# The signature is checked with `minisign` when it is on PATH, else by this script itself with
# `openssl` (Ed25519 and BLAKE2b, OpenSSL 1.1.1 or later). Not with a verifier shipped in the
# release: a tampered release would ship a verifier that approves it, and the installed
# `capt-hook` cannot vouch for itself before it is trusted.
#
# What it installs, as `cargo xtask install` does: the binaries into
# ~/.local/share/captain-hook/bin, the SDK's source into .../sdk, the Claude Code plugin into
# .../plugin with its bin/hook linked to the native client, the hooks files' JSON Schema into
# .../hooks.schema.json (where `capt-hook init` points a new file's #:schema line), this script
# and the key it verified with into .../install.sh and .../release.pub (the host's release
# check reads releases with them). A running
# host of an older install is stopped first (it drains; the next event starts the new one).

set -eu

# The project's release key (minisign, base64). Empty until the project publishes one: until
# then --pubkey or CAPT_HOOK_RELEASE_PUBKEY is required.
RELEASE_PUBKEY=''

prog=install.sh
say() { printf '%s: %s\n' "$prog" "$*" >&2; }
die() { say "$*"; exit 1; }
refuse() {
    say "refusing to install: $*"
    say "nothing was installed or changed"
    exit 1
}

usage() {
    printf 'usage: sh install.sh [--pubkey KEY] [--target TRIPLE] SOURCE\n' >&2
    exit 2
}

pubkey="${CAPT_HOOK_RELEASE_PUBKEY:-$RELEASE_PUBKEY}"
target=''
source=''
while [ "$#" -gt 0 ]; do
    case "$1" in
        --pubkey) [ "$#" -ge 2 ] || usage; pubkey="$2"; shift 2 ;;
        --target) [ "$#" -ge 2 ] || usage; target="$2"; shift 2 ;;
        -h|--help) usage ;;
        -*) say "unknown option $1"; usage ;;
        *) [ -z "$source" ] || usage; source="$1"; shift ;;
    esac
done
[ -n "$source" ] || usage
[ -n "${HOME:-}" ] || die "HOME is not set"

work=$(mktemp -d "${TMPDIR:-/tmp}/captain-hook-install.XXXXXX") || die "cannot make a temp directory"
trap 'rm -rf "$work"' EXIT
trap 'exit 1' HUP INT TERM

# The trusted key, as the base64 line minisign writes.
if [ -z "$pubkey" ]; then
    die "no trusted release key: pass --pubkey KEY (the project's published minisign public key, a file or its base64 line) or set CAPT_HOOK_RELEASE_PUBKEY"
fi
if [ -f "$pubkey" ]; then
    keyline=$(sed -n 2p "$pubkey")
else
    keyline=$pubkey
fi
case "$keyline" in
    ''|*[!A-Za-z0-9+/=]*) die "the trusted key is not a minisign public key (a file, or its base64 line): $pubkey" ;;
esac

# fetch NAME: SOURCE's file NAME into $work/NAME.
fetch() {
    case "$source" in
        http://*|https://*)
            url="${source%/}/$1"
            if command -v curl >/dev/null 2>&1; then
                curl -fsSL -o "$work/$1" "$url" || refuse "cannot download $url"
            elif command -v wget >/dev/null 2>&1; then
                wget -q -O "$work/$1" "$url" || refuse "cannot download $url"
            else
                die "neither curl nor wget is installed to download $url"
            fi
            ;;
        *)
            [ -d "$source" ] || die "$source is neither a directory nor an http(s) URL"
            [ -f "$source/$1" ] || refuse "$source/$1 is missing from the release"
            cp "$source/$1" "$work/$1"
            ;;
    esac
}

# Where a file of the release is named in messages.
origin() {
    case "$source" in
        http://*|https://*) printf '%s/%s' "${source%/}" "$1" ;;
        *) printf '%s/%s' "$source" "$1" ;;
    esac
}

# hex FILE: the file's bytes as lowercase hex, no spaces.
hex() { od -An -v -tx1 "$1" | tr -d ' \n'; }

# b64decode: stdin base64 to stdout bytes.
b64decode() {
    if command -v openssl >/dev/null 2>&1; then
        openssl base64 -d -A
    else
        base64 -d
    fi
}

# slice FILE SKIP COUNT: COUNT bytes of FILE from SKIP.
slice() { dd if="$1" bs=1 skip="$2" count="$3" 2>/dev/null; }

# verify_openssl: minisign's check of SHA256SUMS.minisig, done here with openssl. The signature
# line is "ED" + key id + Ed25519(BLAKE2b-512(file)); the global signature is Ed25519 over that
# signature followed by the trusted comment.
verify_openssl() {
    v="$work/verify"
    mkdir "$v"
    printf '%s' "$keyline" | b64decode >"$v/pk.bin" 2>/dev/null || return 1
    sed -n 2p "$work/SHA256SUMS.minisig" | b64decode >"$v/sig.bin" 2>/dev/null || return 1
    comment=$(sed -n 3p "$work/SHA256SUMS.minisig")
    case "$comment" in
        'trusted comment: '*) comment=${comment#trusted comment: } ;;
        *) return 1 ;;
    esac
    sed -n 4p "$work/SHA256SUMS.minisig" | b64decode >"$v/global.bin" 2>/dev/null || return 1
    [ "$(wc -c <"$v/pk.bin" | tr -d ' ')" = 42 ] || return 1
    [ "$(wc -c <"$v/sig.bin" | tr -d ' ')" = 74 ] || return 1
    [ "$(wc -c <"$v/global.bin" | tr -d ' ')" = 64 ] || return 1
    # "Ed" for the key; "ED" (prehashed) for the signature: legacy signatures are refused.
    [ "$(slice "$v/pk.bin" 0 2 | od -An -tx1 | tr -d ' \n')" = 4564 ] || return 1
    [ "$(slice "$v/sig.bin" 0 2 | od -An -tx1 | tr -d ' \n')" = 4544 ] || return 1
    slice "$v/pk.bin" 2 8 >"$v/pk.id"
    slice "$v/sig.bin" 2 8 >"$v/sig.id"
    if [ "$(hex "$v/pk.id")" != "$(hex "$v/sig.id")" ]; then
        say "SHA256SUMS.minisig was made by another key than the trusted one"
        return 1
    fi
    # The key as a PEM SubjectPublicKeyInfo: the fixed DER prefix for Ed25519, then the key.
    { printf '\060\052\060\005\006\003\053\145\160\003\041\000'; slice "$v/pk.bin" 10 32; } >"$v/pk.der"
    {
        echo '-----BEGIN PUBLIC KEY-----'
        openssl base64 -A <"$v/pk.der"
        echo
        echo '-----END PUBLIC KEY-----'
    } >"$v/pk.pem"
    slice "$v/sig.bin" 10 64 >"$v/sig.raw"
    openssl dgst -blake2b512 -binary "$work/SHA256SUMS" >"$v/digest" || return 1
    openssl pkeyutl -verify -pubin -inkey "$v/pk.pem" -rawin -in "$v/digest" \
        -sigfile "$v/sig.raw" >/dev/null 2>&1 || return 1
    { cat "$v/sig.raw"; printf '%s' "$comment"; } >"$v/global.msg"
    openssl pkeyutl -verify -pubin -inkey "$v/pk.pem" -rawin -in "$v/global.msg" \
        -sigfile "$v/global.bin" >/dev/null 2>&1 || return 1
}

# sha256 FILE: its lowercase hex digest.
sha256() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | cut -d ' ' -f 1
    elif command -v shasum >/dev/null 2>&1; then
        shasum -a 256 "$1" | cut -d ' ' -f 1
    elif command -v openssl >/dev/null 2>&1; then
        openssl dgst -sha256 -r "$1" | cut -d ' ' -f 1
    else
        die "no sha256sum, shasum or openssl to check digests with"
    fi
}

# 1. The signature over SHA256SUMS.
fetch SHA256SUMS
fetch SHA256SUMS.minisig
if command -v minisign >/dev/null 2>&1; then
    verifier=minisign
    minisign -V -q -P "$keyline" -m "$work/SHA256SUMS" -x "$work/SHA256SUMS.minisig" >/dev/null 2>&1 ||
        refuse "$(origin SHA256SUMS.minisig) does not verify $(origin SHA256SUMS) with the trusted key (checked with minisign): the release was altered or signed by another key"
elif command -v openssl >/dev/null 2>&1 && openssl dgst -blake2b512 </dev/null >/dev/null 2>&1; then
    verifier=openssl
    verify_openssl ||
        refuse "$(origin SHA256SUMS.minisig) does not verify $(origin SHA256SUMS) with the trusted key (checked with openssl): the release was altered or signed by another key"
else
    die "neither minisign nor an openssl with Ed25519 and BLAKE2b is installed, so the release's signature cannot be checked; install one of them (e.g. apt-get install minisign)"
fi
say "signature of SHA256SUMS verified ($verifier)"

# 2. The lines of SHA256SUMS: plain file names only.
while read -r digest name; do
    case "$digest" in
        *[!0-9a-f]*|'') refuse "$(origin SHA256SUMS) has a line that is not '<sha256>  <file>': $digest $name" ;;
    esac
    [ "${#digest}" = 64 ] || refuse "$(origin SHA256SUMS) has a digest that is not 64 hex digits: $digest"
    case "$name" in
        ''|.*|*/*|*[!A-Za-z0-9._+-]*) refuse "$(origin SHA256SUMS) names a file outside the release: $name" ;;
    esac
done <"$work/SHA256SUMS"

# The archive for this machine.
archives=$(sed -n 's/^[0-9a-f]\{64\}  \(captain-hook-.*\.tar\.gz\)$/\1/p' "$work/SHA256SUMS")
[ -n "$archives" ] || refuse "$(origin SHA256SUMS) lists no archive"
if [ -z "$target" ]; then
    case "$(uname -m)" in
        x86_64|amd64) arch=x86_64 ;;
        aarch64|arm64) arch=aarch64 ;;
        *) arch=$(uname -m) ;;
    esac
    case "$(uname -s)" in
        Linux) os=linux ;;
        Darwin) os=apple-darwin ;;
        *) os=$(uname -s) ;;
    esac
    archive=''
    for a in $archives; do
        case "$a" in
            *"-$arch-"*"$os"*.tar.gz) archive=$a; break ;;
        esac
    done
    [ -n "$archive" ] || die "the release has no archive for $arch $os (it has: $(echo $archives)); pass --target to choose one"
else
    archive=''
    for a in $archives; do
        case "$a" in
            *"-$target.tar.gz") archive=$a ;;
        esac
    done
    [ -n "$archive" ] || die "the release has no archive for $target (it has: $(echo $archives))"
fi
top=${archive%.tar.gz}

# 3. Every file this install reads, against the signed digests; from a directory, every file
# the release lists.
case "$source" in
    http://*|https://*) needed="manifest.json $archive" ;;
    *) needed=$(cut -d ' ' -f 3 "$work/SHA256SUMS") ;;
esac
for name in $needed; do
    fetch "$name"
    want=$(awk -v n="$name" '$2 == n { print $1; exit }' "$work/SHA256SUMS")
    [ -n "$want" ] || refuse "$(origin "$name") is not listed in the signed SHA256SUMS"
    got=$(sha256 "$work/$name")
    [ "$got" = "$want" ] ||
        refuse "$(origin "$name") was changed: its sha256 is $got, the signed SHA256SUMS says $want"
done
say "every file matches the signed SHA256SUMS"
version=$(sed -n 's/^  "version": "\([^"]*\)",$/\1/p' "$work/manifest.json")

# 4. Unpack (into the temp directory) and check the layout before touching the home.
mkdir "$work/unpacked"
tar -xzf "$work/$archive" -C "$work/unpacked" || refuse "$(origin "$archive") cannot be unpacked"
stage="$work/unpacked/$top"
for f in bin/hook bin/capt-hookd bin/capt-hook-worker bin/capt-hook plugin/bin/hook sdk/BUILD-ID hooks.schema.json install.sh; do
    [ -f "$stage/$f" ] || refuse "$(origin "$archive") has no $top/$f"
done

# 5. Install.
share="$HOME/.local/share/captain-hook"
bin="$share/bin"
mkdir -p "$bin"
if [ -x "$bin/capt-hookd" ]; then
    "$bin/capt-hookd" shutdown >/dev/null 2>&1 || true
fi
for name in hook capt-hookd capt-hook-worker capt-hook; do
    # A new file renamed into place: a running client keeps its file.
    cp "$stage/bin/$name" "$bin/.$name.new"
    chmod 755 "$bin/.$name.new"
    mv -f "$bin/.$name.new" "$bin/$name"
done
for dir in sdk plugin; do
    rm -rf "$share/$dir.new"
    cp -R "$stage/$dir" "$share/$dir.new"
    rm -rf "$share/$dir"
    mv "$share/$dir.new" "$share/$dir"
done
# The hooks files' schema, where `capt-hook init`'s #:schema line points; this script (the
# release's own copy, verified above) and the key it verified with, which the host's release
# check trusts and names in the command that upgrades.
for name in hooks.schema.json install.sh; do
    cp "$stage/$name" "$share/.$name.new"
    mv -f "$share/.$name.new" "$share/$name"
done
printf 'untrusted comment: the key install.sh verified this install with\n%s\n' "$keyline" >"$share/.release.pub.new"
mv -f "$share/.release.pub.new" "$share/release.pub"
# What Claude Code runs is the native client, one exec (no shell in front of it).
rm -f "$share/plugin/bin/hook"
ln -s "$bin/hook" "$share/plugin/bin/hook"

say "installed captain-hook ${version:-} ($top) into $share"
cat >&2 <<EOF
enable it in Claude Code:
  /plugin marketplace add $share/plugin
  /plugin install captain-hook@captain-hook
the command line is $bin/capt-hook (add $bin to PATH)
EOF
