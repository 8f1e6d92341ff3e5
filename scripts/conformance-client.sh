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
auth/client-credentials-basic)
	# auth arm (s12-auth): a workflow whose mcp:// target has only
	# auth: {type: oauth2, discover: true, client_id, client_secret}, run once by
	# `helix test`: the token endpoint is found by discovery, the grant is
	# client_credentials.
	ctx=${MCP_CONFORMANCE_CONTEXT:-'{}'}
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	addr=${url#http://}
	cat >"$tmp/cc.yaml" <<-EOF
	workflows:
	  - id: call-test-tool
	    trigger: direct://call-test-tool
	    steps:
	      - target:
	          uri: mcp://$addr/test-tool
	          auth:
	            type: oauth2
	            discover: true
	            client_id: "\${env:CC_CLIENT_ID}"
	            client_secret: "\${env:CC_CLIENT_SECRET}"
	tests:
	  - name: calls test-tool with a token found by discovery
	    workflow: call-test-tool
	    input: {body: {}}
	    expect: {body: test}
	EOF
	CC_CLIENT_ID=$(printf '%s' "$ctx" | jq -r '.client_id // empty') \
		CC_CLIENT_SECRET=$(printf '%s' "$ctx" | jq -r '.client_secret // empty') \
		"$@" test "$tmp/cc.yaml"
	;;
auth/*)
	# auth arm (s12-auth): `helix mcp login` (authorization code + PKCE; the
	# suite's authorization server redirects at once, so curl as $BROWSER brings
	# the code to the loopback listener), then `helix mcp call` with the stored
	# token, in a store of its own. Pre-registered credentials come from the
	# scenario's context; the client ID metadata document URL is the suite's.
	ctx=${MCP_CONFORMANCE_CONTEXT:-'{}'}
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	export HELIX_MCP_TOKEN_DIR="$tmp/tokens"
	export BROWSER="curl -fsS -o /dev/null -L"
	HELIX_MCP_CLIENT_SECRET=$(printf '%s' "$ctx" | jq -r '.client_secret // empty')
	export HELIX_MCP_CLIENT_SECRET
	client_id=$(printf '%s' "$ctx" | jq -r '.client_id // empty')
	"$@" mcp login "$url" --timeout 20s \
		--client-metadata-url https://conformance-test.local/client-metadata.json \
		${client_id:+--client-id "$client_id"}
	"$@" mcp call "$url" test-tool
	;;
*)
	echo "conformance-client.sh: scenario '${MCP_CONFORMANCE_SCENARIO:-}' is not supported (supported: initialize, tools_call)" >&2
	exit 2
	;;
esac
