#!/usr/bin/env bash
# Measures Helix's own overhead per agent iteration (BENCHMARKS.md, "LLM agents:
# Helix's overhead per iteration"): the overhead benchmark (CPU left after
# subtracting bare tool calls and bare model POSTs), the 100-agent run, and a CPU
# profile of the single-agent run split into Helix's side and the other ends.
#
#   scripts/agent-overhead.sh [outdir]    (default: a new directory under /tmp)
#
# COUNT (default 3) and BENCHTIME (default 3s) set the benchmark runs. The overhead
# benchmark (a subtraction of process CPU) runs with GOMAXPROCS=1 (OVERHEAD_PROCS):
# with two Ps the idle one runs the garbage collector's idle mark workers and the
# scheduler spins between hand-offs, which nearly doubled the process's CPU per
# iteration (1,000 against 540 µs for the same work) and varied from run to run;
# on one P the process's CPU is the work. The 100-agent run keeps every core.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
GO=${GO:-go}
COUNT=${COUNT:-3}
BENCHTIME=${BENCHTIME:-3s}
OUT=${1:-$(mktemp -d /tmp/agent-overhead.XXXXXX)}
mkdir -p "$OUT"
PKG=./internal/agent/mcptools/

# split_by_side reads a CPU profile's stacks (pprof -traces) and sums the samples by side:
# the pprof label side= marks the servers' goroutines and the MCP client session's
# (see sideLabel in internal/agent/mcptools/bench_helpers_test.go); unlabelled stacks
# are the agent's, split by the innermost frame of a known owner. ITERATIONS turns
# the sums into µs per iteration.
split_by_side() {
	"$GO" tool pprof -traces "$1" "$2" 2>/dev/null | awk -v iterations="${ITERATIONS:-0}" '
	function ms(v) {
		if (v ~ /ms$/) return v + 0
		if (v ~ /(us|µs)$/) return v / 1000
		if (v ~ /ns$/) return v / 1e6
		return v * 1000
	}
	function flush(   i, cat, f) {
		if (n == 0) { side = ""; return }
		if (side == "mcp-server") cat = "3 other end: MCP server (go-sdk, its HTTP server)"
		else if (side == "model-server") cat = "3 other end: fake model server (HTTP server, handler)"
		else if (side == "mcp-client") cat = "2 tool call: MCP client session (go-sdk client, its HTTP connection)"
		else {
			for (i = 1; i <= n; i++) if (frame[i] ~ /modelcontextprotocol\/go-sdk|arvenza\/helix\/internal\/component\/mcp\/client/) cat = "2 tool call: MCP client (mcpclient.Conn, go-sdk client)"
			for (i = 1; i <= n && cat == ""; i++) {
				f = frame[i]
				if (f ~ /arvenza\/helix\/internal\/agent\/openai/) cat = "1 helix: provider (internal/agent/openai)"
				else if (f ~ /openai\/openai-go/) cat = "1 helix: openai-go SDK (request encode, response decode)"
				else if (f ~ /arvenza\/helix\/internal\/agent\/mcptools/) cat = "1 helix: mcptools (result conversion)"
				else if (f ~ /arvenza\/helix\/internal\/tool/) cat = "1 helix: internal/tool (arguments, input schema)"
				else if (f ~ /arvenza\/helix\/internal\/agent\./) cat = "1 helix: agent loop (internal/agent)"
				else if (f ~ /^net\/http\./) cat = "1 helix: HTTP client to the model (net/http)"
			}
			if (cat == "") {
				for (i = 1; i <= n; i++) if (frame[i] ~ /gcBgMarkWorker|bgsweep|bgscavenge|freeSomeWbufs|gcStart|gcMarkDone|gcMarkTermination/) cat = "4 shared: background GC (mark workers, sweeper, scavenger)"
				if (cat == "") cat = "4 shared: runtime (scheduler, idle, other)"
			}
		}
		sum[cat] += val; total += val
		n = 0; side = ""
	}
	/^-+\+/ { flush(); next }
	/^ +side: / { side = $2; next }
	/^ +[0-9.]+(ms|s|us|µs|ns) / { val = ms($1); n = 1; frame[1] = $2; next }
	n > 0 && /^ +[^ ]/ { frame[++n] = $1; next }
	END {
		flush()
		printf "%-72s %9s %7s %s\n", "where the CPU went", "ms", "share", (iterations > 0 ? "µs/iteration" : "")
		m = 0
		for (c in sum) {
			# insertion sort by name: mawk has no asort
			for (j = ++m; j > 1 && order[j - 1] > c; j--) order[j] = order[j - 1]
			order[j] = c
		}
		for (i = 1; i <= m; i++) {
			c = order[i]
			printf "%-72s %9.0f %6.1f%% %s\n", substr(c, 3), sum[c], 100 * sum[c] / total, (iterations > 0 ? sprintf("%.1f", 1000 * sum[c] / iterations) : "")
			part[substr(c, 1, 1)] += sum[c]
		}
		printf "%-72s %9.0f\n", "total", total
		if (iterations > 0) {
			printf "per iteration: Helix %.1f µs, tool call (MCP client) %.1f µs, other ends %.1f µs, shared %.1f µs\n",
				1000 * part["1"] / iterations, 1000 * part["2"] / iterations, 1000 * part["3"] / iterations, 1000 * part["4"] / iterations
		}
	}'
}

