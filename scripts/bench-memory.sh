#!/usr/bin/env bash
# Memory at scale (issue 33; BENCHMARKS.md "Memory at scale"), in one run, for the
# default build and the slim build (`make build` / `make build-slim`), each serving
# bench/echo-sessions.yaml with `helix mcp serve`:
#
#   idle      VmRSS, RssFile (the executable's pages) and RssAnon (heap, stacks) of the
#             idle server, 3 s after it first answered
#   clients   the same under CLIENTS keep-alive clients calling the echo tool for DURATION
#             (the figures at the window's end)
#   sessions  SESSIONS idle stateful sessions (initialize + initialized, nothing else)
#             opened on a fresh server: VmRSS and RssAnon once they are open, the peak
#             (VmHWM) of the opening, and both again after HOLD of idleness (default build
#             only: the sessions cost the same in both). An idle session is parked 5-10 s
#             after its last request, but the memory it leaves goes back to the system only
#             after a garbage collection, which an idle Go process runs every 2 minutes: the
#             default HOLD of 150 s measures the idle server as it stays, the figure at open
#             the burst of opening them
#
#   scripts/bench-memory.sh                                  # 100,000 sessions, 1,024 clients
#   QUICK=1 scripts/bench-memory.sh                          # 10,000 sessions, 256 clients, short
#   SESSIONS=50000 CLIENTS=512 HOLD=30s scripts/bench-memory.sh
#
# The goals: 100,000 idle sessions ≤ 1 GB (VmRSS); RssAnon under 1,024 clients ≤ 64 MB;
# RssFile of the default build reported beside the slim build's. Memory, unlike time,
# is not much moved by a busy machine; the load average is recorded anyway.
#
# Results go to $OUT (default bench/results/memory-<commit>): memory.tsv (build,
# measure, KiB), summary.md, machine.txt and the load tool's output.
set -euo pipefail

QUICK=${QUICK:-}
if [[ -n $QUICK ]]; then
	SESSIONS=${SESSIONS:-10000} CLIENTS=${CLIENTS:-256} DURATION=${DURATION:-3s} HOLD=${HOLD:-5s}
fi
SESSIONS=${SESSIONS:-100000}
CLIENTS=${CLIENTS:-1024}
DURATION=${DURATION:-10s}
HOLD=${HOLD:-150s}
PORT=${PORT:-3198}
GO=${GO:-go}

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
OUT=${OUT:-bench/results/memory-$commit}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
bin=$(mktemp -d)
server=""
stop_server() {
	if [[ -n $server ]]; then
		kill "$server" 2>/dev/null || true
		wait "$server" 2>/dev/null || true
		server=""
	fi
}
cleanup() {
	stop_server
	rm -rf "$bin"
}
trap cleanup EXIT

echo "== build"
scripts/bench-gomod.sh
(cd bench && $GO build -o "$bin/mcpload" ./mcpload)
make -s build BIN_DIR="$bin" GO="$GO"
make -s build-slim BIN_DIR="$bin" GO="$GO"

{
	echo "commit: $commit$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ), load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
	echo "go: $($GO version)"
	echo "sessions=$SESSIONS clients=$CLIENTS duration=$DURATION hold=$HOLD"
	echo "binaries: default $(($(stat -c %s "$bin/helix") / 1024)) KiB, slim $(($(stat -c %s "$bin/helix-slim") / 1024)) KiB"
} | tee "$OUT/machine.txt"

tsv=$OUT/memory.tsv
printf 'build\tmeasure\tVmRSS KiB\tRssFile KiB\tRssAnon KiB\n' >"$tsv"

# mem PID: "VmRSS RssFile RssAnon" in KiB.
mem() { awk '$1 == "VmRSS:" { r = $2 } $1 == "RssFile:" { f = $2 } $1 == "RssAnon:" { a = $2 } END { print r, f, a }' "/proc/$1/status"; }
record() { # BUILD MEASURE
	local r f a
	read -r r f a < <(mem "$server")
	printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$r" "$f" "$a" | tee -a "$tsv"
}
# free_port N: the first port from N on that nothing listens on (other benchmarks
# may share the machine).
free_port() {
	local p=$1
	while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
	echo "$p"
}
start() { # BINARY
	PORT=$(free_port "$PORT")
	HELIX_BENCH_ADDR=127.0.0.1:$PORT "$1" mcp serve bench/echo-sessions.yaml >"$bin/server.log" 2>&1 &
	server=$!
	if ! "$bin/mcpload" wait -url "http://127.0.0.1:$PORT/mcp" -timeout 60s >/dev/null; then
		echo "helix did not come up:" >&2
		cat "$bin/server.log" >&2
		exit 1
	fi
}

for build in default slim; do
	b=$bin/helix
	[[ $build == slim ]] && b=$bin/helix-slim
	echo "== $build: idle, then $CLIENTS clients"
	start "$b"
	sleep 3
	record "$build" idle
	"$bin/mcpload" run -url "http://127.0.0.1:$PORT/mcp" -clients "$CLIENTS" -duration "$DURATION" -warmup 2s \
		-pid "$server" >"$OUT/clients-$build.txt" 2>&1
	record "$build" "$CLIENTS clients"
	stop_server
done

echo "== default: $SESSIONS idle sessions"
start "$bin/helix"
"$bin/mcpload" sessions -url "http://127.0.0.1:$PORT/mcp" -n "$SESSIONS" -pid "$server" | tee "$OUT/sessions.txt"
record default "$SESSIONS sessions open"
printf 'default\t%s sessions: peak while opening (VmHWM)\t%s\t\t\n' "$SESSIONS" "$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$server/status")" | tee -a "$tsv"
sleep "$HOLD"
record default "$SESSIONS sessions after $HOLD idle"
stop_server

# The summary, in the order measured.
awk -F'\t' 'NR == 1 { print "| build | measure | VmRSS MiB | RssFile MiB | RssAnon MiB |"; print "|---|---|---:|---:|---:|"; next }
function mib(k) { return k == "" ? "" : sprintf("%.1f", k / 1024) }
{ printf "| %s | %s | %s | %s | %s |\n", $1, $2, mib($3), mib($4), mib($5) }' "$tsv" | tee "$OUT/summary.md"
echo "results in $OUT"
