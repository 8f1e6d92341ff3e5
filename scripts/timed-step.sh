#!/usr/bin/env bash
# timed-step.sh NAME COMMAND…: runs one step of `make test` and says on stderr how long
# it took and how long make test has run so far (HELIX_TEST_START, Unix seconds, set
# by the Makefile). The command's exit status is passed on.
set -uo pipefail
name=$1
shift
began=$(date +%s)
"$@"
status=$?
now=$(date +%s)
verb="took"
[ "$status" -eq 0 ] || verb="failed after"
echo "make test: $name $verb $((now - began)) s ($((now - ${HELIX_TEST_START:-$began})) s so far)" >&2
exit "$status"
