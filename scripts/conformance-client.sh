#!/bin/sh
# Client under test for the MCP conformance suite's client mode
# (@modelcontextprotocol/conformance `client --command scripts/conformance-client.sh`).
#
# The suite starts a test server for one scenario, appends its URL as the LAST argument
# and sets MCP_CONFORMANCE_SCENARIO. This wrapper turns the scenario into a
# `helix mcp call` (Helix's MCP client, the same code as the mcp:// component):
#   initialize  connect (initialize handshake) and list the tools
#   tools_call  call the suite's add_numbers tool with a=2, b=3
# Other scenarios (sse-retry, elicitation, auth/*) need client features `helix mcp call`
# does not have; they exit 2 so the suite reports them as failed, not skipped.
#
# The helix binary is $HELIX_BIN, else `helix` on PATH, else `go run ./cmd/helix`.
set -eu

if [ "$#" -lt 1 ]; then
	echo "usage: $0 [ignored…] SERVER_URL (the conformance suite appends the URL)" >&2
	exit 2
fi
for url in "$@"; do :; done # the last argument

if [ -n "${HELIX_BIN:-}" ]; then
	set -- "$HELIX_BIN"
elif command -v helix >/dev/null 2>&1; then
	set -- helix
else
	cd "$(dirname "$0")/.."
	set -- go run ./cmd/helix
fi

case "${MCP_CONFORMANCE_SCENARIO:-}" in
initialize)
	exec "$@" mcp call "$url" --list
	;;
tools_call)
	exec "$@" mcp call "$url" add_numbers a=2 b=3
	;;
elicitation-sep1034-client-defaults)
	# The server's form has a default for every field: --no-input answers with them.
	exec "$@" mcp call "$url" test_client_elicitation_defaults --no-input
	;;
sep-2322-client-request-state)
	# Each tool answers the first call with input requests (a form asking to
	# confirm); the client answers and calls again with them and the request state.
	for tool in test_mrtr_echo_state test_mrtr_no_state test_mrtr_unrelated test_mrtr_no_result_type; do
		"$@" mcp call "$url" "$tool" --no-input --elicit confirmed=true || exit 1
	done
	;;
*)
	echo "conformance-client.sh: scenario '${MCP_CONFORMANCE_SCENARIO:-}' is not supported (supported: initialize, tools_call)" >&2
	exit 2
	;;
esac
