#!/bin/sh
# Client under test for the MCP conformance suite's client mode
# (@modelcontextprotocol/conformance `client --command scripts/conformance-client.sh`).
#
# The suite starts a test server for one scenario, appends its URL as the LAST argument
# and sets MCP_CONFORMANCE_SCENARIO (and, for some scenarios, MCP_CONFORMANCE_CONTEXT, a
# JSON object). This wrapper turns the scenario into `helix mcp call|read|prompt` runs
# (Helix's MCP client, the same code as the mcp:// component), one process per request
# the scenario wants, so every arm also shows that a fresh client finds its way:
#   initialize, request-metadata, json-schema-ref-no-deref
#                       connect and list the tools
#   tools_call          call add_numbers with a=2, b=3; with HELIX_CONFORMANCE_WORKFLOW=1
#                       the call is made by a workflow's mcp:// target (helix test)
#   sse-retry           call test_reconnection (the answer comes on a resumed stream)
#   json-schema-2020-12-preservation
#                       list the tools, send the focal tool's inputSchema back to the
#                       echo tool as it was received
#   http-standard-headers
#                       call a tool, read a resource, get a prompt
#   http-custom-headers the tool calls MCP_CONFORMANCE_CONTEXT lists (toolCalls)
#   http-invalid-tool-headers
#                       list the tools and call each one listed (tools whose x-mcp-header
#                       annotations are invalid are not listed, and refused)
#   elicitation-sep1034-client-defaults
#                       call the tool with --no-input: the form is answered with its defaults
#   sep-2322-client-request-state
#                       call each input-required tool; the form is answered (--elicit) and
#                       the call retried with the answers and the request state
#   auth/client-credentials-basic, auth/client-credentials-jwt,
#   auth/cross-app-access-complete-flow, auth/enterprise-managed-authorization,
#   auth/wif-jwt-bearer
#                       a workflow whose mcp:// target's auth has discover: true and the
#                       grant's credentials from the scenario's context (helix test)
#   auth/*              helix mcp login (curl as $BROWSER follows the authorization
#                       server's redirect to the loopback listener), then helix mcp call
#                       with the stored token, in a token directory of its own
# Each arm is self-contained; an unknown scenario exits 2, so the suite reports it as
# failed, not skipped.
#
# The helix binary is $HELIX_BIN, else `helix` on PATH, else `go run ./cmd/helix`.
# Arms that read JSON use node ($NODE, else node on PATH), which runs the suite anyway.
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
node=${NODE:-node}

# js EXPR: prints the value of the JavaScript expression EXPR, in which `ctx` is
# MCP_CONFORMANCE_CONTEXT and `input` is standard input, both parsed as JSON (null when
# empty). Strings print as they are, anything else as JSON.
js() {
	"$node" -e '
		const fs = require("fs");
		const parse = (s) => (s && s.trim() ? JSON.parse(s) : null);
		const ctx = parse(process.env.MCP_CONFORMANCE_CONTEXT);
		const input = parse(fs.readFileSync(0, "utf8"));
		const v = eval(process.argv[1]);
		if (v !== undefined) process.stdout.write(typeof v === "string" ? v : JSON.stringify(v));
	' "$1"
}

# auth_workflow AUTH HELIX…: runs, with `helix test`, a workflow whose mcp:// target
# calls the scenario's test-tool with the auth: block AUTH (YAML lines indented for
# it; their ${env:…} values come from the exported environment) and expects the
# tool's answer: the grant is made by the workflow's own client.
auth_workflow() {
	auth=$1
	shift
	dir=$(mktemp -d)
	cat >"$dir/auth.yaml" <<EOF
workflows:
  - id: call-test-tool
    trigger: direct://call-test-tool
    steps:
      - target:
          uri: mcp://${url#http://}/test-tool
          auth:$auth
tests:
  - name: calls test-tool with a token the workflow got itself
    workflow: call-test-tool
    input: {body: {}}
    expect: {body: test}
EOF
	status=0
	"$@" test "$dir/auth.yaml" || status=$?
	rm -rf "$dir"
	return $status
}

case "${MCP_CONFORMANCE_SCENARIO:-}" in
initialize | request-metadata | json-schema-ref-no-deref)
	exec "$@" mcp call "$url" --list
	;;
tools_call)
	if [ "${HELIX_CONFORMANCE_WORKFLOW:-}" != 1 ]; then
		exec "$@" mcp call "$url" add_numbers a=2 b=3
	fi
	# The same call made by a workflow: helix test sends the input through the
	# workflow, whose mcp:// target is not mocked, and checks the tool's answer.
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
	cat >"$dir/conformance.yaml" <<EOF
workflows:
  - id: add
    trigger: direct://add
    steps:
      - target: mcp://${url#http://}/add_numbers
tests:
  - name: adds through an mcp target
    workflow: add
    input:
      body: {a: 2, b: 3}
    expect:
      body: The sum of 2 and 3 is 5
EOF
	"$@" test "$dir/conformance.yaml"
	;;
sse-retry)
	exec "$@" mcp call "$url" test_reconnection
	;;
json-schema-2020-12-preservation)
	tools=$("$@" mcp call "$url" --list --output json)
	schema=$(printf '%s' "$tools" | js 'input.tools.find((t) => t.name === "json_schema_2020_12_tool").inputSchema')
	exec "$@" mcp call "$url" json_schema_echo --json "{\"schema\":$schema}"
	;;
http-standard-headers)
	"$@" mcp call "$url" test_headers
	"$@" mcp read "$url" 'file:///path/to/file%20name.txt'
	exec "$@" mcp prompt "$url" test_prompt
	;;
