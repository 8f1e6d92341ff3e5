#!/usr/bin/env bash
# race-test.sh COMMAND…: the last step of `make test`, the race-enabled go test run.
# It first says how long make test has run (HELIX_TEST_START) and about how long this
# run takes (the last run's duration, kept in the tools directory; 12 min the first
# time), then runs the command. Nothing is printed after it: CI reads go test's own
# summary lines at the end of the output. `time make test` gives the total.
set -uo pipefail
state="${HELIX_TOOLS_DIR:-$(dirname "${BASH_SOURCE[0]}")/../.tools}/race-test-seconds"
estimate=720
if [ -r "$state" ] && read -r kept < "$state" && [[ $kept =~ ^[0-9]+$ ]]; then
	estimate=$kept
fi
began=$(date +%s)
echo "make test: $((began - ${HELIX_TEST_START:-$began})) s so far; the race-enabled go test run follows (about $(((estimate + 30) / 60)) min)"
"$@"
status=$?
# Kept silently for the next estimate; a missing tools directory only loses it.
{ echo "$(($(date +%s) - began))" > "$state"; } 2>/dev/null || true
exit "$status"
