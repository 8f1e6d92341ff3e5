# Helix developer and CI entry points. `make test` is what .ci/run executes.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c

GO ?= go
FUZZTIME ?= 10s
TEST_TIMEOUT ?= 60m

.PHONY: test tools services lint vet fmt-check fuzz-smoke unit build run bench-smoke

# Full check: services and tools, then lint and brief fuzzing, and the race-enabled test run
# last so the output ends with go test's own per-package ok/FAIL lines. HELIX_REQUIRE_TOOLS=1
# turns every "external tool missing" skip into a failure.
test:
	scripts/setup-services.sh
	scripts/setup-tools.sh
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory fuzz-smoke
	$(MAKE) --no-print-directory bench-smoke
	HELIX_REQUIRE_TOOLS=1 $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...

# Installs Node 22 and the npm MCP peers into .tools (or $HELIX_TOOLS_DIR).
tools:
	scripts/setup-tools.sh

services:
	scripts/setup-services.sh

lint: vet fmt-check

vet:
	$(GO) vet ./...

# Lists unformatted files and fails if there are any. .tools and other hidden dirs are skipped.
fmt-check:
	@files=$$(find . -name '.?*' -prune -o -name '*.go' -print | xargs -r gofmt -l); \
	if [ -n "$$files" ]; then echo "gofmt needed on:"; echo "$$files"; exit 1; fi; \
	echo "gofmt: ok"

# Every fuzz target in the repo for FUZZTIME each (see scripts/fuzz-smoke.sh).
fuzz-smoke:
	FUZZTIME=$(FUZZTIME) GO=$(GO) scripts/fuzz-smoke.sh

# Race-enabled tests without tool installs; tests needing missing tools skip.
unit:
	$(GO) test -race -count=1 ./...

build:
	$(GO) build -o bin/helix ./cmd/helix

run:
	$(GO) run ./cmd/helix run examples/quickstart.yaml

# Runs each benchmark once to prove it still works (not a measurement). Packages without
# benchmarks are not compiled.
bench-smoke:
	@pkgs=$$(find . \( -name '.?*' -o -name testdata \) -prune -o -name '*_test.go' -print | \
		{ xargs -r grep -lE '^func Benchmark[A-Za-z0-9_]*\(\w+ \*testing\.B\)' || true; } | xargs -r -n1 dirname | sort -u); \
	if [ -z "$$pkgs" ]; then echo "bench-smoke: no benchmarks found"; exit 0; fi; \
	$(GO) test -run '^$$' -bench . -benchtime 1x $$pkgs
