package gateway_test

import (
	"context"

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

// An upstream's sampling request during a 2026-07-28 client's call comes to
// the client as an input request (its answer reaches the upstream on the
// retry), and so does an elicitation during a prompts/get.
func TestGatewayNewEraClientAnswersUpstreamSamplingAndPromptQuestions(t *testing.T) {
	t.Parallel()
	a := startUpstream(t, "a", func(srv *sdk.Server) {
		sdk.AddTool(srv, &sdk.Tool{Name: "think"}, func(ctx context.Context, req *sdk.CallToolRequest, _ echoArgs) (*sdk.CallToolResult, any, error) {
			//lint:ignore SA1019 the test drives sampling through the gateway on purpose
			res, err := req.Session.CreateMessage(ctx, &sdk.CreateMessageParams{MaxTokens: 10,
				//lint:ignore SA1019 the test drives sampling through the gateway on purpose
				Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "2+2?"}}}})
			if err != nil {
				return nil, nil, err
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: res.Model + ":" + res.Content.(*sdk.TextContent).Text}}}, nil, nil
		})
		srv.AddPrompt(&sdk.Prompt{Name: "ask"}, func(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			er, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "who?", RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
			if err != nil {
				return nil, err
			}
			return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "hello " + er.Content["name"].(string)}}}}, nil
		})
	})
	comp, _ := gatewayServer(t, gateway.Options{Upstreams: []config.UpstreamConfig{{ID: "a", URL: a.url, Transport: "http"}}})
	var samples int
	cs := connect(t, comp, "/mcp", "", &sdk.ClientOptions{
		//lint:ignore SA1019 the test drives sampling through the gateway on purpose
		CreateMessageHandler: func(_ context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			samples++
			//lint:ignore SA1019 the test drives sampling through the gateway on purpose
			return &sdk.CreateMessageResult{Role: "assistant", Model: "m1", Content: &sdk.TextContent{Text: "4 (" + req.Params.Messages[0].Content.(*sdk.TextContent).Text + ")"}}, nil
		},
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "neo"}}, nil
		},
	})
	ctx := testCtx(t)
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "a.think", Arguments: map[string]any{"text": ""}})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(res); got != "m1:4 (2+2?)" || samples != 1 {
		t.Errorf("result = %q (isError %v), %d samples", got, res.IsError, samples)
	}
	pr, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "a.ask"})
	if err != nil {
		t.Fatal(err)
	}
	if got := pr.Messages[0].Content.(*sdk.TextContent).Text; got != "hello neo" {
		t.Errorf("prompt = %q", got)
	}
}
