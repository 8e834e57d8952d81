#!/bin/sh
# shellcheck shell=dash
#
# install.sh: put the heeler binary for this checkout's version at bin/heeler.
#
# herdr runs this as the plugin's [[build]] step (`sh install.sh`, no shell
# around it, stdin closed, output shown only when it fails). It downloads the
# release binary for the exact version in herdr-plugin.toml from the GitHub
# repository this checkout came from, verifies its SHA-256 against the
# release's SHA256SUMS, and renames it into place only after the staged binary
# ran `--version`; so a failed run never touches a working bin/heeler. Only
# the GitHub download falls back to a source build: a release URL or binary
# given explicitly that fails is an error. The last line says how to run
# heeler from a shell (or, with HEELER_LINK=1, links it into ~/.local/bin).
# Run `sh install.sh --help` for the options.
#
# Everything it creates has an explicit mode: directories 0755, the binary
# 0755, never writable by group or others, whatever umask it inherits (the
# umask is set to 022 first: under 000, bin/ was 0777, which pair refuses,
# and ~/.local/bin 0777, where another user could swap the link on PATH).

set -eu
umask 022

usage() {
	cat <<'EOF'
Usage: sh install.sh [--from-source] [--help]

Installs bin/heeler for the version in herdr-plugin.toml.

  (no option)      download the release binary for this platform from the
                   GitHub repository in `git remote get-url origin`, verify it
                   against the release's SHA256SUMS, install it; when that
                   download fails and cargo exists, build from source instead
                   (not when HEELER_RELEASE_URL or HEELER_BINARY is set: their
                   failure is an error)
  --from-source    build this checkout with `cargo build --release --locked`
                   (usually 3 to 10 minutes: the first build compiles every
                   dependency)
  --help           print this help

Environment:
  HEELER_RELEASE_URL  the release directory to download from instead of
                      GitHub (https://..., file:///..., or http:// on
                      127.0.0.1/localhost); it must hold heeler-<target> and
                      SHA256SUMS
  HEELER_BINARY       install this heeler binary file (no download, no
                      checksum); it must print `heeler <version>`
  HEELER_LINK=1       also link ~/.local/bin/heeler to bin/heeler, so a shell
                      runs `heeler` (an existing file there that is not such a
                      link is left alone, and the install fails; so is a
                      ~/.local or ~/.local/bin another user can write). Under
                      `herdr plugin install` the link names bin/heeler where
                      herdr moves the checkout after the build. After any
                      install, `heeler link` (run as the installed binary)
                      does the same.
  https_proxy, HTTPS_PROXY, ALL_PROXY, NO_PROXY are honoured by curl/wget.

Supported platforms: Linux x86_64, Linux aarch64, macOS x86_64, macOS arm64.
EOF
}

SUPPORTED="Linux x86_64, Linux aarch64 (arm64), macOS x86_64 (Intel), macOS arm64 (Apple silicon)"
ASSET_PREFIX="heeler-"

# Every failure goes through here: one line that says what went wrong and
# what to do next. herdr shows it under "stderr:" when the build fails.
die() {
	echo "heeler install: $*" >&2
	exit 1
}

say() {
	echo "heeler install: $*"
}

# --- the version this checkout is ------------------------------------------

# The top-level `version = "X.Y.Z"` of herdr-plugin.toml (before any table).
read_version() {
	manifest="$1"
	[ -r "$manifest" ] || die "cannot read $manifest; run install.sh from a heeler checkout"
	version=$(sed -n -e '/^[[:space:]]*\[/q' -e 's/^[[:space:]]*version[[:space:]]*=[[:space:]]*"\([^"]*\)"[[:space:]]*$/\1/p' "$manifest" | head -n 1)
	[ -n "$version" ] || die "no top-level version = \"X.Y.Z\" in $manifest; restore the file from git"
	if ! printf '%s\n' "$version" | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$'; then
		die "version \"$version\" in $manifest is not X.Y.Z; restore the file from git"
	fi
	echo "$version"
}

# --- the platform ------------------------------------------------------------