http-custom-headers)
	calls=$(js '(ctx && ctx.toolCalls || []).length' </dev/null)
	if [ "$calls" -eq 0 ]; then
		echo "conformance-client.sh: MCP_CONFORMANCE_CONTEXT lists no toolCalls" >&2
		exit 2
	fi
	i=0
	while [ "$i" -lt "$calls" ]; do
		name=$(js "ctx.toolCalls[$i].name" </dev/null)
		args=$(js "ctx.toolCalls[$i].arguments || {}" </dev/null)
		"$@" mcp call "$url" "$name" --json "$args"
		i=$((i + 1))
	done
	;;
http-invalid-tool-headers)
	for name in $("$@" mcp call "$url" --list --output json | js 'input.tools.map((t) => t.name).join("\n")'); do
		"$@" mcp call "$url" "$name" region=us-west1
	done
	;;
auth/client-credentials-basic)
	# client_credentials from the token endpoint found by discovery.
	CC_CLIENT_ID=$(js '(ctx && ctx.client_id) || ""' </dev/null)
	CC_CLIENT_SECRET=$(js '(ctx && ctx.client_secret) || ""' </dev/null)
	export CC_CLIENT_ID CC_CLIENT_SECRET
	auth_workflow '
            type: oauth2
            discover: true
            client_id: "${env:CC_CLIENT_ID}"
            client_secret: "${env:CC_CLIENT_SECRET}"' "$@"
	;;
auth/client-credentials-jwt)
	# client_credentials with private_key_jwt client authentication (the
	# scenario's context holds the PEM key and its algorithm).
	CC_CLIENT_ID=$(js '(ctx && ctx.client_id) || ""' </dev/null)
	CC_PRIVATE_KEY=$(js '(ctx && ctx.private_key_pem) || ""' </dev/null)
	CC_SIGNING_ALG=$(js '(ctx && ctx.signing_algorithm) || ""' </dev/null)
	export CC_CLIENT_ID CC_PRIVATE_KEY CC_SIGNING_ALG
	auth_workflow '
            type: oauth2
            discover: true
            client_id: "${env:CC_CLIENT_ID}"
            private_key: "${env:CC_PRIVATE_KEY}"
            signing_alg: "${env:CC_SIGNING_ALG}"' "$@"
	;;
auth/cross-app-access-complete-flow | auth/enterprise-managed-authorization)
	# The ID token is exchanged at the IdP for an ID-JAG, traded for the token at
	# the server's authorization server.
	EMA_CLIENT_ID=$(js '(ctx && ctx.client_id) || ""' </dev/null)
	EMA_CLIENT_SECRET=$(js '(ctx && ctx.client_secret) || ""' </dev/null)
	EMA_IDP_TOKEN_URL=$(js '(ctx && ctx.idp_token_endpoint) || ""' </dev/null)
	EMA_IDP_CLIENT_ID=$(js '(ctx && ctx.idp_client_id) || ""' </dev/null)
	EMA_ID_TOKEN=$(js '(ctx && ctx.idp_id_token) || ""' </dev/null)
	export EMA_CLIENT_ID EMA_CLIENT_SECRET EMA_IDP_TOKEN_URL EMA_IDP_CLIENT_ID EMA_ID_TOKEN
	auth_workflow '
            type: oauth2
            discover: true
            client_id: "${env:EMA_CLIENT_ID}"
            client_secret: "${env:EMA_CLIENT_SECRET}"
            enterprise:
              idp_token_url: "${env:EMA_IDP_TOKEN_URL}"
              idp_client_id: "${env:EMA_IDP_CLIENT_ID}"
              id_token: "${env:EMA_ID_TOKEN}"' "$@"
	;;
auth/wif-jwt-bearer)
	# The JWT bearer grant with the workload's identity token (the context's
	# valid_jwt) as the assertion, read from a file as a platform would mount it.
	WIF_CLIENT_ID=$(js '(ctx && ctx.client_id) || ""' </dev/null)
	WIF_TOKEN_FILE=$(mktemp)
	export WIF_CLIENT_ID WIF_TOKEN_FILE
	trap 'rm -f "$WIF_TOKEN_FILE"' EXIT
	js '(ctx && ctx.valid_jwt) || ""' </dev/null >"$WIF_TOKEN_FILE"
	auth_workflow '
            type: oauth2
            discover: true
            client_id: "${env:WIF_CLIENT_ID}"
            workload_token_file: "${env:WIF_TOKEN_FILE}"' "$@"
	;;
auth/*)
	# auth arm (s12-auth): `helix mcp login` (authorization code + PKCE; the
	# suite's authorization server redirects at once, so curl as $BROWSER brings
	# the code to the loopback listener), then `helix mcp call` with the stored
	# token, in a store of its own. Pre-registered credentials come from the
	# scenario's context; the client ID metadata document URL is the suite's.
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	export HELIX_MCP_TOKEN_DIR="$tmp/tokens"
	export BROWSER="curl -fsS -o /dev/null -L"
	HELIX_MCP_CLIENT_SECRET=$(js '(ctx && ctx.client_secret) || ""' </dev/null)
	export HELIX_MCP_CLIENT_SECRET
	client_id=$(js '(ctx && ctx.client_id) || ""' </dev/null)
	"$@" mcp login "$url" --timeout 20s \
		--client-metadata-url https://conformance-test.local/client-metadata.json \
		${client_id:+--client-id "$client_id"}
	"$@" mcp call "$url" test-tool
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
	echo "conformance-client.sh: scenario '${MCP_CONFORMANCE_SCENARIO:-}' is not supported" >&2
	exit 2
	;;
esac
