#!/usr/bin/env bash
# Runs every fuzz target in the repository briefly: FUZZTIME each (default 4s), with
# FUZZ_JOBS packages at a time (default: the number of CPUs, at most 4). Targets are found by
# scanning *_test.go files, so new ones (FuzzLoad in ./internal/config, FuzzEval in
# ./internal/starlang, ...) are picked up without editing this script, and a package without
# targets costs nothing. A crasher is saved by Go under the package's testdata/fuzz/ and fails
# the run. The seed corpora (f.Add and testdata/fuzz) are not this script's job: the normal
# `go test` run executes them for every target.
#
# Go fuzzes one target per `go test -fuzz`, and each such call links a fuzz-instrumented test
# binary. So each package's binary is built once (`go test -c -fuzz=.`) and run once per target
# from the package directory, where Go writes a crasher. Packages run concurrently: while one
# links, another fuzzes. Each fuzz run uses one worker (-test.parallel=1) so that FUZZ_JOBS runs
# share the CPUs instead of each starting a worker per CPU. DEVELOPERS.md has the measurements
# behind the defaults.
#
# Output is one line per target (its last progress line) unless it fails, then all of it.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
FUZZTIME=${FUZZTIME:-4s}
GO=${GO:-go}
cpus=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
FUZZ_JOBS=${FUZZ_JOBS:-$((cpus < 4 ? cpus : 4))}

# Lines "dir<TAB>FuzzName" for each `func FuzzName(f *testing.F)`, skipping hidden dirs such as
# .tools and .git, and testdata, which Go does not build. grep exits 1 when no file matches,
# which here just means there are no targets.
targets=$(find . \( -name '.?*' -o -name testdata \) -prune -o -name '*_test.go' -print |
	{ xargs -r grep -HoE '^func Fuzz[A-Za-z0-9_]*\(\w+ \*testing\.F\)' || true; } |
	sed -E 's#^(.*)/[^/]+_test\.go:func (Fuzz[A-Za-z0-9_]*)\(.*#\1\t\2#' |
	sort -u)

if [ -z "$targets" ]; then
	echo "fuzz-smoke: no fuzz targets found"
	exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fuzzcache="$("$GO" env GOCACHE)/fuzz"

# fuzz_target DIR BINARY IMPORTPATH NAME: fuzzes one target; prints one line, or the whole
# output when it fails.
#
# -test.fuzzminimizetime=0 turns minimization off. Go minimizes every input that finds new
# coverage, for up to a minute; when the short fuzz time ends during one, the run fails
# with "context deadline exceeded" although nothing failed. A crasher is still saved
# (not minimized) and fails the run.
#
# Go's fuzzing coordinator also has a race at the end of -fuzztime: it can see its
# deadline before the workers' context is cancelled and then reports the deadline itself
# as the failure ("context deadline exceeded", no failing input). Such a run found
# nothing wrong; it is reported and counted as passed. Any other failure fails.
fuzz_target() {
	local dir=$1 bin=$2 importpath=$3 name=$4 out
	# The cache directory is the one `go test -fuzz` uses, so the corpus grown by earlier
	# runs on this machine is the starting point, as with go test.
	if out=$(cd "$dir" && "$bin" -test.run='^$' -test.fuzz="^${name}\$" \
		-test.fuzztime="$FUZZTIME" -test.fuzzminimizetime=0 -test.parallel=1 \
		-test.fuzzcachedir="$fuzzcache/$importpath" 2>&1); then
		echo "fuzz-smoke: ok   $dir $name: $(grep -E '^fuzz: elapsed' <<<"$out" | tail -n1 | sed -E 's/^fuzz: //')"
		return 0
	fi
	if grep -qx $'\tcontext deadline exceeded\|    context deadline exceeded' <<<"$out" &&
		! grep -q 'Failing input written\|found crasher\|panic:' <<<"$out"; then
		echo "fuzz-smoke: ok   $dir $name: only Go's end-of-fuzztime race (context deadline exceeded, no failing input); counted as passed"
		return 0
	fi
	printf '%s\n' "$out"
	echo "fuzz-smoke: FAIL $dir $name (a crasher is under $dir/testdata/fuzz/$name/)"
	return 1
}

# fuzz_package DIR NAME…: builds DIR's fuzz binary once and fuzzes each NAME with it. All
# targets run even when one fails, so one run reports every crasher.
fuzz_package() {
	local dir=$1 status=0 bin importpath name
	shift
	bin="$work/$(tr '/.' '__' <<<"$dir").test"
	if ! importpath=$("$GO" list "$dir") || ! "$GO" test -c -fuzz=. -o "$bin" "$dir"; then
		echo "fuzz-smoke: FAIL $dir: building its fuzz test binary failed"
		return 1
	fi
	for name in "$@"; do
		fuzz_target "$dir" "$bin" "$importpath" "$name" || status=1
	done
	rm -f "$bin"
	return "$status"
}

echo "fuzz-smoke: $(wc -l <<<"$targets") targets for $FUZZTIME each, $FUZZ_JOBS packages at a time"
# One background job per package, at most FUZZ_JOBS at once; each writes its lines to its own
# file, printed whole when it ends, so the output of concurrent packages does not interleave.
status=0
running=0
n=0
finish_one() {
	local pid
	wait -n -p pid || status=1
	cat "$work/$pid.out"
	running=$((running - 1))
}
for dir in $(cut -f1 <<<"$targets" | uniq); do
	mapfile -t names < <(awk -F'\t' -v d="$dir" '$1 == d { print $2 }' <<<"$targets")
	if [ "$running" -ge "$FUZZ_JOBS" ]; then
		finish_one
	fi
	n=$((n + 1))
	fuzz_package "$dir" "${names[@]}" >"$work/job$n.out" 2>&1 &
	ln -s "$work/job$n.out" "$work/$!.out"
	running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
	finish_one
done
exit "$status"
