package gateway_test

import (
	"context"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
)

// askingUpstream offers ask, which asks the client for a name (elicitation)
// and answers "<action>:<name>".
func askingUpstream(t *testing.T) *fakeUpstream {
	t.Helper()
	return startUpstream(t, "a", func(srv *sdk.Server) {
		sdk.AddTool(srv, &sdk.Tool{Name: "ask"}, func(ctx context.Context, req *sdk.CallToolRequest, _ echoArgs) (*sdk.CallToolResult, any, error) {
			er, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "name?", RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
			if err != nil {
				return nil, nil, err
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: er.Action + ":" + er.Content["name"].(string)}}}, nil, nil
		})
	})
}

func TestGatewayNewEraClientAnswersUpstreamElicitation(t *testing.T) {
	t.Parallel()
	a := askingUpstream(t)
	comp, _ := gatewayServer(t, gateway.Options{Upstreams: []config.UpstreamConfig{{ID: "a", URL: a.url, Transport: "http"}}})
	cs := connect(t, comp, "/mcp", "", &sdk.ClientOptions{
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "neo"}}, nil
		},
	})
	res, err := cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: "a.ask", Arguments: map[string]any{"text": ""}})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(res); got != "accept:neo" {
		t.Errorf("result = %q (isError %v)", got, res.IsError)
	}
}

// TestGatewayAuditsACallStoppedOnAQuestion: a 2026-07-28 client's call that
// stops on a question it has yet to answer is audited as input_required (not
// as an error), and its retry with the answer as ok.
func TestGatewayAuditsACallStoppedOnAQuestion(t *testing.T) {
	t.Parallel()
	a := askingUpstream(t)
	rec := &recorder{}
	comp, _ := gatewayServer(t, gateway.Options{Auditor: rec, Upstreams: []config.UpstreamConfig{{ID: "a", URL: a.url, Transport: "http"}}})
	cs := connect(t, comp, "/mcp", "", &sdk.ClientOptions{
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "neo"}}, nil
		},
	})
	if _, err := cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: "a.ask", Arguments: map[string]any{"text": ""}}); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var got []string
	for _, r := range rec.recs {
		got = append(got, r.Outcome+" "+r.Error)
	}
	if len(got) != 2 || got[0] != gateway.OutcomeInputRequired+" " || got[1] != gateway.OutcomeOK+" " {
		t.Errorf("audit outcomes %q, want input_required (no error) then ok", got)
	}
}