# Prints the Rust target triple of the release asset for this machine, or
# fails (before any download) with the list of supported platforms.
detect_target() {
	os=$(uname -s 2>/dev/null || echo unknown)
	arch=$(uname -m 2>/dev/null || echo unknown)
	case "$os" in
	Linux) os_part=unknown-linux-musl ;;
	Darwin)
		os_part=apple-darwin
		# A shell under Rosetta 2 reports x86_64 on Apple silicon; install
		# the native binary there.
		if [ "$arch" = x86_64 ] && [ "$(rosetta_host_arm64)" = 1 ]; then
			arch=arm64
		fi
		;;
	*) die "unsupported operating system \"$os\" ($arch); heeler runs on $SUPPORTED. On another platform build it yourself: sh install.sh --from-source" ;;
	esac
	case "$arch" in
	x86_64 | amd64) arch_part=x86_64 ;;
	aarch64 | arm64) arch_part=aarch64 ;;
	*) die "unsupported CPU \"$arch\" on $os; heeler runs on $SUPPORTED. On another platform build it yourself: sh install.sh --from-source" ;;
	esac
	echo "$arch_part-$os_part"
}

rosetta_host_arm64() {
	for sysctl_bin in sysctl /usr/sbin/sysctl; do
		if command -v "$sysctl_bin" >/dev/null 2>&1; then
			"$sysctl_bin" -n hw.optional.arm64 2>/dev/null || echo 0
			return 0
		fi
	done
	echo 0
}

# --- where the release is ----------------------------------------------------

# owner/repo of a GitHub remote URL (https, ssh or scp-like), or nothing.
github_repo_of() {
	printf '%s\n' "$1" | sed -n \
		-e 's#^https://github\.com/\([A-Za-z0-9_.-]*/[A-Za-z0-9_.-]*\)$#\1#p' \
		-e 's#^ssh://git@github\.com/\([A-Za-z0-9_.-]*/[A-Za-z0-9_.-]*\)$#\1#p' \
		-e 's#^git@github\.com:\([A-Za-z0-9_.-]*/[A-Za-z0-9_.-]*\)$#\1#p' |
		sed -e 's#\.git$##' -e 's#/$##' | head -n 1
}

# The release directory URL for $1 (version): HEELER_RELEASE_URL, or the
# GitHub release of the repository this checkout was cloned from.
release_url() {
	if [ -n "${HEELER_RELEASE_URL:-}" ]; then
		printf '%s\n' "${HEELER_RELEASE_URL%/}"
		return 0
	fi
	if ! command -v git >/dev/null 2>&1; then
		echo "heeler install: git is not installed, so the GitHub repository of this checkout is unknown" >&2
		return 1
	fi
	origin=$(git -C "$ROOT" remote get-url origin 2>/dev/null) || {
		echo "heeler install: this checkout has no git remote \"origin\", so its GitHub repository is unknown" >&2
		return 1
	}
	repo=$(github_repo_of "$origin")
	if [ -z "$repo" ]; then
		echo "heeler install: git remote origin ($origin) is not a GitHub repository; set HEELER_RELEASE_URL to the release directory" >&2
		return 1
	fi
	printf 'https://github.com/%s/releases/download/v%s\n' "$repo" "$1"
}

# --- downloading -------------------------------------------------------------

# download URL FILE: fetch over https (or file://, or http:// on loopback for
# tests and local mirrors). curl first, wget second; both honour the proxy
# variables they inherit. On failure prints the reason on stderr, prefixed.
download() {
	url="$1"
	out="$2"
	case "$url" in
	file://*)
		src="${url#file://}"
		if [ ! -f "$src" ]; then
			echo "heeler install: could not download $url (no such file)" >&2
			return 1
		fi
		if cp "$src" "$out" 2>"$WORK/download.err"; then
			return 0
		fi
		reason=$(tr '\n' ' ' <"$WORK/download.err")
		echo "heeler install: could not download $url (${reason% })" >&2
		return 1
		;;
	https://*) proto='=https' wget_https=--https-only ;;
	http://127.0.0.1[:/]* | http://localhost[:/]* | http://\[::1\][:/]*) proto='=http' wget_https= ;;
	*)
		echo "heeler install: refusing to download $url: only https://, file:// or http:// on 127.0.0.1/localhost are allowed" >&2
		return 1
		;;
	esac
	if command -v curl >/dev/null 2>&1; then
		if curl --proto "$proto" --proto-redir '=https' --tlsv1.2 --fail --location \
			--silent --show-error --connect-timeout 15 --max-time 120 --retry 3 \
			--output "$out" "$url" 2>"$WORK/download.err"; then
			return 0
		fi
	elif command -v wget >/dev/null 2>&1; then
		# shellcheck disable=SC2086 # $wget_https is empty or one word
		status=0
		wget $wget_https --quiet --tries=3 --timeout=30 --output-document="$out" "$url" 2>"$WORK/download.err" || status=$?
		if [ "$status" = 0 ]; then
			return 0
		fi
		echo "wget exited with status $status" >>"$WORK/download.err"
	else
		echo "heeler install: neither curl nor wget is installed; install one of them" >&2
		return 1
	fi
	reason=$(tr '\n' ' ' <"$WORK/download.err")
	echo "heeler install: could not download $url (${reason% })" >&2
	return 1
}

