#!/usr/bin/env bash
# Console cost benchmark: MCP tools/call throughput of helix with the web console
# off and on, side by side (see BENCHMARKS.md for how to read the output).
#
# Builds the load tool (bench/mcpload) and helix, starts two helix processes
# serving bench/echo.yaml, one with bench/console-off.yaml and one with
# bench/console-on.yaml (the console with its capture at its defaults), and a
# live feed client (curl on /console/exchanges/feed, what the Exchanges page's
# browser holds open) on the console-on one for the whole run. It runs ROUNDS
# interleaved rounds of DURATION at CLIENTS clients against both (the order
# alternates) and prints the medians with console-on's throughput as a ratio
# to console-off's, and how many exchanges the feed client received.
#
#   scripts/bench-console.sh                     # 5 rounds x 10 s, 16 clients
#   ROUNDS=3 DURATION=5s scripts/bench-console.sh
#
# Results go to $OUT (default bench/results/console-<timestamp>): results.jsonl,
# summary.md, feed.txt (the feed's events) and the servers' logs.
set -euo pipefail

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
CLIENTS=${CLIENTS:-16}
GO=${GO:-go}

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
OUT=${OUT:-bench/results/console-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
bin=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$bin"
}
trap cleanup EXIT

echo "== build"
scripts/bench-gomod.sh # bench/ is its own module, with Helix's requirements
(cd bench && $GO build -o "$bin/mcpload" ./mcpload)
$GO build -o "$bin/helix" ./cmd/helix

{
	echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
	echo "go: $($GO version)"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "rounds=$ROUNDS duration=$DURATION warmup=$WARMUP clients=$CLIENTS"
} | tee "$OUT/machine.txt"

key=bench-console-$RANDOM$RANDOM
declare -A url pid mgmt
# start NAME MCP_PORT MGMT_PORT OVERLAY: helix run bench/echo.yaml OVERLAY.
start() {
	local name=$1 p=$2 m=$3 overlay=$4
	url[$name]="http://127.0.0.1:$p/mcp"
	mgmt[$name]="127.0.0.1:$m"
	HELIX_BENCH_ADDR="127.0.0.1:$p" HELIX_BENCH_MGMT="127.0.0.1:$m" HELIX_BENCH_CONSOLE_KEY=$key \
		"$bin/helix" run bench/echo.yaml "$overlay" >"$OUT/$name.log" 2>&1 &
	pid[$name]=$!
	pids+=($!)
}
# free_port: a loopback port nothing listens on (other benchmarks may share the machine).
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 30000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
}
start console-off "$(free_port)" "$(free_port)" bench/console-off.yaml
start console-on "$(free_port)" "$(free_port)" bench/console-on.yaml
names=(console-off console-on)
for n in "${names[@]}"; do
	"$bin/mcpload" wait -url "${url[$n]}" -timeout 60s || { echo "$n did not come up:"; cat "$OUT/$n.log"; exit 1; }
	# The answer must have come from our helix, not from another program on the port.
	kill -0 "${pid[$n]}" 2>/dev/null || { echo "$n exited:"; cat "$OUT/$n.log"; exit 1; }
done

# The live feed, open for the whole run.
curl -sN -H "Authorization: Bearer $key" "http://${mgmt[console-on]}/console/exchanges/feed" >"$OUT/feed.txt" &
pids+=($!)

echo "== $ROUNDS rounds x ${#names[@]} servers x $DURATION, $CLIENTS clients"
for ((r = 0; r < ROUNDS; r++)); do
	for ((i = 0; i < ${#names[@]}; i++)); do
		n=${names[$(((i + r) % ${#names[@]}))]}
		echo "-- round $((r + 1)): $n"
		"$bin/mcpload" run -label "$n" -url "${url[$n]}" -clients "$CLIENTS" -duration "$DURATION" -warmup "$WARMUP" \
			-pid "${pid[$n]}" -json "$OUT/results.jsonl" -round $((r + 1))
	done
done

echo "== medians (throughput relative to console-off)"
"$bin/mcpload" summarize -base console-off "$OUT/results.jsonl" | tee "$OUT/summary.md"
events=$(grep -c '^event: exchange' "$OUT/feed.txt" || true)
echo "live feed: $events exchanges received, $(grep -c '^event: missed' "$OUT/feed.txt" || true) missed-notices" | tee -a "$OUT/summary.md"
if [[ $events -eq 0 ]]; then
	echo "the live feed received nothing: the console-on side was not measured as promised" >&2
	exit 1
fi
