#!/usr/bin/env bash
# Binary size and idle memory of the default build and of each slim build
# (docs/building.md), as a Markdown table for BENCHMARKS.md.
#
# Each build is made like `make build` (-trimpath, -ldflags "-s -w"), then started
# with `helix run` on a small configuration (the quickstart's two workflows: an
# http-server:// trigger calling a direct:// one; every port chosen by the system);
# once its /healthz answers and it has idled for SETTLE seconds, VmRSS and its two
# parts, RssFile (the executable's and libraries' pages the kernel keeps mapped)
# and RssAnon (heap, stacks), are read from /proc/PID/status and the process is
# stopped (SIGTERM). Linux only (/proc).
#
# Environment (defaults in brackets): GO [go], SETTLE [3] seconds idle before the
# reading, BUILDS [every build below], a space-separated list of: default,
# helix_nollm, helix_noredis, helix_noonnx, helix_nokafka, all (every tag at once).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

GO=${GO:-go}
SETTLE=${SETTLE:-3}
ALL_TAGS=helix_nollm,helix_noredis,helix_noonnx,helix_nokafka
BUILDS=${BUILDS:-default helix_nollm helix_noredis helix_noonnx helix_nokafka all}

if [[ ! -r /proc/self/status ]]; then
	echo "binary-size: needs Linux (/proc/PID/status for VmRSS)" >&2
	exit 2
fi

work=$(mktemp -d)
pid=""
cleanup() {
	if [[ -n $pid ]]; then kill "$pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

cat > "$work/helix.yaml" <<'YAML'
helix:
  management:
    addr: 127.0.0.1:0
    required: true
workflows:
  - id: greet-http
    trigger: http-server://127.0.0.1:0/greet?httpMethod=POST&consumes=application/json
    steps:
      - target: direct://greet
  - id: greet
    trigger: direct://greet
    steps:
      - transform:
          starlang: |
            name = payload.get("name", "World")
            {"greeting": "Hello, " ++ name ++ "!"}
YAML

# tags_of prints the -tags value of a build name.
tags_of() {
	case $1 in
	default) echo "" ;;
	all) echo "$ALL_TAGS" ;;
	helix_*) echo "$1" ;;
	*)
		echo "binary-size: unknown build \"$1\": use default, all or one tag (helix_nollm …)" >&2
		exit 2
		;;
	esac
}

# idle_rss_kib starts bin on the configuration, waits for /healthz and prints VmRSS,
# RssFile and RssAnon in KiB after SETTLE seconds.
idle_rss_kib() {
	local bin=$1 log="$work/run.log" url="" rss
	"$bin" run "$work/helix.yaml" >"$log" 2>&1 &
	pid=$!
	for _ in $(seq 1 300); do
		url=$(grep -o 'management server listening.*url=http://[0-9.:]*' "$log" | grep -o 'http://[0-9.:]*' | head -n1 || true)
		if [[ -n $url ]] && curl -fsS -o /dev/null "$url/healthz" 2>/dev/null; then
			break
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "binary-size: $bin exited before it was ready:" >&2
			cat "$log" >&2
			exit 1
		fi
		url=""
		sleep 0.1
	done
	if [[ -z $url ]]; then
		echo "binary-size: $bin: /healthz did not answer within 30 s:" >&2
		cat "$log" >&2
		exit 1
	fi
	sleep "$SETTLE"
	rss=$(awk '/^(VmRSS|RssFile|RssAnon):/ {v[$1] = $2} END {print v["VmRSS:"], v["RssFile:"], v["RssAnon:"]}' "/proc/$pid/status")
	kill -TERM "$pid"
	wait "$pid" 2>/dev/null || true
	pid=""
	echo "$rss"
}

mib() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 1048576}'; }

for b in $BUILDS; do tags_of "$b" >/dev/null; done # refuse a typo before compiling

echo "| build | -tags | binary (MiB) | idle RSS (MiB) | file-backed (MiB) | anonymous (MiB) |"
echo "|---|---|---:|---:|---:|---:|"
for b in $BUILDS; do
	tags=$(tags_of "$b")
	bin="$work/helix-$b"
	"$GO" build -trimpath -tags "$tags" -ldflags "-s -w" -o "$bin" ./cmd/helix
	size=$(stat -c %s "$bin")
	mem=$(idle_rss_kib "$bin") # in a variable, so that a failed start stops the script
	read -r rss file anon <<<"$mem"
	echo "| $b | ${tags:-(none)} | $(mib "$size") | $(mib $((rss * 1024))) | $(mib $((file * 1024))) | $(mib $((anon * 1024))) |"
done
