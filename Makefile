# Helix developer and CI entry points. `make test` is what .ci/run executes.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c

GO ?= go
FUZZTIME ?= 4s
TEST_TIMEOUT ?= 60m

.PHONY: apicheck allocs release test postgres-start postgres-stop tools services lint vet fmt-check fuzz-smoke unit build run bench-smoke bench-test bench bench-rag

# Full check: services and tools, then lint and brief fuzzing, and the race-enabled test run
# last so the output ends with go test's own per-package ok/FAIL lines. HELIX_REQUIRE_TOOLS=1
# turns every "external tool missing" skip into a failure. A throw-away PostgreSQL cluster
# (scripts/postgres.sh, exporting HELIX_POSTGRES_URL) runs from before the lint to the end and
# is stopped by the trap whether the steps pass or fail. Each step before the last says how
# long it took (scripts/timed-step.sh, on stderr); scripts/race-test.sh announces the last
# one with the time so far and prints nothing after go test: `time make test` for the total.
# The packages that start helix processes share one race-enabled helix binary, built once
# before the run (HELIX_TEST_HELIX_BINARY) instead of once in each of their test processes.
test: export HELIX_TEST_START := $(shell date +%s)
test:
	scripts/timed-step.sh setup-services scripts/setup-services.sh
	scripts/timed-step.sh setup-tools scripts/setup-tools.sh
	trap 'scripts/postgres.sh stop' EXIT; \
	pg_env=$$(scripts/timed-step.sh postgres scripts/postgres.sh start); eval "$$pg_env"; \
	scripts/timed-step.sh lint $(MAKE) --no-print-directory lint; \
	scripts/timed-step.sh fuzz-smoke $(MAKE) --no-print-directory fuzz-smoke; \
	scripts/timed-step.sh bench-smoke $(MAKE) --no-print-directory bench-smoke; \
	scripts/timed-step.sh bench-test $(MAKE) --no-print-directory bench-test; \
	scripts/timed-step.sh allocs $(MAKE) --no-print-directory allocs; \
	helix_bin=$$(mktemp -d); trap 'scripts/postgres.sh stop; rm -rf "$$helix_bin"' EXIT; \
	scripts/timed-step.sh helix-race-build $(GO) build -race -o "$$helix_bin/helix" ./cmd/helix; \
	HELIX_TEST_HELIX_BINARY="$$helix_bin/helix" HELIX_REQUIRE_TOOLS=1 HELIX_REQUIRE_BROWSER=1 \
		scripts/race-test.sh $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...

# Starts the test PostgreSQL for a shell: eval "$$(make -s postgres-start)"; stop it with
# make postgres-stop.
postgres-start:
	@scripts/postgres.sh start

postgres-stop:
	@scripts/postgres.sh stop

# Installs Node 22 and the npm MCP peers into .tools (or $HELIX_TOOLS_DIR).
tools:
	scripts/setup-tools.sh

services:
	scripts/setup-services.sh

lint: vet fmt-check tidy-check apicheck staticcheck

# Fails when the public Go API (packages under pkg/) differs from api/helix.txt, listing
# what changed. Accept a deliberate change with `make apicheck UPDATE=1` (the same as
# `go test ./internal/apicheck -update`) and explain it in the changelog of docs/go-api.md.
apicheck:
	$(GO) test -count=1 ./internal/apicheck $(if $(UPDATE),-update)

# staticcheck (pinned in scripts/staticcheck.sh, built once into .tools, go.mod untouched)
# on Helix and the bench modules, and the test that keeps benchmark figures out of
# comments (they live in BENCHMARKS.md).
.PHONY: staticcheck
staticcheck:
	GO=$(GO) scripts/staticcheck.sh
	$(GO) test -count=1 -run '^TestRepositoryHasNoBenchmarkFigures$$' ./internal/benchfigures

# Fails when go.mod or go.sum are not what `go mod tidy` would write (a direct import
# marked indirect, a requirement nothing uses, a missing checksum), showing the diff.
tidy-check:
	$(GO) mod tidy -diff

# The benchmark tools are Go modules of their own (bench/: the load tool; bench/peers:
# the servers Helix is compared with), so `go test ./...` of Helix skips them.
# bench/go.mod copies Helix's requirements (scripts/bench-gomod.sh keeps it current).
BENCH_MODULES := bench bench/peers

vet:
	$(GO) vet ./...
	@scripts/bench-gomod.sh
	@for m in $(BENCH_MODULES); do (cd $$m && $(GO) vet ./...); done

