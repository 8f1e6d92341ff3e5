#!/usr/bin/env bash
# Reproduces BENCHMARKS.md's "RAG retrieval quality and speed (BEIR)": keyword (BM25)
# retrieval on BEIR SciFact and NFCorpus with the embedded store, both published BM25
# parameter sets, with and without chunking (titles as a field of their own), with the
# title in the text (--flat), and BEIR's two-field query in two stores as a cross-check;
# a hybrid mechanics/speed run with a tiny random ONNX model when ONNX Runtime is
# available; and a pgvector keyword run when HELIX_POSTGRES_URL is set.
#
#   scripts/bench-rag.sh DATA_DIR    (the folder holding scifact/ and nfcorpus/)
#
# Raw results go to bench/results/rag-<UTC time>/ (one JSON per run, machine.txt,
# summary.md). Not part of CI: the collections are not in the repository.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ $# -lt 1 ]; then
	echo "usage: scripts/bench-rag.sh DATA_DIR (the folder holding the BEIR scifact/ and nfcorpus/ collections)" >&2
	exit 2
fi
DATA=$(cd "$1" && pwd)
GO=${GO:-go}
for ds in scifact nfcorpus; do
	if [ ! -e "$DATA/$ds/qrels/test.tsv" ]; then
		echo "bench-rag: no $DATA/$ds/qrels/test.tsv (pass the directory holding scifact/ and nfcorpus/)" >&2
		exit 2
	fi
done

"$ROOT/scripts/bench-gomod.sh"
OUT=$ROOT/bench/results/rag-$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
BIN=$(mktemp -d)/rag
trap 'rm -rf "$(dirname "$BIN")"' EXIT
(cd "$ROOT/bench" && "$GO" build -o "$BIN" ./rag)

{
	echo "commit: $(git -C "$ROOT" rev-parse HEAD)$(git -C "$ROOT" diff --quiet -- internal/rag bench/rag || echo ' (with uncommitted changes in internal/rag or bench/rag)')"
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "go: $("$GO" version)"
	echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') ($(nproc) cores)"
	echo "memory: $(free -g | awk '/^Mem:/ {print $2 " GiB"}')"
	echo "kernel: $(uname -sr)"
	echo "data: $DATA"
} >"$OUT/machine.txt"

runs=()
bench() { # name, flags...
	local name=$1
	shift
	echo "bench-rag: $name"
	"$BIN" "$@" --out "$OUT/$name.json" >/dev/null
	runs+=("$OUT/$name.json")
}

for ds in scifact nfcorpus; do
	for params in "0.9 0.4" "1.2 0.75"; do
		read -r k1 b <<<"$params"
		for chunk in none recursive:512:64; do
			bench "$ds-keyword-${chunk%%:*}-k1_$k1-b_$b" --data "$DATA/$ds" --strategy keyword --chunk "$chunk" --k1 "$k1" --b "$b"
		done
		# The title in front of the text instead of a title field (pipelines before titles).
		bench "$ds-keyword-none-flat-k1_$k1-b_$b" --data "$DATA/$ds" --strategy keyword --chunk none --k1 "$k1" --b "$b" --flat
		bench "$ds-multifield-k1_$k1-b_$b" --data "$DATA/$ds" --multifield --k1 "$k1" --b "$b"
	done
done

# A pipeline of a Helix YAML file, evaluated exactly as configured (the defaults).
for ds in scifact nfcorpus; do
	bench "$ds-pipeline-defaults" --data "$DATA/$ds" --config "$ROOT/bench/rag/beir-pipeline.yaml" --pipeline beir
done

# Hybrid with a random model: mechanics and speed only; its quality means nothing.
ORT=${HELIX_ONNXRUNTIME_LIB:-$ROOT/.tools/onnxruntime/libonnxruntime.so.1}
onnx=
if [ -f "$ORT" ] && [ "$(cd "$ROOT/bench" && "$GO" env CGO_ENABLED)" = 1 ]; then
	onnx=1
	bench "scifact-hybrid-onnx-random-recursive" --data "$DATA/scifact" --strategy hybrid --chunk recursive:512:64 \
		--embed onnx-random --onnx-lib "$ORT"
else
	echo "bench-rag: no ONNX Runtime at $ORT (scripts/setup-tools.sh) or no cgo: hybrid mechanics run skipped"
fi

if [ -n "${HELIX_POSTGRES_URL:-}" ]; then
	for ds in scifact nfcorpus; do
		bench "$ds-keyword-pgvector-none" --data "$DATA/$ds" --strategy keyword --chunk none --store pgvector
	done
	if [ -n "$onnx" ]; then
		bench "scifact-hybrid-onnx-random-pgvector-recursive" --data "$DATA/scifact" --strategy hybrid --chunk recursive:512:64 \
			--embed onnx-random --onnx-lib "$ORT" --store pgvector
	fi
else
	echo "bench-rag: HELIX_POSTGRES_URL unset: pgvector run skipped (eval \"\$(make -s postgres-start)\")"
fi

"$BIN" summarize "${runs[@]}" | tee "$OUT/summary.md"
echo "bench-rag: results in ${OUT#"$ROOT"/}"