echo "commit $(git rev-parse --short HEAD), results in $OUT"
"$GO" test -c -o "$OUT/bench.test" "$PKG"
{
	GOMAXPROCS=${OVERHEAD_PROCS:-1} "$OUT/bench.test" -test.run '^$' -test.bench 'AgentOverheadOpenAIMCP$' \
		-test.benchtime "$BENCHTIME" -test.count "$COUNT"
	"$OUT/bench.test" -test.run '^$' -test.bench 'AgentRunOpenAIMCP100Agents$' \
		-test.benchtime "$BENCHTIME" -test.count "$COUNT"
} | tee "$OUT/bench.txt"
rm -f "$OUT/bench.test"

"$GO" test -run '^$' -bench 'AgentRunOpenAIMCP$' -benchtime "$BENCHTIME" \
	-cpuprofile "$OUT/cpu.out" -memprofile "$OUT/mem.out" -o "$OUT/mcptools.test" "$PKG" | tee "$OUT/profile-run.txt"
# Iterations profiled: the run's b.N times the iterations of a run (5).
ITERATIONS=$(awk '/^BenchmarkAgentRunOpenAIMCP/ { print $2 * 5 }' "$OUT/profile-run.txt")
ITERATIONS=$ITERATIONS split_by_side "$OUT/mcptools.test" "$OUT/cpu.out" | tee "$OUT/split.txt"
echo
echo "Helix side, cumulative (only Helix's and openai-go's frames shown):"
"$GO" tool pprof -top -cum -nodecount 40 -tagignore 'side=.' \
	-ignore 'modelcontextprotocol/go-sdk|helix/internal/component/mcp/client|gcBgMarkWorker|bgsweep|bgscavenge' \
	-show 'arvenza/helix|openai/openai-go' "$OUT/mcptools.test" "$OUT/cpu.out" 2>/dev/null | tee "$OUT/helix-cum.txt"
echo
echo "Helix side, flat:"
"$GO" tool pprof -top -nodecount 30 -tagignore 'side=.' \
	-ignore 'modelcontextprotocol/go-sdk|helix/internal/component/mcp/client|gcBgMarkWorker|bgsweep|bgscavenge' \
	"$OUT/mcptools.test" "$OUT/cpu.out" 2>/dev/null | tee "$OUT/helix-flat.txt"
echo
echo "Allocations (all sides), by allocation sites in Helix and openai-go:"
"$GO" tool pprof -sample_index=alloc_space -top -cum -nodecount 25 -show 'arvenza/helix|openai/openai-go' \
	"$OUT/mcptools.test" "$OUT/mem.out" 2>/dev/null | tee "$OUT/alloc-cum.txt"
