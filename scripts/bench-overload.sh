#!/usr/bin/env bash
# Overload benchmark (issue 33): Helix with and without admission control, side by side,
# on two workloads:
#
#   echo     a tool that only uses the CPU, for microseconds (bench/echo-stateless.yaml
#            against bench/echo-admission.yaml)
#   backend  a tool that waits on a backend of fixed capacity (`mcpload backend`:
#            BACKEND_SLOTS slots held BACKEND_SERVICE each; bench/backend-stateless.yaml
#            against bench/backend-admission.yaml)
#
# Each round and workload starts helix without admission control, measures its
# capacity closed-loop (CAP_CLIENTS clients for CAP_DURATION) and the p99 of one
# client alone (the unloaded p99), then offers MULTIPLE × capacity open loop for
# DURATION (mcpload overload). It stops that server and does the same against the
# configuration with `admission: {max_running: auto}` at the same offered rate and
# against the same unloaded p99. Only one server runs at a time. It reports goodput
# (calls answered per second, as a share of capacity), refused calls (503 + -32030),
# failures after admission, p50/p99 of the admitted calls against the unloaded p99,
# the server's CPU per answer, and what a refusal costs against a call (from the
# server CPU of the two runs: the calls of the run without admission control cost
# c each, the run with it spends the rest on its refusals).
#
#   scripts/bench-overload.sh                          # 3 rounds, 2x, 10 s windows
#   ROUNDS=1 DURATION=5s MULTIPLE=3 scripts/bench-overload.sh
#   WORKLOADS=backend BACKEND_SLOTS=16 BACKEND_SERVICE=2ms scripts/bench-overload.sh
#   PIN=0 scripts/bench-overload.sh                    # server and load tool share every core
#   BASE_REF=4c7fbb5 WORKLOADS=backend scripts/bench-overload.sh   # A/B the admission control of another commit
#
# BASE_REF builds helix at that commit too (git archive) and runs its admission
# configuration right before this tree's in every round (label WORKLOAD-base-on),
# at the same offered load: alternating rounds of the two controllers.
#
# On a machine of a few cores the load tool cannot offer more than the server serves
# if they share the cores (capacity is then that of the pair). PIN=1 (the default)
# runs the server on core 0 with GOMAXPROCS=1 and the load tool (and the backend) on
# the other cores (taskset), so that capacity is the server's and the load tool has
# room to offer a multiple of it.
#
# Results go to $OUT (default bench/results/overload-<commit>): results.jsonl (one
# line per run), summary.md, machine.txt and the servers' logs.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
MULTIPLE=${MULTIPLE:-2}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-1s}
CAP_CLIENTS=${CAP_CLIENTS:-16}
CAP_DURATION=${CAP_DURATION:-5s}
WORKERS=${WORKERS:-200} # below max_connections_per_ip (256): each worker has its own connection
PIN=${PIN:-1}
GO=${GO:-go}
WORKLOADS=${WORKLOADS:-echo backend}
BACKEND_SLOTS=${BACKEND_SLOTS:-8}
BACKEND_SERVICE=${BACKEND_SERVICE:-5ms}

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
OUT=${OUT:-bench/results/overload-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
mkdir -p "$OUT"
bin=$(mktemp -d)
server="" backend=""
stop_server() {
	if [[ -n $server ]]; then
		kill "$server" 2>/dev/null || true
		wait "$server" 2>/dev/null || true
		server=""
	fi
}
stop_backend() {
	if [[ -n $backend ]]; then
		kill "$backend" 2>/dev/null || true
		wait "$backend" 2>/dev/null || true
		backend=""
	fi
}
cleanup() {
	stop_server
	stop_backend
	rm -rf "$bin"
	# The servers' logs stay with the results; the console's sign-in link does not.
	sed -i 's/token=[0-9a-f]\{20,\}/token=(removed)/g' "$OUT"/*.log 2>/dev/null || true
}
trap cleanup EXIT

echo "== build"
scripts/bench-gomod.sh # bench/ is its own module, with Helix's requirements
(cd bench && $GO build -o "$bin/mcpload" ./mcpload)
$GO build -o "$bin/helix" ./cmd/helix
if [[ -n ${BASE_REF:-} ]]; then
	mkdir -p "$bin/base"
	git archive "$BASE_REF" | tar -x -C "$bin/base"
	(cd "$bin/base" && $GO build -o "$bin/helix-base" ./cmd/helix)
fi

{
	echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "go: $($GO version)"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "pin=$PIN rounds=$ROUNDS multiple=$MULTIPLE duration=$DURATION warmup=$WARMUP capacity: $CAP_CLIENTS clients x $CAP_DURATION, workers=$WORKERS"
	echo "workloads: $WORKLOADS; backend: $BACKEND_SLOTS slots x $BACKEND_SERVICE${BASE_REF:+; A/B against $BASE_REF}"
} | tee "$OUT/machine.txt"

addr=127.0.0.1:3199
backend_addr=127.0.0.1:3198
url="http://$addr/mcp"
server_pin=() load_pin=()
if [[ $PIN == 1 ]]; then
	last=$(($(nproc) - 1))
	((last >= 1)) || { echo "PIN=1 needs at least 2 cores" >&2; exit 2; }
	server_pin=(taskset -c 0 env GOMAXPROCS=1)
	load_pin=(taskset -c "1-$last")
fi
# serve NAME FILE [BINARY]: starts helix (or BINARY) serving FILE, waits until it answers.
serve() {
	HELIX_BENCH_ADDR=$addr HELIX_BACKEND_ADDR=$backend_addr "${server_pin[@]}" "${3:-$bin/helix}" mcp serve "$2" >>"$OUT/$1.log" 2>&1 &
	server=$!
	"$bin/mcpload" wait -url "$url" -timeout 60s -stateless || { echo "$1 did not come up:"; cat "$OUT/$1.log"; exit 1; }
}
common=(-url "$url" -stateless -multiple "$MULTIPLE" -duration "$DURATION" -warmup "$WARMUP" -workers "$WORKERS"
	-capacity-clients "$CAP_CLIENTS" -capacity-duration "$CAP_DURATION" -json "$OUT/results.jsonl")

for ((r = 1; r <= ROUNDS; r++)); do
	for wl in $WORKLOADS; do
		case $wl in
		echo) off=bench/echo-stateless.yaml on=bench/echo-admission.yaml tool=echo ;;
		backend)
			off=bench/backend-stateless.yaml on=bench/backend-admission.yaml tool=work
			"${load_pin[@]}" "$bin/mcpload" backend -addr "$backend_addr" -slots "$BACKEND_SLOTS" -service "$BACKEND_SERVICE" >>"$OUT/backend.log" 2>&1 &
			backend=$!
			;;
		*) echo "unknown workload $wl (want echo or backend)" >&2; exit 2 ;;
		esac
		echo "== round $r, $wl: admission off ($off)"
		serve "$wl-off" "$off"
		"${load_pin[@]}" "$bin/mcpload" overload -label "$wl-off" -tool "$tool" -pid "$server" "${common[@]}"
		stop_server
		read -r capacity unloaded < <(tail -n1 "$OUT/results.jsonl" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["capacity_rps"], r["unloaded_p99_us"])')
		if [[ -n ${BASE_REF:-} ]]; then
			echo "== round $r, $wl: admission on at $BASE_REF ($on), same offered load"
			serve "$wl-base-on" "$on" "$bin/helix-base"
			"${load_pin[@]}" "$bin/mcpload" overload -label "$wl-base-on" -tool "$tool" -pid "$server" "${common[@]}" -capacity "$capacity" -unloaded-p99 "$unloaded"
			stop_server
		fi
		echo "== round $r, $wl: admission on ($on), same offered load"
		serve "$wl-on" "$on"
		"${load_pin[@]}" "$bin/mcpload" overload -label "$wl-on" -tool "$tool" -pid "$server" "${common[@]}" -capacity "$capacity" -unloaded-p99 "$unloaded"
		stop_server
		stop_backend
	done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt"

python3 - "$OUT/results.jsonl" >"$OUT/summary.md" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("| run | capacity/s | unloaded p99 | offered/s | ok | refused | failed after admission | unsent | goodput × capacity | admitted p50 | admitted p99 | p99 × unloaded | server CPU per answer | refusal × call | steal |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
call = None  # CPU per call of the run without admission control just before
for r in rows:
    cpu = r.get("server_cpu_us", 0)
    per = cpu / r["answered"] if r["answered"] else 0
    refusal = ""
    if r["label"].endswith("-off"):
        call = cpu / r["ok"] if r["ok"] else None
    elif call and r["refused"]:
        refusal = f"{(cpu - r['ok'] * call) / r['refused'] / call:.2f}"
    print(f"| {r['label']} | {r['capacity_rps']:.0f} | {r['unloaded_p99_us']:.0f} µs | {r['offered_rps']:.0f} | {r['ok']} | {r['refused']} | {r['failed']} | {r['unsent']} | "
          f"{r['goodput_ratio']:.2f} | {r['p50_us']:.0f} µs | {r['p99_us']:.0f} µs | {r['p99_ratio']:.1f} | {per:.1f} µs | {refusal} | {r['steal_pct']:.1f}% |")
PY
cat "$OUT/summary.md"