# Lists unformatted files and fails if there are any. .tools and other hidden dirs are skipped.
fmt-check:
	@files=$$(find . -name '.?*' -prune -o -name '*.go' -print | xargs -r gofmt -l); \
	if [ -n "$$files" ]; then echo "gofmt needed on:"; echo "$$files"; exit 1; fi; \
	echo "gofmt: ok"

# Every fuzz target in the repo for FUZZTIME each, FUZZ_JOBS packages at a time (see
# scripts/fuzz-smoke.sh and DEVELOPERS.md).
fuzz-smoke:
	FUZZTIME=$(FUZZTIME) FUZZ_JOBS=$(FUZZ_JOBS) GO=$(GO) scripts/fuzz-smoke.sh

# Allocation-count tests (named Test…Allocs) skip under -race, where sync.Pool drops a
# random share of its items; this runs them without it, in the packages that have them.
ALLOC_PKGS = $(shell grep -rl --include='*_test.go' --exclude-dir='.[!.]*' --exclude-dir=bench -E '^func Test[A-Za-z0-9_]*Allocs.t \*testing' . | xargs -r -n1 dirname | sort -u)
allocs:
	$(GO) test -count=1 -run 'Allocs$$' $(ALLOC_PKGS)

# Race-enabled tests without tool installs; tests needing missing tools skip.
unit:
	$(GO) test -race -count=1 ./...

# bin/helix, stripped (-s -w: no symbol table nor DWARF; panics keep their stack
# traces) with -trimpath, and stamped for `helix version` as scripts/release.sh does.
# VERSION, COMMIT, DATE and BIN_DIR may be given: make build VERSION=v1.2.3.
BIN_DIR ?= bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
DATE ?= $(shell TZ=UTC git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ)
BUILD_PKG := github.com/arvenza/helix/internal/cli
BUILD_LDFLAGS = -s -w -X $(BUILD_PKG).Version=$(VERSION) -X $(BUILD_PKG).Commit=$(COMMIT) -X $(BUILD_PKG).Date=$(DATE)

build:
	$(GO) build -trimpath -ldflags "$(BUILD_LDFLAGS)" -o $(BIN_DIR)/helix ./cmd/helix

# bin/helix-slim: make build without the LLM SDKs, Redis, ONNX and Kafka (every
# slim tag; docs/building.md says what each leaves out). SLIM_TAGS picks others.
.PHONY: build-slim
SLIM_TAGS ?= helix_nollm,helix_noredis,helix_noonnx,helix_nokafka
build-slim:
	$(GO) build -trimpath -tags $(SLIM_TAGS) -ldflags "$(BUILD_LDFLAGS)" -o $(BIN_DIR)/helix-slim ./cmd/helix

# Release binaries into dist/ (git-ignored): linux and darwin, amd64 and arm64, static
# (CGO_ENABLED=0, -trimpath), stamped with version, commit and date for `helix version`,
# and dist/SHA256SUMS. VERSION=v1.2.3 or PLATFORMS="linux/amd64" narrow it; see
# scripts/release.sh.
release:
	GO=$(GO) scripts/release.sh

run:
	$(GO) run ./cmd/helix run examples/quickstart.yaml

# Runs each benchmark of every module once to prove it still works (not a
# measurement). Packages without benchmarks are not compiled.
bench-smoke:
	GO=$(GO) scripts/bench-smoke.sh

# Every comparison the project claims, interleaved, as one table of ratios
# (BENCHMARKS.md). Not part of `make test`: ~20 minutes, or QUICK=1 for a try.
# BEIR_DATA=DIR adds the RAG part (the folder holding scifact/ and nfcorpus/).
bench:
	GO=$(GO) QUICK=$(QUICK) scripts/bench-all.sh $(BEIR_DATA)

# The RAG scale benchmark (scripts/bench-rag-scale.sh): the embedded store at 10k, 100k and
# 1M synthetic chunks (ingest rate, query p50/p99, memory, open time) and BEIR nDCG@10 of the
# embedded and pgvector keyword arms (BEIR_DATA, HELIX_POSTGRES_URL) as one table; QUICK=1
# for 10k only, KILL=1 for the kill -9 mid-ingest run at 1M chunks. `make bench` runs it as
# its ragscale part.
bench-rag:
	GO=$(GO) QUICK=$(QUICK) KILL=$(KILL) BEIR_DATA=$(BEIR_DATA) scripts/bench-rag-scale.sh

# The load tool's own tests (bench/mcpload: ~12 s, against an in-process Helix MCP
# server), kept out of the main module's `go test ./...`.
bench-test:
	scripts/bench-gomod.sh
	cd bench && $(GO) test -race -count=1 ./...
