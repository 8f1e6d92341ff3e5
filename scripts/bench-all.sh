#!/usr/bin/env bash
# Every comparison the project claims, in one run, as one table of ratios
# (BENCHMARKS.md, "All comparisons in one table"). `make bench` runs it.
#
#   scripts/bench-all.sh [BEIR_DATA_DIR]     # the full run (~20 min on 2 cores)
#   QUICK=1 scripts/bench-all.sh             # about a minute or two per part, to try it
#   ONLY="mcp client" scripts/bench-all.sh   # some parts: mcp conc memory overload gateway client kafka
#                                            # postgres durable agent rag ragscale
#
# Parts, each Helix against its reference:
#   mcp       scripts/bench-side-by-side.sh: limit (plain net/http JSON-RPC), stock go-sdk,
#             mcp-go, helix stateful / stateless / go-sdk transport serving bench/echo*.yaml
#             (a tools: entry with one Starlang step); start-up and idle sessions
#   conc      scripts/bench-concurrency.sh: helix against the limit at 1 … 1,024 clients, stateful
#             and stateless, keep-alive and a new connection per call (its own table, conc/matrix.md;
#             the worst cells in the table of ratios)
#   memory    scripts/bench-memory.sh: 100,000 idle sessions (VmRSS), RssAnon under 1,024 clients,
#             RssFile of the default and the slim build
#   overload  scripts/bench-overload.sh: 2× capacity offered, admission control off and `auto`,
#             a CPU-bound echo tool and a tool waiting on a backend of fixed capacity
#   gateway   scripts/bench-gateway.sh: a call straight to an MCP server and through Helix's
#             gateway in front of it (added p50/p99 at 3,000 calls/s, throughput ratio)
#   client    BenchmarkMCPClientOverhead: the mcp:// producer against a bare go-sdk client loop
#   kafka     BenchmarkConsumeTransformProduce: a YAML workflow against a plain franz-go loop
#   postgres  BenchmarkInsert against plain pgx (needs HELIX_POSTGRES_URL; skipped without)
#   durable   BenchmarkDurableStep: p50 per durable step (1 KiB body) on SQLite and PostgreSQL
#             against the goals (PostgreSQL needs HELIX_POSTGRES_URL; skipped without)
#   agent     scripts/agent-overhead.sh: Helix's CPU per agent iteration against the 200 µs goal
#   ragscale  scripts/bench-rag-scale.sh: the embedded store at 10k, 100k, 1M synthetic chunks
#             (QUICK: 10k) — ingest, keyword/hybrid p99 against the goals, memory — and BEIR
#             nDCG@10 of the embedded and pgvector keyword arms (with BEIR_DATA)
#   rag       the BEIR pipeline of bench/rag/beir-pipeline.yaml: nDCG@10 against BEIR's BM25,
#             ingest and query speed (needs the BEIR data directory as argument or
#             BEIR_DATA: the folder holding scifact/ and nfcorpus/; skipped without)
#
# Results go to $OUT (default bench/results/all-<UTC time>): each part's raw output,
# ratios.tsv (one line a figure) and table.md (the table printed at the end).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
GO=${GO:-go}
QUICK=${QUICK:-}
ONLY=${ONLY:-"mcp conc memory overload gateway client kafka postgres durable agent rag ragscale"}
BEIR_DATA=${1:-${BEIR_DATA:-}}
OUT=${OUT:-bench/results/all-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rows=$OUT/ratios.tsv
: >"$rows"

if [[ -n $QUICK ]]; then
	count=1 client_rounds=3 benchtime=1s kafka_n=5000x
else
	count=5 client_rounds=9 benchtime=3s kafka_n=20000x
fi

{
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "go: $($GO version)"
	echo "mode: $([[ -n $QUICK ]] && echo quick || echo full); parts: $ONLY"
} | tee "$OUT/machine.txt"

# row AREA FIGURE HELIX REFERENCE-NAME REFERENCE UNIT BETTER TARGET: one figure.
# BETTER is higher (ratio helix/reference) or lower (ratio reference/helix), so that
# a ratio of 1 or more always means "Helix as good as the reference or better".
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$rows"; }
skip() { row "$1" "$2" "" "" "" "" "" "skipped: $3"; echo "bench-all: $1: skipped: $3"; }
want() { [[ " $ONLY " == *" $1 "* ]]; }

# bench_median FILE NAME-REGEX UNIT: the median of the figure UNIT over the lines of
# Go benchmark output FILE whose benchmark name matches NAME-REGEX.
bench_median() {
	awk -v re="$2" -v unit="$3" '
	$1 ~ /^Benchmark/ && $1 ~ re {
		for (i = 3; i < NF; i++) if ($(i + 1) == unit) { v[++n] = $i + 0 }
	}
	END {
		if (n == 0) exit
		for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
		m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
		printf (m >= 100 ? "%.0f\n" : "%.3g\n"), m
	}' "$1"
}

# summary_field FILE LABEL COLUMN: a column (1-based after the server name: 1 rounds,
# 2 req/s, 4 req/s against the limit of the same round (median), 5 p50, 6 p99,
# 8 CPU µs/call, 13 anon RSS MiB, 14 steal %) of the side-by-side summary.
summary_field() {
	awk -F'|' -v label="$2" -v col="$3" '{ gsub(/ /, "", $2) } $2 == label { v = $(col + 2); gsub(/ /, "", v); print v }' "$1"
}

if want mcp; then
	echo "== mcp: side by side"
	if [[ -n $QUICK ]]; then
		export ROUNDS=${ROUNDS:-2} DURATION=${DURATION:-3s} WARMUP=${WARMUP:-1s} STARTUP_RUNS=${STARTUP_RUNS:-3} \
			SESSIONS=${SESSIONS:-1000} SETTLE=${SETTLE:-0s}
	fi
	OUT=$OUT/mcp scripts/bench-side-by-side.sh
	s=$OUT/mcp/summary.md
	lrps=$(summary_field "$s" limit 2) lcpu=$(summary_field "$s" limit 8) lp99=$(summary_field "$s" limit 6)
	for n in helix helix-stateless helix-sdk gosdk mcpgo; do
		rps=$(summary_field "$s" "$n" 2)
		[[ -z $rps ]] && continue
		target=""
		[[ $n == helix || $n == helix-stateless ]] && target="≥ 0.85"
		row "MCP server" "tools/call throughput, $n" "$rps" limit "$lrps" "req/s" higher "$target"
		row "MCP server" "tools/call throughput against the limit of the same round (median), $n" "$(summary_field "$s" "$n" 4)" limit 1 "" higher "$target"
		[[ $n == helix || $n == helix-stateless ]] && target="p99 ≤ 1.5× the limit's: ratio ≥ 0.67"
		row "MCP server" "tools/call p99 latency, $n" "$(summary_field "$s" "$n" 6)" limit "$lp99" "µs" lower "$target"
		[[ $n == helix || $n == helix-stateless ]] && target="≤ 60 µs"
		row "MCP server" "server CPU per call, $n" "$(summary_field "$s" "$n" 8)" limit "$lcpu" "µs" lower "$target"
	done
	if [[ -f $OUT/mcp/startup.txt ]]; then
		ms=$(sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' "$OUT/mcp/startup.txt")
		row "MCP server" "start to first tools/list (median)" "$ms" "goal" 30 ms lower "≤ 30 ms"
		kib=$(awk '/KiB per idle session/ { print $1 }' "$OUT/mcp/sessions.txt")
		n=$(awk '/^opened/ { print $2 }' "$OUT/mcp/sessions.txt")
		row "MCP server" "10,000 idle sessions (from $n: KiB each × 10,000)" "$(awk -v k="$kib" 'BEGIN { printf "%.0f", k * 10000 / 1024 }')" "goal" 150 MiB lower "≤ 150 MiB"
	fi
fi

if want conc; then
	echo "== conc: every concurrency, side by side with the limit"
	# Its own rounds and durations (CONC_ROUNDS, CONC_DURATION): not the mcp part's.
	OUT=$OUT/conc QUICK=$QUICK ROUNDS=${CONC_ROUNDS:-} DURATION=${CONC_DURATION:-} WARMUP= GO=$GO scripts/bench-concurrency.sh
	# The cells furthest from the goal: the lowest throughput ratio and the highest p99 ratio.
	m=$OUT/conc/matrix.tsv
	worst=$(awk -F'\t' 'NR > 1 && $4 == "helix" { print $8, $3 " clients " $1 " " $2 }' "$m" | sort -g | head -1)
	row "MCP concurrency" "lowest throughput against the limit of the same round (median), at ${worst#* }" "${worst%% *}" limit 1 "" higher "≥ 0.9 at every cell"
	worst=$(awk -F'\t' 'NR > 1 && $4 == "helix" { print $13, $3 " clients " $1 " " $2 }' "$m" | sort -g | tail -1)
	row "MCP concurrency" "highest p99 against the limit's (median), at ${worst#* }" "${worst%% *}" limit 1 "" lower "≤ 1.3 at every cell: ratio ≥ 0.77"
fi

if want memory; then
	echo "== memory: idle sessions, many clients, default and slim build"
	OUT=$OUT/memory QUICK=$QUICK GO=$GO scripts/bench-memory.sh
	t=$OUT/memory/memory.tsv
	# mem_field MEASURE-PREFIX BUILD COLUMN: a figure of memory.tsv, in MiB.
	mem_field() { awk -F'\t' -v m="$1" -v b="$2" -v c="$3" '$1 == b && index($2, m) == 1 { printf "%.1f\n", $c / 1024 }' "$t" | tail -1; }
	n=$(awk -F'\t' '$2 ~ /sessions after/ { split($2, w, " "); print w[1] }' "$t")
	row "Memory" "$n idle sessions, VmRSS after they idled ($(awk -F'\t' '$2 ~ /sessions after/ { split($2, w, " "); print w[4] }' "$t"))" "$(mem_field "$n sessions after" default 3)" goal 953.7 MiB lower "≤ 1 GB at 100,000"
	row "Memory" "$n sessions, peak VmRSS while they were opened at once" "$(mem_field "$n sessions: peak" default 3)" "" "" MiB lower ""
	c=$(awk -F'\t' '$2 ~ / clients$/ { split($2, w, " "); print w[1]; exit }' "$t")
	row "Memory" "RssAnon under $c clients" "$(mem_field "$c clients" default 5)" goal 61.0 MiB lower "≤ 64 MB at 1,024"
	row "Memory" "RssFile idle, default build against the slim build" "$(mem_field idle default 4)" "slim build" "$(mem_field idle slim 4)" MiB lower ""
fi

if want overload; then
	echo "== overload: 2x capacity, admission control off and auto"
	if [[ -n $QUICK ]]; then
		OUT=$OUT/overload ROUNDS=1 DURATION=5s CAP_DURATION=3s GO=$GO scripts/bench-overload.sh
	else
		OUT=$OUT/overload ROUNDS=1 GO=$GO scripts/bench-overload.sh
	fi
	j=$OUT/overload/results.jsonl
	# ov LABEL FIELD: the median over the rounds of a field of the runs labelled LABEL.
	ov() {
		grep "\"label\":\"$1\"" "$j" | grep -o "\"$2\":[0-9.e+-]*" | sed 's/.*://' | sort -g |
			awk '{ v[NR] = $1 } END { if (NR) printf "%.2f\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
	}
	for w in backend echo; do
		row Overload "$w tool, auto: goodput at 2× capacity" "$(ov "$w-on" goodput_ratio)" goal 0.9 "× capacity" higher "≥ 0.9"
		row Overload "$w tool, auto: admitted p99 against the unloaded p99" "$(ov "$w-on" p99_ratio)" goal 3 × lower "≤ 3"
		row Overload "$w tool, auto: calls failed after admission" "$(ov "$w-on" failed)" goal 0 "" lower "0"
		row Overload "$w tool, off: admitted p99 against the unloaded p99" "$(ov "$w-off" p99_ratio)" "" "" × lower ""
	done
fi

if want gateway; then
	echo "== gateway: straight to an MCP server and through Helix's gateway"
	if [[ -n $QUICK ]]; then
		OUT=$OUT/gateway ROUNDS=1 DURATION=3s GO=$GO scripts/bench-gateway.sh
	else
		OUT=$OUT/gateway ROUNDS=3 DURATION=5s GO=$GO scripts/bench-gateway.sh
	fi
	s=$OUT/gateway/summary.md
	# The open loop's median row at 3,000 calls/s: added p50 (column 6) and p99 (9), µs.
	added() { awk -F'|' -v c="$1" '{ gsub(/ /, "") } $2 == "3000" && $3 == "median" { print $c }' "$s"; }
	row Gateway "added p50 at 3,000 calls/s" "$(added 6)" goal 100 µs lower "≤ 0.1 ms"
	row Gateway "added p99 at 3,000 calls/s" "$(added 9)" goal 300 µs lower "≤ 0.3 ms"
	g=$(awk -F'|' '{ gsub(/ /, "") } $2 == "gateway" { print $6 }' "$s")
	row Gateway "closed-loop throughput against the upstream (median of the per-round ratios)" "$g" upstream 1 "" higher "≥ 0.8"
fi

if want client; then
	echo "== client: mcp:// producer against a go-sdk client loop"
	# One process per round, so that the two loops alternate (-count would run each
	# sub-benchmark count times in a row, and the machine's load drifts). GOMAXPROCS=1:
	# with one P the client and the in-process server take turns on one thread, so the
	# process's CPU is the work of the call; with two, the garbage collector's idle mark
	# workers and the wake-ups between threads add tens of µs that differ from run to run
	# (BENCHMARKS.md, "mcp:// client"). The figure is the median of the rounds'
	# differences (helix − gosdk within a round), not the difference of two medians.
	$GO test -c -o "$OUT/client.test" ./internal/component/mcp/client/
	for ((i = 0; i < client_rounds; i++)); do
		GOMAXPROCS=1 "$OUT/client.test" -test.run '^$' -test.bench MCPClientOverhead -test.benchtime "$benchtime" -test.benchmem
	done | tee "$OUT/client.txt"
	rm -f "$OUT/client.test"
	h=$(bench_median "$OUT/client.txt" '/helix' 'cpu-µs/call') g=$(bench_median "$OUT/client.txt" '/gosdk' 'cpu-µs/call')
	d=$(awk '/^BenchmarkMCPClientOverhead\/gosdk/ { for (i = 3; i < NF; i++) if ($(i + 1) == "cpu-µs/call") g = $i }
		/^BenchmarkMCPClientOverhead\/helix/ { for (i = 3; i < NF; i++) if ($(i + 1) == "cpu-µs/call") print $i - g }' "$OUT/client.txt" |
		sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.1f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
	row "mcp:// client" "CPU per call (client + server, one process, GOMAXPROCS=1)" "$h" "go-sdk client loop" "$g" µs lower ""
	row "mcp:// client" "Helix's own CPU per call (median of helix − go-sdk per round)" "$d" goal 40 µs lower "≤ 40 µs"
fi

if want kafka; then
	echo "== kafka: consume → Starlang → produce"
	$GO test -c -o "$OUT/kafka.test" ./internal/component/kafka/
	for ((i = 0; i < count; i++)); do
		"$OUT/kafka.test" -test.run '^$' -test.bench 'ConsumeTransformProduce/(limit|helix)$' -test.benchtime "$kafka_n"
	done | tee "$OUT/kafka.txt"
	rm -f "$OUT/kafka.test"
	row Kafka "records/s, consume → Starlang → produce" "$(bench_median "$OUT/kafka.txt" '/helix' records/s)" "franz-go loop" "$(bench_median "$OUT/kafka.txt" '/limit-' records/s)" records/s higher "≥ 1.0"
	row Kafka "CPU per record" "$(bench_median "$OUT/kafka.txt" '/helix' cpu-µs/record)" "franz-go loop" "$(bench_median "$OUT/kafka.txt" '/limit-' cpu-µs/record)" µs lower ""
fi

if want postgres; then
	if [[ -z ${HELIX_POSTGRES_URL:-} ]]; then
		skip PostgreSQL "insert" "HELIX_POSTGRES_URL unset (eval \"\$(scripts/postgres.sh start)\")"
	else
		echo "== postgres: insert against plain pgx"
		$GO test -c -o "$OUT/postgres.test" ./internal/component/postgres/
		for ((i = 0; i < (count > 3 ? 3 : count); i++)); do
			"$OUT/postgres.test" -test.run '^$' -test.bench 'BenchmarkInsert/(values1|values10|values100|values1000|copy10|copy100|copy1000)/' -test.benchtime "$benchtime"
		done | tee "$OUT/postgres.txt"
		rm -f "$OUT/postgres.test"
		for c in values1 values10 values100 values1000 copy10 copy100 copy1000; do
			row PostgreSQL "insert rows/s, $c" "$(bench_median "$OUT/postgres.txt" "/$c/helix" rows/s)" "plain pgx" "$(bench_median "$OUT/postgres.txt" "/$c/pgx" rows/s)" rows/s higher "≥ 1.0"
		done
	fi
fi

if want durable; then
	echo "== durable: the cost of a durable step (1 KiB body), against the same workflow not durable"
	stores="none|sqlite"
	[[ -n ${HELIX_POSTGRES_URL:-} ]] && stores="none|sqlite|postgres"
	$GO test -c -o "$OUT/durable.test" ./internal/durable/
	for ((i = 0; i < (count > 3 ? 3 : count); i++)); do
		"$OUT/durable.test" -test.run '^$' -test.bench "BenchmarkDurableStep/store=($stores)/body=1KiB" -test.benchtime 200x
	done | tee "$OUT/durable.txt"
	rm -f "$OUT/durable.test"
	# (p50 of the 11-step run − p50 of the 1-step run) / 10, in ms.
	per_step() {
		local one eleven
		one=$(bench_median "$OUT/durable.txt" "store=$1/body=1KiB/steps=1-" p50-ns)
		eleven=$(bench_median "$OUT/durable.txt" "store=$1/body=1KiB/steps=11-" p50-ns)
		awk -v a="$one" -v b="$eleven" 'BEGIN { printf "%.3f", (b - a) / 10 / 1e6 }'
	}
	row Durable "p50 per step, SQLite" "$(per_step sqlite)" goal 0.3 ms lower "≤ 0.3 ms"
	if [[ -n ${HELIX_POSTGRES_URL:-} ]]; then
		row Durable "p50 per step, PostgreSQL" "$(per_step postgres)" goal 1 ms lower "≤ 1 ms"
	else
		skip Durable "p50 per step, PostgreSQL" "HELIX_POSTGRES_URL unset (eval \"\$(scripts/postgres.sh start)\")"
	fi
fi

if want agent; then
	echo "== agent: Helix's overhead per iteration"
	COUNT=$count BENCHTIME=$benchtime scripts/agent-overhead.sh "$OUT/agent" >"$OUT/agent.txt"
	ns=$(bench_median "$OUT/agent/bench.txt" 'AgentOverheadOpenAIMCP' helix-cpu-ns/iteration)
	row "Agent loop" "Helix's CPU per iteration (beyond tool call and model POST, GOMAXPROCS=1)" "$(awk -v n="$ns" 'BEGIN { printf "%.1f", n / 1000 }')" goal 200 µs lower "≤ 200 µs"
fi

if want rag; then
	if [[ -z $BEIR_DATA ]]; then
		skip RAG "BEIR ingest/query" "no BEIR data (pass the folder holding scifact/ and nfcorpus/ as argument)"
	else
		echo "== rag: BEIR, the pipeline defaults of bench/rag/beir-pipeline.yaml"
		scripts/bench-gomod.sh
		(cd bench && $GO build -o "$OUT/rag" ./rag)
		sets="scifact nfcorpus"
		[[ -n $QUICK ]] && sets=scifact
		for ds in $sets; do
			[[ -e $BEIR_DATA/$ds/qrels/test.tsv ]] || { echo "bench-all: no $BEIR_DATA/$ds/qrels/test.tsv" >&2; exit 2; }
			"$OUT/rag" --data "$BEIR_DATA/$ds" --config bench/rag/beir-pipeline.yaml --pipeline beir --out "$OUT/rag-$ds.json" >/dev/null
			j=$OUT/rag-$ds.json
			# field NAME [FORMAT]: a number of the run's JSON, rounded
			field() { grep -o "\"$1\": *[0-9.e+-]*" "$j" | head -1 | sed 's/.*: *//' | awk -v f="${2:-%.4g}" '{ printf f "\n", $1 }'; }
			bm25=0.665
			[[ $ds == nfcorpus ]] && bm25=0.325
			row RAG "$ds nDCG@10 (keyword pipeline defaults)" "$(field ndcg_at_10 %.4f)" "BEIR paper BM25" "$bm25" "" higher "≥ 1"
			row RAG "$ds ingest" "$(field docs_per_sec %.0f)" "" "" docs/s higher ""
			row RAG "$ds query p99" "$(field p99_ms %.2f)" goal 20 ms lower "≤ 20 ms"
		done
		rm -f "$OUT/rag"
	fi
fi

if want ragscale; then
	echo "== ragscale: the embedded store at scale"
	OUT=$OUT/ragscale QUICK=$QUICK BEIR_DATA=$BEIR_DATA GO=$GO scripts/bench-rag-scale.sh
	t=$OUT/ragscale/scale.tsv
	while IFS=$'\t' read -r n vec dps kp50 kp99 hp50 hp99 rss open; do
		[[ $n == chunks || $n == "#"* ]] && continue
		if [[ $vec == 1 ]]; then
			row "RAG scale" "$n chunks with 384-dim vectors: ingest" "$dps" "" "" docs/s higher ""
			row "RAG scale" "$n chunks: hybrid query p99" "$hp99" goal 50 ms lower "≤ 50 ms"
			row "RAG scale" "$n chunks with vectors: RSS after open" "$rss" goal 1536 MiB lower "≤ 1.5 GB at 1M"
		else
			row "RAG scale" "$n chunks keyword-only: ingest" "$dps" goal 10000 docs/s higher "≥ 10,000 docs/s"
			row "RAG scale" "$n chunks: keyword query p99" "$kp99" goal 20 ms lower "≤ 20 ms at 1M"
			row "RAG scale" "$n chunks: open" "$open" "" "" s lower ""
		fi
	done <"$t"
	while IFS=$'\t' read -r _ ds store ndcg; do
		ref=0.68
		[[ $ds == nfcorpus ]] && ref=0.325
		row "RAG scale" "$ds nDCG@10, $store keyword arm" "$ndcg" goal "$ref" "" higher "≥ $ref"
	done < <(grep '^# beir' "$t" || true)
fi

echo "== all comparisons ($(head -1 "$OUT/machine.txt"))"
awk -F'\t' '
BEGIN {
	print "| area | figure | helix | reference | ratio (≥ 1: Helix as good or better) | target |"
	print "|---|---|---:|---:|---:|---|"
}
{
	area = $1; fig = $2; h = $3; rname = $4; r = $5; unit = $6; better = $7; target = $8
	ratio = "–"
	if (h != "" && r != "" && h + 0 > 0 && r + 0 > 0) ratio = sprintf("%.2f", better == "lower" ? r / h : h / r)
	u = (unit == "" ? "" : " " unit)
	printf "| %s | %s | %s | %s | %s | %s |\n", area, fig, (h == "" ? "–" : h u), (r == "" ? (rname == "" ? "–" : rname) : rname " " r u), ratio, target
}' "$rows" | tee "$OUT/table.md"
if [[ -f $OUT/conc/matrix.md ]]; then
	echo "== every concurrency: helix against the limit (conc/matrix.md)"
	cat "$OUT/conc/matrix.md"
fi
echo "results in $OUT"
