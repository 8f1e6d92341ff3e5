#!/usr/bin/env bash
# A/B of the gateway's CPU per fast-relayed tools/call in one binary
# (bench/gatewaypeer): A with the fast relay's upstream calls on net/http's
# transport (-h1=false), B on Helix's own HTTP/1.1 loop (the default), both in
# front of the same go-sdk echo upstream, in alternating closed-loop rounds of
# CLIENTS clients (mcpload run). Besides mcpload's figures (CPU per call of
# the measured gateway, throughput), the gateway's read and write system calls
# per call are taken from /proc/PID/io around each round.
#
#   ROUNDS=5 DURATION=8s scripts/bench-gateway-ab.sh
#   OUT=bench/results/x PROFILE=1 scripts/bench-gateway-ab.sh   # also CPU profiles of A and B (first round)
#   A_FLAGS="-h1=false" B_FLAGS="" scripts/bench-gateway-ab.sh   # other flags for either side
#   A_ENV="" B_ENV="GOGC=400" scripts/bench-gateway-ab.sh        # an environment for either side (GOGC, GOMEMLIMIT)
#   A_BIN=/tmp/gatewaypeer-old scripts/bench-gateway-ab.sh       # another build for either side (A_BIN, B_BIN)
#   PAIR_RATE="3000 1000" scripts/bench-gateway-ab.sh            # also latency: open loop at each rate, A and B
#                                                                # alternating every 100 ms (mcpload pair), per round
#   CLOSED=0 PAIR_RATE=3000 scripts/bench-gateway-ab.sh          # latency only
#
# Results: $OUT/ab.jsonl (mcpload), $OUT/syscalls.txt, $OUT/machine.txt and,
# with PROFILE=1, {a,b}-cpu.pb.gz and their tops.
set -euo pipefail

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-8s}
WARMUP=${WARMUP:-2s}
CLIENTS=${CLIENTS:-16}
A_FLAGS=${A_FLAGS--h1=false}
B_FLAGS=${B_FLAGS-}
A_ENV=${A_ENV-}
B_ENV=${B_ENV-}
PROFILE=${PROFILE:-}
A_BIN=${A_BIN:-} B_BIN=${B_BIN:-}
PAIR_RATE=${PAIR_RATE:-}
CLOSED=${CLOSED:-1}
UPSTREAM_PORT=${UPSTREAM_PORT:-3402} A_PORT=${A_PORT:-3410} B_PORT=${B_PORT:-3412}
GO=${GO:-go}

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
OUT=${OUT:-bench/results/gateway-ab-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
bin=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$bin"
}
trap cleanup EXIT

scripts/bench-gomod.sh
(cd bench && $GO build -o "$bin/mcpload" ./mcpload && $GO build -o "$bin/gatewaypeer" ./gatewaypeer)
(cd bench/peers && $GO build -o "$bin/" ./gosdk)
a_bin=${A_BIN:-$bin/gatewaypeer} b_bin=${B_BIN:-$bin/gatewaypeer}
{
	echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
	echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "go: $($GO version)"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with changes)')"
	echo "a: $A_ENV ${A_BIN:-gatewaypeer} $A_FLAGS"
	echo "b: $B_ENV ${B_BIN:-gatewaypeer} $B_FLAGS"
	echo "rounds=$ROUNDS duration=$DURATION warmup=$WARMUP clients=$CLIENTS closed=$CLOSED pair_rate=${PAIR_RATE:-none}"
} | tee "$OUT/machine.txt"

up=http://127.0.0.1:$UPSTREAM_PORT/mcp
"$bin/gosdk" -addr "127.0.0.1:$UPSTREAM_PORT" >"$OUT/upstream.log" 2>&1 &
pids+=($!)
"$bin/mcpload" wait -url "$up" -timeout 60s
# shellcheck disable=SC2086
env $A_ENV "$a_bin" -addr "127.0.0.1:$A_PORT" -upstream "$up" -debug "127.0.0.1:$((A_PORT + 1))" $A_FLAGS >"$OUT/a.log" 2>&1 &
a_pid=$!
pids+=($!)
# shellcheck disable=SC2086
env $B_ENV "$b_bin" -addr "127.0.0.1:$B_PORT" -upstream "$up" -debug "127.0.0.1:$((B_PORT + 1))" $B_FLAGS >"$OUT/b.log" 2>&1 &
b_pid=$!
pids+=($!)
"$bin/mcpload" wait -url "http://127.0.0.1:$A_PORT/mcp" -timeout 60s
"$bin/mcpload" wait -url "http://127.0.0.1:$B_PORT/mcp" -timeout 60s

