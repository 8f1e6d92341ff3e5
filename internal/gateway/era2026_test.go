package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"

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

// The Mcp-Param-* headers of a 2026-07-28 call of an upstream's tool are
// checked against its arguments (the x-mcp-header annotations of the
// upstream's input schema) before the call is relayed, as for Helix's own
// tools: a mismatch is refused with -32020 and does not reach the upstream.
func TestGatewayChecksParamHeadersOfUpstreamTools(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	a := startUpstream(t, "a", func(srv *sdk.Server) {
		srv.AddTool(&sdk.Tool{Name: "locate", InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				calls.Add(1)
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "found"}}}, nil
			})
	})
	comp, _ := gatewayServer(t, gateway.Options{Upstreams: []config.UpstreamConfig{{ID: "a", URL: a.url, Transport: "http"}}})
	post := func(region string) string {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a.locate","arguments":{"region":"us"},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},` +
			`"io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, "http://"+comp.Addr("gw").String()+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "a.locate")
		req.Header.Set("Mcp-Param-Region", region)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, b)
	}
	if got := post("eu"); !strings.Contains(got, "-32020") {
		t.Errorf("a mismatched Mcp-Param-Region header: %s", got)
	}
	if calls.Load() != 0 {
		t.Errorf("the refused call reached the upstream")
	}
	if got := post("us"); !strings.Contains(got, "found") {
		t.Errorf("a matching Mcp-Param-Region header: %s", got)
	}
}

// An upstream of 2026-07-28 answers a call with input requests (three at
// once, under its own ids): a 2026-07-28 client gets them under those ids and
// its retry's answers reach the upstream; a 2025-11-25 client is asked by
// requests on its session. The upstream sees the same answers either way.
func TestGatewayRelaysUpstreamInputRequests(t *testing.T) {
	t.Parallel()
	srv := sdk.NewServer(&sdk.Implementation{Name: "new", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "plan", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			r := req.Params.InputResponses
			if r == nil {
				return &sdk.CallToolResult{RequestState: "round-1", InputRequests: sdk.InputRequestMap{
					"user_name": &sdk.ElicitParams{Message: "name?", RequestedSchema: map[string]any{
						"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}},
					//lint:ignore SA1019 the test drives sampling through the gateway on purpose
					"summary": &sdk.CreateMessageParams{MaxTokens: 5, Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "sum"}}}},
					//lint:ignore SA1019 the test drives roots through the gateway on purpose
					"dirs": &sdk.ListRootsParams{},
				}}, nil
			}
			if req.Params.RequestState != "round-1" {
				return nil, fmt.Errorf("requestState %q", req.Params.RequestState)
			}
			b, _ := json.Marshal(r)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}, nil
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(hs.Close)
	comp, _ := gatewayServer(t, gateway.Options{Upstreams: []config.UpstreamConfig{{ID: "a", URL: hs.URL, Transport: "http"}}})
	answers := &sdk.ClientOptions{
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "neo"}}, nil
		},
		//lint:ignore SA1019 the test drives sampling through the gateway on purpose
		CreateMessageHandler: func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			//lint:ignore SA1019 the test drives sampling through the gateway on purpose
			return &sdk.CreateMessageResult{Role: "assistant", Model: "m1", Content: &sdk.TextContent{Text: "short"}}, nil
		},
	}
	// A 2026-07-28 client that answers by itself sees the upstream's ids.
	own := *answers
	own.MultiRoundTrip = &sdk.MultiRoundTripOptions{Disabled: true}
	raw := connect(t, comp, "/mcp", "", &own)
	first, err := raw.CallTool(testCtx(t), &sdk.CallToolParams{Name: "a.plan", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if ids := slices.Sorted(maps.Keys(first.InputRequests)); !first.NeedsInput() || first.RequestState == "" || !slices.Equal(ids, []string{"dirs", "summary", "user_name"}) {
		t.Errorf("input requests %v (needs input %v, state %q), want the upstream's ids dirs, summary, user_name", ids, first.NeedsInput(), first.RequestState)
	}
	for _, era := range []string{"", "2025-11-25"} {
		client := sdk.NewClient(&sdk.Implementation{Name: "client", Version: "1"}, answers)
		//lint:ignore SA1019 the test drives roots through the gateway on purpose
		client.AddRoots(&sdk.Root{URI: "file:///work"})
		cs, err := client.Connect(testCtx(t), &sdk.StreamableClientTransport{Endpoint: "http://" + comp.Addr("gw").String() + "/mcp", MaxRetries: -1},
			&sdk.ClientSessionOptions{ProtocolVersion: era})
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: "a.plan", Arguments: map[string]any{}})
		_ = cs.Close()
		if err != nil {
			t.Fatalf("era %q: %v", era, err)
		}
		got := text(res)
		for _, want := range []string{`"user_name":{"action":"accept","content":{"name":"neo"}}`, `"summary":{`, `"short"`, `"dirs":{"roots":[{"uri":"file:///work"}]}`} {
			if !strings.Contains(got, want) {
				t.Errorf("era %q: the upstream got %s, want %s in it", era, got, want)
			}
		}
	}
}
