package gateway_test

import (
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
)

// A 2026-07-28 client's completion reaches an upstream that speaks an
// earlier protocol: the gateway does not forward the client's protocol
// version (_meta) to the upstream, whose session negotiated its own.
func TestGatewayNewEraCompletionReachesLegacyUpstream(t *testing.T) {
	t.Parallel()
	a := startUpstream(t, "a", echoServer)
	comp, _ := gatewayServer(t, gateway.Options{Upstreams: []config.UpstreamConfig{{ID: "a", URL: a.url, Transport: "http"}}})
	cs := connect(t, comp, "/mcp", "", nil)
	cr, err := cs.Complete(testCtx(t), &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: "a.greet"},
		Argument: sdk.CompleteParamsArgument{Name: "who", Value: "b"}})
	if err != nil || len(cr.Completion.Values) == 0 || cr.Completion.Values[0] != "greet:bx" {
		t.Fatalf("completion = %+v, %v", cr, err)
	}
}
