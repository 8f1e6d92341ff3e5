#!/usr/bin/env bash
# Runs staticcheck (honnef.co/go/tools, pinned below) on Helix (./...) and on the benchmark
# modules (bench/, bench/peers), failing on any finding. `make staticcheck` runs it, and
# `make lint` through it.
#
# The binary is built once from the Go module proxy with `go install …@version`, which leaves
# go.mod alone, and kept in ${HELIX_TOOLS_DIR:-<repo>/.tools}/staticcheck/<version>-<go
# version>/: building it takes a while, and a staticcheck built by an older Go cannot load
# packages written for a newer one, so a toolchain change builds it again.
#
# A finding that is intended gets a //lint:ignore CHECK reason directive on the line before
# it, never a file-wide or check-wide silence.
set -euo pipefail

STATICCHECK_VERSION=v0.8.2
GO=${GO:-go}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS=${HELIX_TOOLS_DIR:-$ROOT/.tools}

log() { printf 'staticcheck: %s\n' "$*" >&2; }

go_version=$("$GO" env GOVERSION)
bin_dir=$TOOLS/staticcheck/$STATICCHECK_VERSION-$go_version
bin=$bin_dir/staticcheck
if [ ! -x "$bin" ]; then
	log "building honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION with $go_version into $bin_dir"
	mkdir -p "$bin_dir"
	# With @version, go install ignores the current module: Helix's go.mod is not read or changed.
	GOBIN=$bin_dir "$GO" install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
fi

cd "$ROOT"
# bench/go.mod is generated from Helix's (see bench-gomod.sh); it must be current to load.
scripts/bench-gomod.sh
status=0
for module in . bench bench/peers; do
	(cd "$module" && "$bin" ./...) || status=1
done
if [ "$status" = 0 ]; then
	log "ok ($STATICCHECK_VERSION: Helix, bench, bench/peers)"
fi
exit "$status"
