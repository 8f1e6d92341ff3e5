#!/usr/bin/env bash
# Runs every Go benchmark of the repository once (-benchtime 1x) to prove it still
# compiles and works; not a measurement. The repository holds several Go modules (the
# main one, bench/ with the load tool, bench/peers): each module's benchmark packages
# are run from that module's root, because `go test` only sees the packages of the
# module it runs in. Packages without benchmarks are not compiled.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
GO=${GO:-go}

# Module roots, skipping hidden dirs (.tools, .git) and testdata.
modules=$(find . \( -name '.?*' -o -name testdata \) -prune -o -name go.mod -print | xargs -r -n1 dirname | sort)
found=0
for mod in $modules; do
	# The module's own test files: prune nested modules (a dir with its own go.mod).
	pkgs=$(cd "$mod" && find . \( -name '.?*' -o -name testdata \) -prune -o \
		\( -type d ! -path . -exec test -e '{}/go.mod' \; -prune \) -o -name '*_test.go' -print |
		{ xargs -r grep -lE '^func Benchmark[A-Za-z0-9_]*\(\w+ \*testing\.B\)' || true; } |
		xargs -r -n1 dirname | sort -u)
	[ -z "$pkgs" ] && continue
	found=1
	echo "bench-smoke: module $mod"
	(cd "$mod" && "$GO" test -run '^$' -bench . -benchtime 1x $pkgs)
done
if [ "$found" = 0 ]; then
	echo "bench-smoke: no benchmarks found"
fi
