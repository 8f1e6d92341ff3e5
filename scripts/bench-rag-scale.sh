#!/usr/bin/env bash
# The RAG scale benchmark (issue "RAG at scale"), side by side in one run: the embedded
# store filled with 10k, 100k and 1M synthetic chunks (internal/rag/ragsynth), keyword-only
# and with 384-dim vectors — ingest documents/s and chunks/s, CPU per document, open time,
# heap and RSS, keyword and hybrid query p50/p99 and CPU per query — and BEIR nDCG@10 of the
# embedded and pgvector keyword arms. `make bench-rag` runs it.
#
#   scripts/bench-rag-scale.sh                   # 10k, 100k, 1M (tens of minutes, GBs of disk)
#   QUICK=1 scripts/bench-rag-scale.sh           # 10k only, to try it
#   SIZES=10000,100000 scripts/bench-rag-scale.sh
#   BEIR_DATA=../shared/data scripts/bench-rag-scale.sh   # adds nDCG@10 (scifact/, nfcorpus/)
#   KILL=1 scripts/bench-rag-scale.sh            # only the kill -9 mid-ingest run at 1M chunks
#
# The pgvector arm needs HELIX_POSTGRES_URL (eval "$(scripts/postgres.sh start)"). The stores
# live under $TMPDIR (default /tmp) and are deleted after each size; keep a scale run's memory
# in view (the store is in one process). Results: bench/results/rag-scale-<commit>/ (scale.json,
# scale.md, machine.txt, and kill.txt with kill-machine.txt for KILL=1).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
GO=${GO:-go}
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
OUT=${OUT:-bench/results/rag-scale-$commit}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
TMP=${TMPDIR:-/tmp}

machine=machine.txt
[[ -n ${KILL:-} ]] && machine=kill-machine.txt # beside a scale run's machine.txt, not over it
{
	echo "commit: $commit$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(free -g | awk '/^Mem:/ {print $2 " GiB"}'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "go: $($GO version)"
} | tee "$OUT/$machine"

if [[ -n ${KILL:-} ]]; then
	# ragwrite's kill test: a child process ingests, is killed with SIGKILL mid-ingest, and
	# the reopened store must hold every document the child saw acknowledged.
	chunks=${KILL_CHUNKS:-1000000}
	if ! grep -rqs HELIX_RAG_KILL_CHUNKS --include='*_test.go' internal/rag/store/embedded; then
		echo "bench-rag-scale: kill: skipped: no test of internal/rag/store/embedded reads HELIX_RAG_KILL_CHUNKS in this tree" | tee "$OUT/kill.txt"
		exit 0
	fi
	echo "== kill -9 mid-ingest at $chunks chunks"
	HELIX_RAG_KILL_CHUNKS=$chunks TMPDIR=$TMP $GO test -count=1 -timeout 4h -v -run "${KILL_RUN:-Kill}" ./internal/rag/store/embedded 2>&1 | tee "$OUT/kill.txt"
	echo "bench-rag-scale: acknowledged vs present:"
	grep -iE 'acknowledged|present' "$OUT/kill.txt" || true
	echo "results in $OUT"
	exit 0
fi

sizes=${SIZES:-10000,100000,1000000}
queries=${QUERIES:-1000}
if [[ -n ${QUICK:-} ]]; then
	sizes=${SIZES:-10000} queries=${QUERIES:-300}
fi
datasets=scifact,nfcorpus
[[ -n ${QUICK:-} ]] && datasets=scifact
beir=()
[[ -n ${BEIR_DATA:-} ]] && beir=(--beir "$(cd "$BEIR_DATA" && pwd)" --datasets "$datasets")

scripts/bench-gomod.sh
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd bench && $GO build -o "$bin/rag" ./rag)
"$bin/rag" scale --sizes "$sizes" --queries "$queries" --tmp "$TMP" --out "$OUT" --label "$commit" "${beir[@]}"
echo "results in $OUT"
