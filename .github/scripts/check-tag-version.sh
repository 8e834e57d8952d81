#!/bin/sh
# shellcheck shell=dash
#
# check-tag-version.sh [TAG]: the release's one version must agree everywhere.
#
# Cargo.toml's [package] version, herdr-plugin.toml's version (what install.sh
# downloads) and test-vectors/plugin-version-v1.json's version must be equal,
# and when TAG is given (the release workflow passes $GITHUB_REF_NAME) it must
# be exactly "v" followed by that version. Exits 1 with one line per mismatch.

set -eu

cd "$(dirname "$0")/../.."

# The first `version = "..."` inside Cargo.toml's [package] table.
cargo_version=$(awk '
	/^\[/ { in_package = ($0 == "[package]") ; next }
	in_package && /^version[[:space:]]*=/ { gsub(/.*=[[:space:]]*"|"[[:space:]]*$/, ""); print; exit }
' Cargo.toml)
# The top-level version of the herdr manifest (before its first table).
manifest_version=$(sed -n -e '/^[[:space:]]*\[/q' -e 's/^[[:space:]]*version[[:space:]]*=[[:space:]]*"\([^"]*\)"[[:space:]]*$/\1/p' herdr-plugin.toml | head -n 1)
vector_version=$(sed -n 's/^[[:space:]]*"version"[[:space:]]*:[[:space:]]*"\([^"]*\)".*$/\1/p' test-vectors/plugin-version-v1.json | head -n 1)

failed=0
fail() {
	echo "check-tag-version: $*" >&2
	failed=1
}

[ -n "$cargo_version" ] || fail "no [package] version in Cargo.toml"
if [ "$manifest_version" != "$cargo_version" ]; then
	fail "herdr-plugin.toml version \"$manifest_version\" != Cargo.toml version \"$cargo_version\""
fi
if [ "$vector_version" != "$cargo_version" ]; then
	fail "test-vectors/plugin-version-v1.json version \"$vector_version\" != Cargo.toml version \"$cargo_version\""
fi
if [ $# -ge 1 ] && [ "$1" != "v$cargo_version" ]; then
	fail "tag \"$1\" != \"v$cargo_version\" (Cargo.toml); bump the versions together or tag v$cargo_version"
fi
[ "$failed" = 0 ] || exit 1
echo "check-tag-version: version $cargo_version agrees${1:+ with tag $1}"
