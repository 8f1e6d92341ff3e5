#!/usr/bin/env bash
# Every concurrency (issue 33): Helix's tools/call against the limit (a bare net/http
# JSON-RPC handler, bench/peers/limit) at 1, 4, 16, 64, 256 and 1,024 clients,
# stateful and stateless, with keep-alive and with a new connection per call
# (BENCHMARKS.md, "Every concurrency").
#
# Each cell (mode, connection, clients) runs the limit and Helix back to back, in
# an order that alternates from cell to cell and round to round, so that the
# machine's drift (other jobs, steal) moves both runs of a pair; the table gives
# the ratio of each pair (throughput and p99) and its median over ROUNDS rounds.
# Helix runs as users run it: `helix mcp serve` of bench/echo.yaml and
# bench/echo-stateless.yaml with every default, max_connections_per_ip (256)
# included. So clients connect from several loopback addresses (127.0.0.1 …
# 127.0.0.N, PER_SOURCE clients each), as clients of many hosts do; the limit
# gets the same connections.
#
#   scripts/bench-concurrency.sh                          # 3 rounds x 24 cells x 2 servers x 2 s (~10 min)
#   QUICK=1 scripts/bench-concurrency.sh                  # 1 round of 1 s per run (~2 min)
#   LEVELS="1 1024" MODES=stateful CONNS=new ROUNDS=5 scripts/bench-concurrency.sh   # some cells
#   BIN=/tmp/helix-old scripts/bench-concurrency.sh       # another helix binary
#   PROFILE="stateful:keep-alive:1024 stateless:new:1" scripts/bench-concurrency.sh
#       # afterwards, profile Helix (the bench/helixdebug build) under those cells:
#       # CPU, allocations, mutex and blocking profiles in $OUT/profiles/ (ROUNDS=0: only that)
#
# Results go to $OUT (default bench/results/concurrency-<commit>): results.jsonl
# (one line per run), runs.txt, load.txt (load average per round), machine.txt
# (with the steal over the whole run), matrix.md and matrix.tsv (mcpload matrix).
set -euo pipefail

QUICK=${QUICK:-}
if [[ -n $QUICK ]]; then
	ROUNDS=${ROUNDS:-1} DURATION=${DURATION:-1s} WARMUP=${WARMUP:-500ms}
fi
LEVELS=${LEVELS:-"1 4 16 64 256 1024"}
MODES=${MODES:-"stateful stateless"}
CONNS=${CONNS:-"keep-alive new"}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-2s}
WARMUP=${WARMUP:-1s}
PER_SOURCE=${PER_SOURCE:-128} # half of Helix's default max_connections_per_ip
PORT_BASE=${PORT_BASE:-3401}
PROFILE=${PROFILE:-}
PROFILE_SECONDS=${PROFILE_SECONDS:-8}
GO=${GO:-go}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
OUT=${OUT:-bench/results/concurrency-$commit}
mkdir -p "$OUT"
bin=$(mktemp -d)
pids=()
stop_servers() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	pids=()
}
cleanup() {
	stop_servers
	rm -rf "$bin"
}
trap cleanup EXIT

for m in $MODES; do [[ $m == stateful || $m == stateless ]] || { echo "MODES: unknown $m (want stateful, stateless)" >&2; exit 2; }; done
for c in $CONNS; do [[ $c == keep-alive || $c == new ]] || { echo "CONNS: unknown $c (want keep-alive, new)" >&2; exit 2; }; done

echo "== build"
scripts/bench-gomod.sh
(cd bench && $GO build -o "$bin/mcpload" ./mcpload && $GO build -o "$bin/helixdebug" ./helixdebug)
(cd bench/peers && $GO build -o "$bin/" ./limit)
helix=${BIN:-$bin/helix}
[[ -n ${BIN:-} ]] || $GO build -o "$bin/helix" ./cmd/helix

# steal_ticks: "total steal" of /proc/stat's cpu line.
steal_ticks() { awk '$1 == "cpu" { t = 0; for (i = 2; i <= 9; i++) t += $i; print t, $9; exit }' /proc/stat; }
steal0=$(steal_ticks)
{
	echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
	echo "go: $($GO version)"
	echo "commit: $commit$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')${BIN:+, helix binary $BIN}"
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ), load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "levels=\"$LEVELS\" modes=\"$MODES\" conns=\"$CONNS\" rounds=$ROUNDS duration=$DURATION warmup=$WARMUP per_source=$PER_SOURCE"
} | tee "$OUT/machine.txt"

# free_port N: the first port from N on that nothing listens on (other benchmarks
# may share the machine).
free_port() {
	local p=$1
	while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
	echo "$p"
}

declare -A url pid
next_port=$PORT_BASE
# start NAME ENV... -- CMD...: a server on a free loopback port ($PORT in CMD).
start() {
	local name=$1 p
	shift
	p=$(free_port "$next_port")
	next_port=$((p + 1))
	url[$name]="http://127.0.0.1:$p/mcp"
	local envs=() cmd=()
	while [[ $1 != -- ]]; do envs+=("${1//\$PORT/$p}"); shift; done
	shift
	for a in "$@"; do cmd+=("${a//\$PORT/$p}"); done
	env "${envs[@]}" "${cmd[@]}" >"$bin/$name.log" 2>&1 & # not in $OUT: the log prints the console's sign-in link
	pid[$name]=$!
	pids+=($!)
	if ! "$bin/mcpload" wait -url "${url[$name]}" -timeout 60s $([[ $name == *stateless* ]] && echo -stateless); then
		echo "$name did not come up:" >&2
		cat "$bin/$name.log" >&2
		exit 1
	fi
}

