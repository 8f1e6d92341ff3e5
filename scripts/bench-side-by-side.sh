#!/usr/bin/env bash
# Side-by-side MCP server benchmark (see BENCHMARKS.md for how to read the output).
#
# Builds the load tool (bench/mcpload), the peers (bench/peers: plain net/http
# "limit", stock go-sdk, mcp-go) and helix; starts each server on its own loopback
# port; runs ROUNDS interleaved rounds of DURATION at CLIENTS concurrent clients
# against every server (the order rotates each round so that no server always runs
# first or last); prints the medians with throughput as a ratio to the limit.
# Then it times helix from process start to the first answered tools/list, and
# measures SESSIONS idle stateful sessions against a fresh helix and their eviction.
#
#   scripts/bench-side-by-side.sh                    # 5 rounds x 10 s, 16 clients
#   ROUNDS=3 DURATION=5s scripts/bench-side-by-side.sh
#   HELIX_VARIANTS="gogc400:GOGC=400" scripts/bench-side-by-side.sh   # extra helix runs with env
#   HELIX_VARIANTS="sdk:YAML=bench/echo-sdk.yaml gogc100:GOGC=100" …  # YAML=FILE serves another file
#   HELIX_VARIANTS="old:BIN=/tmp/helix-old" …  # BIN=PATH runs another helix binary (another commit's) in the same rounds
#   HELIX_VARIANTS="st:YAML=bench/echo-stateless.yaml,MODE=stateless" …  # MODE=stateless: the load tool skips initialize
#   (default variants: stateless = bench/echo-stateless.yaml, sdk = bench/echo-sdk.yaml; HELIX_VARIANTS="" for none)
#   SESSIONS=2000 SETTLE=0s scripts/bench-side-by-side.sh    # smaller/faster idle-session part
#   SERVERS="limit gosdk helix mcpgo gosdkconn" …  # add the own-Connection experiment
#
# Results go to $OUT (default bench/results/<timestamp>): results.jsonl (one line
# per run), summary.md, startup.txt, sessions.txt and the servers' logs.
set -euo pipefail

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
CLIENTS=${CLIENTS:-16}
SERVERS=${SERVERS:-"limit gosdk helix mcpgo"}
HELIX_VARIANTS=${HELIX_VARIANTS-"stateless:YAML=bench/echo-stateless.yaml,MODE=stateless sdk:YAML=bench/echo-sdk.yaml"}
STARTUP_RUNS=${STARTUP_RUNS:-10}
SESSIONS=${SESSIONS:-10000}
IDLE_TIMEOUT=${IDLE_TIMEOUT:-10s} # must match session_idle_timeout in bench/echo.yaml
GO=${GO:-go}

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
OUT=${OUT:-bench/results/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
bin=$(mktemp -d)
pids=()
# stop_servers ends the servers this script started, by PID.
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

echo "== build"
scripts/bench-gomod.sh # bench/ is its own module, with Helix's requirements
(cd bench && $GO build -o "$bin/mcpload" ./mcpload)
$GO build -o "$bin/helix" ./cmd/helix
(cd bench/peers && $GO build -o "$bin/" ./limit ./gosdk ./mcpgo ./gosdkconn)

{
	echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
	echo "go: $($GO version)"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "rounds=$ROUNDS duration=$DURATION warmup=$WARMUP clients=$CLIENTS"
} | tee "$OUT/machine.txt"

# helix serves bench/echo.yaml; HELIX_BENCH_ADDR picks its listen address.
# HELIX_SUBCOMMAND=run measures the same server through `helix run`.
# helix_cmd [FILE [BINARY]] serves FILE instead (the YAML=FILE entry of a variant),
# with BINARY instead of the helix built here (BIN=PATH).
helix_cmd() { echo "${2:-$bin/helix} ${HELIX_SUBCOMMAND:-mcp serve} ${1:-bench/echo.yaml}"; }

declare -A port pid url memstats stateless
next_port=3101
# start NAME ENV... -- CMD...: starts a server in the background with ENV, records its PID.
start() {
	local name=$1 p=$next_port
	shift
	next_port=$((next_port + 1))
	port[$name]=$p
	url[$name]="http://127.0.0.1:$p/mcp"
	local envs=()
	while [[ $1 != -- ]]; do envs+=("$1"); shift; done
	shift
	env "${envs[@]}" HELIX_BENCH_ADDR="127.0.0.1:$p" "$@" >"$OUT/$name.log" 2>&1 &
	pid[$name]=$!
	pids+=($!)
}

for s in $SERVERS; do
	case $s in
	limit | gosdk | mcpgo | gosdkconn)
		start "$s" -- "$bin/$s" -addr "127.0.0.1:$next_port"
		memstats[$s]="http://127.0.0.1:${port[$s]}/debug/vars"
		;;
	helix) start helix -- $(helix_cmd) ;;
	*) echo "unknown server $s (want limit, gosdk, helix, mcpgo, gosdkconn)" >&2; exit 2 ;;
	esac