# --- verifying ---------------------------------------------------------------

# Checked before any download: without a SHA-256 tool nothing can be verified.
need_sha256_tool() {
	if ! command -v sha256sum >/dev/null 2>&1 && ! command -v shasum >/dev/null 2>&1; then
		die "no SHA-256 tool (sha256sum or shasum) is installed, so a download cannot be verified; install coreutils, or build from source: sh install.sh --from-source"
	fi
}

sha256_of() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum "$1" | cut -d ' ' -f 1
	else
		shasum -a 256 "$1" | cut -d ' ' -f 1
	fi
}

# The expected SHA-256 of asset $2 in SHA256SUMS file $1: exactly one
# `<64 hex>  <name>` (or ` *<name>`) line, else nothing.
expected_sha256() {
	matches=$(awk -v name="$2" '
		NF == 2 && ($2 == name || $2 == "*" name) && $1 ~ /^[0-9a-fA-F]+$/ && length($1) == 64 { print tolower($1) }
	' "$1")
	if [ "$(printf '%s\n' "$matches" | grep -c .)" = 1 ]; then
		printf '%s\n' "$matches"
	fi
}

# --- installing --------------------------------------------------------------

# Copy $1 to a staging file next to bin/heeler, check it runs and reports our
# version, then rename it over bin/heeler (atomic on one filesystem; a running
# old binary keeps its inode, and macOS never sees a rewritten signed file).
install_binary() {
	candidate="$1"
	origin_note="$2"
	if [ ! -f "$candidate" ] || [ -L "$candidate" ]; then
		die "$candidate is not a regular file; $origin_note"
	fi
	[ -s "$candidate" ] || die "$candidate is empty; $origin_note"
	if [ ! -d "$BIN_DIR" ]; then
		mkdir -m 755 "$BIN_DIR" || die "cannot create $BIN_DIR; check the permissions of $ROOT"
	fi
	chmod 755 "$BIN_DIR" || die "cannot set the mode of $BIN_DIR to 0755; check its owner"
	STAGED=$(mktemp "$BIN_DIR/.heeler.XXXXXX") || die "cannot create a file in $BIN_DIR; check its permissions and free space"
	cp "$candidate" "$STAGED" || die "cannot copy the binary into $BIN_DIR; check free space"
	chmod 755 "$STAGED"
	reported=$("$STAGED" --version 2>/dev/null | head -n 1) || reported=""
	if [ "$reported" != "heeler $VERSION" ]; then
		die "the new binary printed \"$reported\" for --version, expected \"heeler $VERSION\"; $origin_note"
	fi
	mv -f "$STAGED" "$BIN_DIR/heeler" || die "cannot rename the new binary to $BIN_DIR/heeler; check the permissions of $BIN_DIR"
	STAGED=""
	say "installed heeler $VERSION ($3) at $BIN_DIR/heeler"
}

# Download and verify the release asset; returns 1 (with a reason on stderr)
# when it cannot be fetched, and stops the install outright when it was
# fetched but does not verify.
fetch_release() {
	asset="$ASSET_PREFIX$TARGET"
	base=$(release_url "$VERSION") || return 1
	say "downloading $asset from $base"
	download "$base/$asset" "$WORK/$asset" || return 1
	download "$base/SHA256SUMS" "$WORK/SHA256SUMS" || return 1
	expected=$(expected_sha256 "$WORK/SHA256SUMS" "$asset")
	[ -n "$expected" ] || die "SHA256SUMS of release v$VERSION has no single line for $asset, so it cannot be verified; nothing was installed. Report this, or build from source: sh install.sh --from-source"
	actual=$(sha256_of "$WORK/$asset")
	if [ "$actual" != "$expected" ]; then
		die "checksum mismatch for $asset (expected $expected, got $actual); nothing was installed. Retry later, check any proxy in between, or build from source: sh install.sh --from-source"
	fi
	install_binary "$WORK/$asset" "the release asset $asset of v$VERSION is broken; report it, or build from source: sh install.sh --from-source" "$TARGET release"
}

build_from_source() {
	command -v cargo >/dev/null 2>&1 || die "cargo is not installed; install Rust from https://rustup.rs, then run: sh install.sh --from-source"
	say "building heeler $VERSION from source with cargo build --release --locked; this usually takes 3 to 10 minutes (the first build compiles every dependency)"
	(cd "$ROOT" && cargo build --release --locked) >&2 || die "cargo build --release --locked failed (output above); fix the build error, or install a release binary with HEELER_BINARY=/path/to/heeler sh install.sh"
	target_dir="${CARGO_TARGET_DIR:-target}"
	case "$target_dir" in
	/*) ;;
	*) target_dir="$ROOT/$target_dir" ;;
	esac
	install_binary "$target_dir/release/heeler" "the source build did not produce a working binary; run cargo build --release --locked and check its output" "built from source"
}

# Whether directory $1 is safe to hold the link on PATH: owned by this user
# and not writable by group or others (else another user could replace the
# link). Symbolic modes from `ls -ldn`, which every platform has.
private_dir() {
	listing=$(ls -ldn "$1" 2>/dev/null) || return 1
	mode=$(printf '%s\n' "$listing" | cut -c 1-10)
	owner=$(printf '%s\n' "$listing" | awk '{ print $3 }')
	[ "$owner" = "$(id -u)" ] || return 1
	case "$mode" in
	d????w???? | d???????w?) return 1 ;;
	d*) return 0 ;;
	*) return 1 ;;
	esac
}

# The binary the link should name: bin/heeler of this checkout, or, when
# herdr's `plugin install` runs us in its temporary clone
# (<config>/plugins/.tmp-install-<pid>-<ms>/checkout[/<subdir>]), where herdr
# renames the checkout after the build: <config>/plugins/github/<id>-<first
# 12 hex digits of SHA-256(id)>[/<subdir>] (a link into the clone would
# dangle once it is gone).
link_target() {
	case "$ROOT" in
	*/plugins/.tmp-install-*/checkout | */plugins/.tmp-install-*/checkout/*)
		plugins="${ROOT%%/.tmp-install-*}"
		after="${ROOT#"$plugins"/.tmp-install-*/checkout}"
		id=$(sed -n -e '/^[[:space:]]*\[/q' -e 's/^[[:space:]]*id[[:space:]]*=[[:space:]]*"\([^"]*\)"[[:space:]]*$/\1/p' "$ROOT/herdr-plugin.toml" | head -n 1)
		[ -n "$id" ] || die "no top-level id = \"...\" in $ROOT/herdr-plugin.toml; restore the file from git"
		printf '%s' "$id" >"$WORK/plugin-id"
		hex=$(sha256_of "$WORK/plugin-id" | cut -c 1-12) || hex=""
		[ -n "$hex" ] || die "HEELER_LINK=1 needs sha256sum or shasum to name the plugin's final directory; heeler is installed; after the install run its bin/heeler link"
		printf '%s/github/%s-%s%s/bin/heeler\n' "$plugins" "$id" "$hex" "$after"
		;;
	*) printf '%s\n' "$BIN_DIR/heeler" ;;
	esac
}

