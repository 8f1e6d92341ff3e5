#!/usr/bin/env bash
# Gateway benchmark, side by side in one run (see BENCHMARKS.md, "Gateway"):
# one upstream (the go-sdk echo server of bench/peers) and a helix gateway in
# front of it (bench/gateway.yaml); the load tool measures both targets in the
# same run:
#   (a) open loop at RATE calls/s, the targets alternating every SLICE
#       (mcpload pair): latency p50/p99 straight to the upstream and through the
#       gateway; the added latency is the difference;
#   (b) closed loop at CLIENTS concurrent clients, the targets alternating
#       round by round (mcpload run): saturation throughput of each, and the
#       ratio gateway/upstream.
#
#   scripts/bench-gateway.sh                           # 5 rounds, 3000 calls/s, 10 s each
#   ROUNDS=3 DURATION=5s RATE="3000 1000" scripts/bench-gateway.sh   # open loop at each rate
#   PIN=1 scripts/bench-gateway.sh                     # load tool on CPU 0, servers on CPU 1 (taskset)
#   UPSTREAM_PORT=3302 GATEWAY_PORT=3310 DEBUG_PORT=3311 scripts/bench-gateway.sh   # other loopback ports
#   GATEWAY_YAML=my.yaml scripts/bench-gateway.sh      # another gateway configuration
#   GATEWAY=peer scripts/bench-gateway.sh              # bench/gatewaypeer (the gateway without YAML) instead of helix
#   GATEWAY=peer-decoding scripts/bench-gateway.sh     # the same with the fast path off: every call decoded through the go-sdk client session
#   GATEWAY=peer PROFILE=1 scripts/bench-gateway.sh    # also the gateway's CPU and allocation profiles (first
#                                                      # closed-loop round) and its allocations per call
#   GATEWAY=peer-loop scripts/bench-gateway.sh         # bench/gatewaypeer on the prototype downstream loop (-loop)
# The floor: what any second process in the path costs on this machine
# (bench/tcpproxy, in place of the gateway, nothing else changed):
#   GATEWAY=tcpproxy scripts/bench-gateway.sh          # bytes forwarded, nothing parsed
#   GATEWAY=httpproxy scripts/bench-gateway.sh         # net/http server + httputil.ReverseProxy
#   GATEWAY=h1proxy scripts/bench-gateway.sh           # HTTP/1.1 forwarded in the connection's goroutine
#   CLOSED=0 scripts/bench-gateway.sh                  # the open loop (added latency) only
#   GATEWAY_ENV="GOMAXPROCS=1 GOGC=400" scripts/bench-gateway.sh   # an environment for the gateway's process
#   SUMMARY_ONLY=1 OUT=bench/results/x scripts/bench-gateway.sh   # the summary of an earlier run again
#
# On a 2-core machine the load tool, the gateway and the upstream share the
# cores (and with PIN=1 the gateway and the upstream share one): every figure
# is of that machine, and the load tool's own CPU per call is printed with the
# closed-loop results so that it can be accounted for.
#
# Results go to $OUT (default bench/results/gateway-<timestamp>): pair.jsonl,
# saturation.jsonl, summary.md and the servers' logs.
set -euo pipefail

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
RATE=${RATE:-3000}
SLICE=${SLICE:-100ms}
WORKERS=${WORKERS:-64}
CLIENTS=${CLIENTS:-16}
GATEWAY_YAML=${GATEWAY_YAML:-bench/gateway.yaml}
GATEWAY=${GATEWAY:-helix}
PIN=${PIN:-}
PROFILE=${PROFILE:-}
UPSTREAM_PORT=${UPSTREAM_PORT:-3102} GATEWAY_PORT=${GATEWAY_PORT:-3110} DEBUG_PORT=${DEBUG_PORT:-3111}
CLOSED=${CLOSED:-1}
GATEWAY_ENV=${GATEWAY_ENV:-}
GO=${GO:-go}

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
OUT=${OUT:-bench/results/gateway-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
bin=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$bin"
	# The servers' logs stay with the results; the console's sign-in link does not.
	sed -i 's/token=[0-9a-f]\{20,\}/token=(removed)/g' "$OUT"/*.log 2>/dev/null || true
}
trap cleanup EXIT

load_cpu="" server_cpu=""
if [[ -n $PIN ]]; then
	load_cpu="taskset -c 0" server_cpu="taskset -c 1"
fi

summarize() {
	{
		echo "## Open loop (each round, and the medians over the rounds, at each rate)"
		echo
		echo "| calls/s | round | upstream p50 µs | gateway p50 µs | added p50 µs | upstream p99 µs | gateway p99 µs | added p99 µs | late calls (upstream/gateway) | steal % |"
		echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
		jq -rs 'def median: sort | if length%2==1 then .[length/2|floor] else (.[length/2-1]+.[length/2])/2 end;
			group_by(.rate)[] | (group_by(.round) | map({a: (map(select(.side=="a"))[0]), b: (map(select(.side=="b"))[0])})) as $rs |
			($rs[] | "| \(.a.rate) | \(.a.round) | \(.a.p50_us|round) | \(.b.p50_us|round) | \((.b.p50_us-.a.p50_us)|round) | \(.a.p99_us|round) | \(.b.p99_us|round) | \((.b.p99_us-.a.p99_us)|round) | \(.a.late)/\(.b.late) | \(.a.steal_pct*10|round/10) |"),
			"| \($rs[0].a.rate) | median | \($rs|map(.a.p50_us)|median|round) | \($rs|map(.b.p50_us)|median|round) | \($rs|map(.b.p50_us-.a.p50_us)|median|round) | \($rs|map(.a.p99_us)|median|round) | \($rs|map(.b.p99_us)|median|round) | \($rs|map(.b.p99_us-.a.p99_us)|median|round) | | |"' "$OUT/pair.jsonl"
		if [[ -s $OUT/saturation.jsonl ]]; then
			echo
			echo "## Closed loop, $CLIENTS clients (throughput relative to the upstream)"
			echo
			"$bin/mcpload" summarize -base upstream "$OUT/saturation.jsonl"
		fi
		if [[ -s $OUT/loadavg.txt ]]; then
			echo
			echo "Load average (1, 5, 15 min) before each open-loop round:"
			echo
			sed 's/^/    /' "$OUT/loadavg.txt"
		fi
	} | tee "$OUT/summary.md"
}

if [[ -n ${SUMMARY_ONLY:-} ]]; then
	(cd bench && $GO build -o "$bin/mcpload" ./mcpload)
	summarize
	exit 0
fi

echo "== build"
scripts/bench-gomod.sh
(cd bench && $GO build -o "$bin/mcpload" ./mcpload && $GO build -o "$bin/gatewaypeer" ./gatewaypeer && $GO build -o "$bin/tcpproxy" ./tcpproxy)
[[ $GATEWAY == helix ]] && $GO build -o "$bin/helix" ./cmd/helix
(cd bench/peers && $GO build -o "$bin/" ./gosdk)

{
	echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
	echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "go: $($GO version)"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with changes)')"
	echo "gateway: $GATEWAY${GATEWAY_ENV:+ ($GATEWAY_ENV)}"
	echo "rounds=$ROUNDS duration=$DURATION warmup=$WARMUP rate=$RATE slice=$SLICE workers=$WORKERS clients=$CLIENTS pin=${PIN:-no}"
} | tee "$OUT/machine.txt"

upstream_addr=127.0.0.1:$UPSTREAM_PORT gateway_addr=127.0.0.1:$GATEWAY_PORT
upstream_url=http://$upstream_addr/mcp
gateway_url=http://$gateway_addr/mcp
# alive fails when a server exited (a port already taken): the load tool would
# otherwise measure whatever else answers there.
alive() { kill -0 "$1" 2>/dev/null || { echo "$2 exited:" >&2; cat "$3" >&2; exit 1; }; }
$server_cpu "$bin/gosdk" -addr "$upstream_addr" >"$OUT/upstream.log" 2>&1 &
upstream_pid=$!
pids+=($!)
"$bin/mcpload" wait -url "$upstream_url" -timeout 60s || { cat "$OUT/upstream.log"; exit 1; }
alive "$upstream_pid" upstream "$OUT/upstream.log"
# gatewaypeer serves pprof and expvar on -debug: helix has no such endpoint.
debug_addr=127.0.0.1:$DEBUG_PORT peer_debug=() memstats=()
if [[ $GATEWAY == peer* ]]; then
	peer_debug=(-debug "$debug_addr")
	memstats=(-memstats "http://$debug_addr/debug/vars")
elif [[ -n $PROFILE ]]; then
	echo "PROFILE=1 needs GATEWAY=peer or peer-decoding (helix serves no pprof)" >&2
	exit 2
fi
# shellcheck disable=SC2086 # GATEWAY_ENV is split into its assignments
case $GATEWAY in
helix) HELIX_BENCH_ADDR=$gateway_addr UPSTREAM_URL=$upstream_url $server_cpu env $GATEWAY_ENV "$bin/helix" mcp serve "$GATEWAY_YAML" >"$OUT/gateway.log" 2>&1 & ;;
peer) $server_cpu env $GATEWAY_ENV "$bin/gatewaypeer" -addr "$gateway_addr" -upstream "$upstream_url" "${peer_debug[@]}" >"$OUT/gateway.log" 2>&1 & ;;
peer-decoding) $server_cpu env $GATEWAY_ENV "$bin/gatewaypeer" -addr "$gateway_addr" -upstream "$upstream_url" -fast=false "${peer_debug[@]}" >"$OUT/gateway.log" 2>&1 & ;;
peer-loop) $server_cpu env $GATEWAY_ENV "$bin/gatewaypeer" -addr "$gateway_addr" -upstream "$upstream_url" -loop "${peer_debug[@]}" >"$OUT/gateway.log" 2>&1 & ;;
tcpproxy | httpproxy | h1proxy)
	$server_cpu env $GATEWAY_ENV "$bin/tcpproxy" -mode "${GATEWAY%proxy}" -addr "$gateway_addr" -upstream "$upstream_addr" >"$OUT/gateway.log" 2>&1 &
	;;
*) echo "GATEWAY=$GATEWAY: want helix, peer, peer-decoding, peer-loop, tcpproxy, httpproxy or h1proxy" >&2; exit 2 ;;
esac
gateway_pid=$!
pids+=($!)
"$bin/mcpload" wait -url "$gateway_url" -timeout 60s || { cat "$OUT/gateway.log"; exit 1; }
alive "$gateway_pid" gateway "$OUT/gateway.log"

for rate in $RATE; do
	echo "== (a) open loop, $rate calls/s, $ROUNDS rounds x $DURATION (each target half of it)"
	for ((r = 1; r <= ROUNDS; r++)); do
		echo "open loop $rate/s round $r: load average $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/loadavg.txt"
		$load_cpu "$bin/mcpload" pair -a "upstream=$upstream_url" -b "gateway=$gateway_url" -rate "$rate" -slice "$SLICE" \
			-duration "$DURATION" -warmup "$WARMUP" -workers "$WORKERS" -round "$r" -json "$OUT/pair.jsonl" || true
	done
done

[[ $CLOSED == 0 ]] || echo "== (b) closed loop, $CLIENTS clients, $ROUNDS rounds x $DURATION per target"
for ((r = 1; r <= ROUNDS && CLOSED != 0; r++)); do
	order=(upstream gateway)
	((r % 2 == 0)) && order=(gateway upstream)
	for n in "${order[@]}"; do
		extra=()
		if [[ $n == upstream ]]; then u=$upstream_url p=$upstream_pid; else u=$gateway_url p=$gateway_pid extra=("${memstats[@]}"); fi
		prof=""
		if [[ -n $PROFILE && $n == gateway && $r == 1 ]]; then
			# The profile covers the measured window (after the warm-up).
			secs=$(($(sed 's/s$//' <<<"$DURATION") - 1))
			(sleep "${WARMUP%s}" && curl -fsS -o "$OUT/gateway-cpu.pb.gz" "http://$debug_addr/debug/pprof/profile?seconds=$secs") &
			prof=$!
		fi
		$load_cpu "$bin/mcpload" run -label "$n" -url "$u" -clients "$CLIENTS" -duration "$DURATION" -warmup "$WARMUP" \
			-pid "$p" "${extra[@]}" -round "$r" -json "$OUT/saturation.jsonl"
		if [[ -n $prof ]]; then
			wait "$prof" || echo "no CPU profile" >&2
			curl -fsS -o "$OUT/gateway-allocs.pb.gz" "http://$debug_addr/debug/pprof/allocs" || echo "no allocation profile" >&2
			$GO tool pprof -top -cum -nodecount=60 "$bin/gatewaypeer" "$OUT/gateway-cpu.pb.gz" >"$OUT/gateway-cpu-top.txt" 2>/dev/null || true
			$GO tool pprof -top -nodecount=40 -sample_index=alloc_space "$bin/gatewaypeer" "$OUT/gateway-allocs.pb.gz" >"$OUT/gateway-allocs-top.txt" 2>/dev/null || true
		fi
	done
done

echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt"
summarize
echo "results in $OUT"