done
for v in $HELIX_VARIANTS; do
	name="helix-${v%%:*}"
	IFS=, read -r -a venv <<<"${v#*:}"
	file="" binary="" envs=()
	for e in "${venv[@]}"; do
		case $e in
		YAML=*) file=${e#YAML=} ;;
		BIN=*) binary=${e#BIN=} ;;
		MODE=stateless) stateless[$name]=1 ;;
		MODE=*) echo "variant $v: unknown ${e} (want MODE=stateless)" >&2; exit 2 ;;
		*) envs+=("$e") ;;
		esac
	done
	start "$name" "${envs[@]}" -- $(helix_cmd "$file" "$binary")
done
names=(${!port[@]})
# stable order: as declared
names=($(for n in "${names[@]}"; do echo "${port[$n]} $n"; done | sort -n | cut -d' ' -f2))
for n in "${names[@]}"; do
	"$bin/mcpload" wait -url "${url[$n]}" -timeout 60s ${stateless[$n]:+-stateless} || { echo "$n did not come up:"; cat "$OUT/$n.log"; exit 1; }
done

echo "== $ROUNDS rounds x ${#names[@]} servers x $DURATION, $CLIENTS clients"
for ((r = 0; r < ROUNDS; r++)); do
	for ((i = 0; i < ${#names[@]}; i++)); do
		n=${names[$(((i + r) % ${#names[@]}))]}
		echo "-- round $((r + 1)): $n"
		args=(-label "$n" -url "${url[$n]}" -clients "$CLIENTS" -duration "$DURATION" -warmup "$WARMUP"
			-pid "${pid[$n]}" -json "$OUT/results.jsonl" -round $((r + 1)))
		[[ -n ${memstats[$n]:-} ]] && args+=(-memstats "${memstats[$n]}")
		[[ -n ${stateless[$n]:-} ]] && args+=(-stateless)
		"$bin/mcpload" run "${args[@]}"
	done
done

echo "== medians (throughput relative to limit)"
"$bin/mcpload" summarize -base limit "$OUT/results.jsonl" | tee "$OUT/summary.md"

# Stop the round servers so that start-up and session figures see a quiet machine.
stop_servers

if [[ " $SERVERS " == *" helix "* ]]; then
	echo "== helix: process start to first answered tools/list ($STARTUP_RUNS runs)"
	HELIX_BENCH_ADDR=127.0.0.1:3199 "$bin/mcpload" startup -runs "$STARTUP_RUNS" -label helix \
		-url http://127.0.0.1:3199/mcp -json "$OUT/results.jsonl" -- $(helix_cmd) | tee "$OUT/startup.txt"

	echo "== helix: $SESSIONS idle sessions, then eviction after $IDLE_TIMEOUT"
	next_port=3198
	start helix-sessions -- $(helix_cmd)
	"$bin/mcpload" wait -url "${url[helix-sessions]}" -timeout 60s
	"$bin/mcpload" sessions -url "${url[helix-sessions]}" -n "$SESSIONS" -pid "${pid[helix-sessions]}" \
		-idle "$IDLE_TIMEOUT" -settle "${SETTLE:-150s}" -json "$OUT/results.jsonl" | tee "$OUT/sessions.txt"
fi
echo "results in $OUT"