# The last line: how a shell runs the installed binary. With HEELER_LINK=1,
# links ~/.local/bin/heeler to it first (a symlink, so an update of the
# checkout's binary is the linked one too) and says whether that directory
# is on PATH.
finish() {
	installed="$BIN_DIR/heeler"
	if [ "${HEELER_LINK:-}" != 1 ]; then
		say "run it from a shell as $installed; to type just heeler: $installed link (or reinstall with HEELER_LINK=1)"
		return 0
	fi
	[ -n "${HOME:-}" ] || die "HEELER_LINK=1 but HOME is not set; heeler is installed at $installed"
	if [ -z "${WORK:-}" ]; then
		WORK=$(mktemp -d "${TMPDIR:-/tmp}/heeler-install.XXXXXX") || die "cannot create a temporary directory; check TMPDIR and free space"
	fi
	target=$(link_target)
	link_dir="$HOME/.local/bin"
	link="$link_dir/heeler"
	if [ -e "$link" ] && [ ! -L "$link" ]; then
		die "HEELER_LINK=1 but $link exists and is not a link; heeler is installed at $installed: remove $link, or run that path"
	fi
	for dir in "$HOME/.local" "$link_dir"; do
		if [ ! -d "$dir" ]; then
			mkdir -m 755 "$dir" || die "cannot create $dir; heeler is installed at $installed"
		fi
		private_dir "$dir" || die "HEELER_LINK=1 but $dir is not yours alone (another user can write to it, or it is not your directory), so a link there could be replaced; heeler is installed at $installed: fix it with chmod go-w $dir, or run that path"
	done
	ln -sfn "$target" "$link" || die "cannot link $link to $target; heeler is installed at $installed"
	case ":${PATH:-}:" in
	*":$link_dir:"*) say "linked $link to $target: run heeler from a shell" ;;
	*) say "linked $link to $target; $link_dir is not on PATH: add it (export PATH=\"\$HOME/.local/bin:\$PATH\" in your shell's profile), or run $link" ;;
	esac
}