start limit -- "$bin/limit" -addr '127.0.0.1:$PORT'
[[ " $MODES " == *" stateful "* ]] && start helix 'HELIX_BENCH_ADDR=127.0.0.1:$PORT' -- "$helix" mcp serve bench/echo.yaml
[[ " $MODES " == *" stateless "* ]] && start helix-stateless 'HELIX_BENCH_ADDR=127.0.0.1:$PORT' -- "$helix" mcp serve bench/echo-stateless.yaml

# run NAME MODE CONN CLIENTS ROUND: one load run, labelled limit or helix.
run() {
	local name=$1 mode=$2 conn=$3 clients=$4 round=$5
	local sources=$(((clients + PER_SOURCE - 1) / PER_SOURCE))
	local args=(-label "${name%-stateless}" -url "${url[$name]}" -clients "$clients" -duration "$DURATION" -warmup "$WARMUP"
		-pid "${pid[$name]}" -json "$OUT/results.jsonl" -round "$round" -sources "$sources" -allow-errors)
	[[ $mode == stateless ]] && args+=(-stateless)
	[[ $conn == new ]] && args+=(-new-conn)
	"$bin/mcpload" run "${args[@]}" >>"$OUT/runs.txt" 2>&1 || echo "run failed: $name $mode $conn $clients round $round" | tee -a "$OUT/runs.txt"
}

cells=0
for m in $MODES; do for c in $CONNS; do for n in $LEVELS; do cells=$((cells + 1)); done; done; done
echo "== $ROUNDS rounds x $cells cells x 2 servers x $DURATION"
for ((r = 1; r <= ROUNDS; r++)); do
	echo "round $r $(date -u +%H:%M:%S) load average $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/load.txt"
	i=0
	for mode in $MODES; do
		h=helix
		[[ $mode == stateless ]] && h=helix-stateless
		for conn in $CONNS; do
			for n in $LEVELS; do
				i=$((i + 1))
				order="limit $h"
				(((r + i) % 2)) && order="$h limit"
				for s in $order; do run "$s" "$mode" "$conn" "$n" "$r"; done
			done
		done
	done
done
echo "end $(date -u +%H:%M:%S) load average $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/load.txt"
read -r t0 s0 <<<"$steal0"
read -r t1 s1 <<<"$(steal_ticks)"
echo "steal over the run: $(awk -v a="$((s1 - s0))" -v b="$((t1 - t0))" 'BEGIN { printf("%.2f %%", b > 0 ? 100 * a / b : 0) }')" | tee -a "$OUT/machine.txt"

if ((ROUNDS > 0)); then
	echo "== throughput and p99 against the limit, per round (median)"
	"$bin/mcpload" matrix -base limit -tsv "$OUT/matrix.tsv" "$OUT/results.jsonl" | tee "$OUT/matrix.md"
fi

if [[ -n $PROFILE ]]; then
	stop_servers
	mkdir -p "$OUT/profiles"
	for cell in $PROFILE; do
		IFS=: read -r mode conn n <<<"$cell"
		yaml=bench/echo.yaml name=helixdebug
		[[ $mode == stateless ]] && yaml=bench/echo-stateless.yaml name=helixdebug-stateless
		dport=$(free_port $((next_port + 50)))
		start "$name" 'HELIX_BENCH_ADDR=127.0.0.1:$PORT' "HELIX_DEBUG_ADDR=127.0.0.1:$dport" HELIX_DEBUG_CONTENTION=1 -- \
			"$bin/helixdebug" mcp serve "$yaml"
		p=$OUT/profiles/$mode-$conn-$n
		echo "== profile: $cell ($PROFILE_SECONDS s)"
		sources=$(((n + PER_SOURCE - 1) / PER_SOURCE))
		args=(-label helixdebug -url "${url[$name]}" -clients "$n" -duration $((PROFILE_SECONDS + 2))s -warmup 1s
			-pid "${pid[$name]}" -memstats "http://127.0.0.1:$dport/debug/vars" -sources "$sources" -allow-errors)
		[[ $mode == stateless ]] && args+=(-stateless)
		[[ $conn == new ]] && args+=(-new-conn)
		"$bin/mcpload" run "${args[@]}" >"$p-run.txt" 2>&1 &
		load=$!
		sleep 1.5 # the load's warm-up
		debug=http://127.0.0.1:$dport/debug/pprof
		$GO tool pprof -proto -output "$p-cpu.pb.gz" "$debug/profile?seconds=$PROFILE_SECONDS" 2>/dev/null
		for k in allocs mutex block; do $GO tool pprof -proto -output "$p-$k.pb.gz" "$debug/$k" 2>/dev/null; done
		wait "$load" || true
		for k in cpu mutex block; do $GO tool pprof -top -nodecount=40 "$bin/helixdebug" "$p-$k.pb.gz" >"$p-$k-top.txt" 2>/dev/null || true; done
		$GO tool pprof -sample_index=alloc_space -top -nodecount=40 "$bin/helixdebug" "$p-allocs.pb.gz" >"$p-allocs-top.txt" 2>/dev/null || true
		stop_servers
	done
	echo "profiles in $OUT/profiles"
fi
echo "results in $OUT"