for rate in $PAIR_RATE; do
	for ((r = 1; r <= ROUNDS; r++)); do
		echo "open loop $rate/s round $r: load average $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/loadavg.txt"
		"$bin/mcpload" pair -a "a=http://127.0.0.1:$A_PORT/mcp" -b "b=http://127.0.0.1:$B_PORT/mcp" -rate "$rate" \
			-duration "$DURATION" -warmup "$WARMUP" -round "$r" -json "$OUT/pair.jsonl" || true
	done
done

io() { awk '/^syscr/ {r=$2} /^syscw/ {w=$2} END {print r, w}' "/proc/$1/io"; }
for ((r = 1; r <= ROUNDS && CLOSED != 0; r++)); do
	order=(a b)
	((r % 2 == 0)) && order=(b a)
	for s in "${order[@]}"; do
		if [[ $s == a ]]; then port=$A_PORT pid=$a_pid; else port=$B_PORT pid=$b_pid; fi
		prof=""
		if [[ -n $PROFILE && $r == 1 ]]; then
			secs=$(($(sed 's/s$//' <<<"$DURATION") - 1))
			(sleep "${WARMUP%s}" && curl -fsS -o "$OUT/$s-cpu.pb.gz" "http://127.0.0.1:$((port + 1))/debug/pprof/profile?seconds=$secs") &
			prof=$!
		fi
		read -r r0 w0 < <(io "$pid")
		lines0=$(wc -l <"$OUT/ab.jsonl" 2>/dev/null || echo 0)
		"$bin/mcpload" run -label "$s" -url "http://127.0.0.1:$port/mcp" -clients "$CLIENTS" -duration "$DURATION" \
			-warmup "$WARMUP" -pid "$pid" -memstats "http://127.0.0.1:$((port + 1))/debug/vars" -round "$r" -json "$OUT/ab.jsonl"
		read -r r1 w1 < <(io "$pid")
		# Calls of the round, warm-up included (the counters run through it too).
		calls=$(tail -n +$((lines0 + 1)) "$OUT/ab.jsonl" | jq -s '.[0] | (.requests // .calls // 0) * (1 + '"${WARMUP%s}"' / '"${DURATION%s}"') | floor')
		echo "round $r $s: $(((r1 - r0))) reads, $(((w1 - w0))) writes, about $calls calls" | tee -a "$OUT/syscalls.txt"
		if [[ -n $prof ]]; then
			wait "$prof" || echo "no CPU profile" >&2
			$GO tool pprof -top -cum -nodecount=60 "$bin/gatewaypeer" "$OUT/$s-cpu.pb.gz" >"$OUT/$s-cpu-top.txt" 2>/dev/null || true
		fi
	done
done
{
	if [[ -s $OUT/pair.jsonl ]]; then
		echo "## Open loop: latency of b against a (each round, and the medians)"
		echo
		echo "| calls/s | round | a p50 µs | b p50 µs | b − a p50 µs | a p99 µs | b p99 µs | b − a p99 µs | late (a/b) |"
		echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
		jq -rs 'def median: sort | if length%2==1 then .[length/2|floor] else (.[length/2-1]+.[length/2])/2 end;
			group_by(.rate)[] | (group_by(.round) | map({a: (map(select(.side=="a"))[0]), b: (map(select(.side=="b"))[0])})) as $rs |
			($rs[] | "| \(.a.rate) | \(.a.round) | \(.a.p50_us|round) | \(.b.p50_us|round) | \((.b.p50_us-.a.p50_us)|round) | \(.a.p99_us|round) | \(.b.p99_us|round) | \((.b.p99_us-.a.p99_us)|round) | \(.a.late)/\(.b.late) |"),
			"| \($rs[0].a.rate) | median | \($rs|map(.a.p50_us)|median|round) | \($rs|map(.b.p50_us)|median|round) | \($rs|map(.b.p50_us-.a.p50_us)|median|round) | \($rs|map(.a.p99_us)|median|round) | \($rs|map(.b.p99_us)|median|round) | \($rs|map(.b.p99_us-.a.p99_us)|median|round) | |"' "$OUT/pair.jsonl"
		echo
	fi
	if [[ -s $OUT/ab.jsonl ]]; then
		"$bin/mcpload" summarize -base a "$OUT/ab.jsonl"
	fi
} | tee "$OUT/summary.md"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt"
echo "results in $OUT"