cleanup() {
	if [ -n "${STAGED:-}" ]; then rm -f "$STAGED"; fi
	if [ -n "${WORK:-}" ]; then rm -rf "$WORK"; fi
}

main() {
	from_source=0
	for arg in "$@"; do
		case "$arg" in
		--from-source) from_source=1 ;;
		--help | -h)
			usage
			exit 0
			;;
		*) die "unknown option \"$arg\"; run sh install.sh --help" ;;
		esac
	done

	ROOT=$(cd "$(dirname "$0")" && pwd -P) || die "cannot find the checkout directory of $0"
	BIN_DIR="$ROOT/bin"
	VERSION=$(read_version "$ROOT/herdr-plugin.toml")
	STAGED=""
	WORK=""
	trap cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM

	if [ -n "${HEELER_BINARY:-}" ]; then
		install_binary "$HEELER_BINARY" "point HEELER_BINARY at a heeler $VERSION binary" "from $HEELER_BINARY"
		finish
		return 0
	fi
	if [ "$from_source" = 1 ]; then
		build_from_source
		finish
		return 0
	fi

	TARGET=$(detect_target)
	need_sha256_tool
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/heeler-install.XXXXXX") || die "cannot create a temporary directory; check TMPDIR and free space"
	if fetch_release; then
		finish
		return 0
	fi
	# A release directory given explicitly is what was asked for: its
	# failure is the answer, not a reason for a long build.
	if [ -n "${HEELER_RELEASE_URL:-}" ]; then
		die "could not install heeler $VERSION for $TARGET from HEELER_RELEASE_URL=$HEELER_RELEASE_URL (reason above); nothing was built or installed. Fix the URL, or unset it to download from GitHub; or run sh install.sh --from-source; or download heeler-$TARGET yourself and run HEELER_BINARY=/path/to/heeler-$TARGET sh install.sh"
	fi
	if command -v cargo >/dev/null 2>&1; then
		say "the release download failed; building from source instead"
		build_from_source
		finish
		return 0
	fi
	die "could not install heeler $VERSION for $TARGET (reason above). Check the network and any https_proxy, then reinstall the plugin; or install Rust (https://rustup.rs) and run sh install.sh --from-source; or download heeler-$TARGET from the release page yourself and run HEELER_BINARY=/path/to/heeler-$TARGET sh install.sh"
}

main "$@"
