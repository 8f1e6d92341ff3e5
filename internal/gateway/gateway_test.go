package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testtools.StartupBound)
	t.Cleanup(cancel)
	return ctx
}

// fakeUpstream is an in-process go-sdk MCP server over Streamable HTTP.
type fakeUpstream struct {
	srv   *sdk.Server
	url   string
	inits atomic.Int32 // sessions opened (initialize requests)
	subs  atomic.Int32 // resources/subscribe requests
}

func startUpstream(t *testing.T, name string, setup func(*sdk.Server)) *fakeUpstream {
	t.Helper()
	up := &fakeUpstream{}
	srv := sdk.NewServer(&sdk.Implementation{Name: name, Version: "1"}, &sdk.ServerOptions{
		SubscribeHandler:   func(context.Context, *sdk.SubscribeRequest) error { up.subs.Add(1); return nil },
		UnsubscribeHandler: func(context.Context, *sdk.UnsubscribeRequest) error { return nil },
		CompletionHandler: func(_ context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
			return &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{
				Values: []string{req.Params.Ref.Name + req.Params.Ref.URI + ":" + req.Params.Argument.Value + "x"}}}, nil
		},
	})
	setup(srv)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	up.srv = srv
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		if strings.Contains(string(b), `"method":"initialize"`) {
			up.inits.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	up.url = hs.URL
	return up
}

type echoArgs struct {
	Text string `json:"text"`
}

// echoServer offers echo (text back, with structured content and _meta),
// fail (isError), broken (a JSON-RPC error), slow (progress, logs, elicitation,
// sampling, and waits for cancellation when asked), a prompt and resources.
func echoServer(srv *sdk.Server) {
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "echo back"}, func(_ context.Context, _ *sdk.CallToolRequest, a echoArgs) (*sdk.CallToolResult, map[string]any, error) {
		return &sdk.CallToolResult{Meta: sdk.Meta{"upstream": "yes"}, Content: []sdk.Content{
			&sdk.TextContent{Text: "echo:" + a.Text}, &sdk.ImageContent{Data: []byte{1, 2}, MIMEType: "image/png"}}}, map[string]any{"said": a.Text}, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "fail"}, func(context.Context, *sdk.CallToolRequest, echoArgs) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "it failed"}}}, nil, nil
	})
	srv.AddTool(&sdk.Tool{Name: "broken", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: -32042, Message: "broken on purpose"}
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "delete_all"}, func(context.Context, *sdk.CallToolRequest, echoArgs) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{}, nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "slow"}, func(ctx context.Context, req *sdk.CallToolRequest, a echoArgs) (*sdk.CallToolResult, any, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "half"})
		}
		//lint:ignore SA1019 MCP logging is what is relayed
		_ = req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "info", Logger: "up", Data: "working on " + a.Text})
		var out []string
		if a.Text == "ask" {
			er, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "your name?", RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
			if err != nil {
				return nil, nil, err
			}
			out = append(out, er.Action+":"+er.Content["name"].(string))
			//lint:ignore SA1019 MCP sampling is what is relayed
			sr, err := req.Session.CreateMessage(ctx, &sdk.CreateMessageParams{MaxTokens: 5, Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "hi"}}}})
			if err != nil {
				return nil, nil, err
			}
			out = append(out, sr.Content.(*sdk.TextContent).Text)
		}
		if a.Text == "wait" {
			<-ctx.Done() // the behaviour under test: only a cancellation ends this call
			cancelled <- struct{}{}
			return nil, nil, ctx.Err()
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Join(append(out, "done"), " ")}}}, nil, nil
	})
	srv.AddPrompt(&sdk.Prompt{Name: "greet", Arguments: []*sdk.PromptArgument{{Name: "who"}}}, func(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "hello " + req.Params.Arguments["who"]}}}}, nil
	})
	srv.AddResource(&sdk.Resource{URI: "memo://a", Name: "a", MIMEType: "text/plain"}, func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, Text: "content of a"}}}, nil
	})
	srv.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: "memo://items/{id}", Name: "item"}, func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, Text: "item " + req.Params.URI}}}, nil
	})
}

var cancelled = make(chan struct{}, 4)

// recorder is an Auditor that keeps the records.
type recorder struct {
	mu   sync.Mutex
	recs []gateway.Record
}

func (r *recorder) Record(_ context.Context, rec *gateway.Record) {
	r.mu.Lock()
	r.recs = append(r.recs, *rec)
	r.mu.Unlock()
}
func (r *recorder) Close(context.Context) error { return nil }
func (r *recorder) outcomes() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := map[string]string{}
	for _, rec := range r.recs {
		m[rec.Name] = rec.Outcome
	}
	return m
}

// gatewayServer starts a Helix MCP server with one own tool (greet) and a
// gateway in front of the upstreams.
func gatewayServer(t *testing.T, opts gateway.Options, audiences ...mcpserver.Audience) (*mcpserver.Component, *gateway.Gateway) {
	t.Helper()
	hc := engine.NewContext("gw")
	hc.SetLogger(slog.New(slog.DiscardHandler))
	if err := hc.AddWorkflow(&engine.Workflow{ID: "greet", Description: "Greet", FromURI: "direct://greet",
		Processors: []engine.Processor{engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
			ex.In().SetBody("hi from helix")
			return nil
		})}}); err != nil {
		t.Fatal(err)
	}
	opts.ServerID = "gw"
	opts.Logger = slog.New(slog.DiscardHandler)
	g, err := gateway.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return serveGateway(t, hc, g, mcpserver.Options{Audiences: audiences}), g
}

// serveGateway starts hc with an MCP server "gw" on a free port whose
// Extension is g (server holds the other options), stopped when the test ends.
func serveGateway(t *testing.T, hc *engine.Context, g *gateway.Gateway, server mcpserver.Options) *mcpserver.Component {
	t.Helper()
	comp := mcpserver.New(hc)
	hc.AddComponent("mcp-server", comp)
	server.ID, server.Addr, server.Extension = "gw", "127.0.0.1:0", g
	if err := comp.AddServer(server); err != nil {
		t.Fatal(err)
	}
	if err := hc.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := hc.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return comp
}

func connect(t *testing.T, comp *mcpserver.Component, path, version string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	tr := &sdk.StreamableClientTransport{Endpoint: "http://" + comp.Addr("gw").String() + path, MaxRetries: -1}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "client", Version: "1"}, opts).Connect(testCtx(t), tr, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func toolNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	var out []string
	for tool, err := range cs.Tools(testCtx(t), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tool.Name)
	}
	sort.Strings(out)
	return out
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func str(s string) *string { return &s }

func TestGatewayServesTwoUpstreamsBesideHelixTools(t *testing.T) {
	t.Parallel()
	a := startUpstream(t, "a", echoServer)
	b := startUpstream(t, "b", func(srv *sdk.Server) {
		sdk.AddTool(srv, &sdk.Tool{Name: "echo"}, func(_ context.Context, _ *sdk.CallToolRequest, a echoArgs) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "b:" + a.Text}}}, nil, nil
		})
	})
	rec := &recorder{}
	comp, g := gatewayServer(t, gateway.Options{Auditor: rec, Upstreams: []config.UpstreamConfig{
		{ID: "a", URL: a.url, Transport: "http", Exclude: []string{"delete_*"}},
		{ID: "b", URL: b.url, Transport: "http", Prefix: str("bee_")},
	}})
	for _, version := range []string{"2025-11-25", ""} { // a legacy session and 2026-07-28
		t.Run("version "+version, func(t *testing.T) {
			cs := connect(t, comp, "/mcp", version, nil)
			want := []string{"a.broken", "a.echo", "a.fail", "a.slow", "bee_echo", "greet"}
			if got := toolNames(t, cs); !slices.Equal(got, want) {
				t.Fatalf("tools = %v, want %v", got, want)
			}
			res, err := cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: "a.echo", Arguments: map[string]any{"text": "hi"}})
			if err != nil {
				t.Fatal(err)
			}
			// Verbatim: every content, structuredContent, _meta.
			if text(res) != "echo:hi" || len(res.Content) != 2 || res.Meta["upstream"] != "yes" || res.IsError {
				t.Errorf("result = %+v", res)
			}
			if sc, _ := json.Marshal(res.StructuredContent); string(sc) != `{"said":"hi"}` {
				t.Errorf("structuredContent = %s", sc)
			}
			if img, ok := res.Content[1].(*sdk.ImageContent); !ok || img.MIMEType != "image/png" || len(img.Data) != 2 {
				t.Errorf("image = %#v", res.Content[1])
			}
			res, err = cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: "bee_echo", Arguments: map[string]any{"text": "x"}})
			if err != nil || text(res) != "b:x" {
				t.Fatalf("bee_echo = %v, %v", res, err)
			}
			res, err = cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: "greet", Arguments: map[string]any{}})
			if err != nil || text(res) != "hi from helix" {
				t.Fatalf("greet = %v, %v", res, err)
			}
			res, err = cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: "a.fail", Arguments: map[string]any{"text": "f"}})
			if err != nil || !res.IsError || text(res) != "it failed" {
				t.Fatalf("fail = %q %v, %v", text(res), res, err)
			}
			_, err = cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: "a.broken", Arguments: map[string]any{}})
			var werr *jsonrpc.Error
			if !errors.As(err, &werr) || werr.Code != -32042 || werr.Message != "broken on purpose" {
				t.Fatalf("broken: %v", err)
			}
			if _, err := cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: "a.delete_all", Arguments: map[string]any{}}); err == nil {
				t.Fatal("an excluded tool was called")
			}
		})
	}
	// One session for discovery (and 2026-07-28 calls), one for the legacy client.
	if n := a.inits.Load(); n != 2 {
		t.Errorf("upstream a saw %d sessions, want 2", n)
	}
	out := rec.outcomes()
	if out["a.echo"] != gateway.OutcomeOK || out["a.fail"] != gateway.OutcomeToolError || out["a.broken"] != gateway.OutcomeError {
		t.Errorf("audit outcomes = %v", out)
	}
	st := g.Status()
	if len(st.Upstreams) != 2 || !st.Upstreams[0].Reached || st.Upstreams[0].Tools != 4 || st.Upstreams[1].Tools != 1 {
		t.Errorf("status = %+v", st)
	}
}

func TestGatewayRelaysProgressLoggingElicitationSamplingAndCancel(t *testing.T) {
	t.Parallel()
	a := startUpstream(t, "a", echoServer)
	comp, _ := gatewayServer(t, gateway.Options{Upstreams: []config.UpstreamConfig{{ID: "a", URL: a.url, Transport: "http"}}})
	var mu sync.Mutex
	var progress []string
	var logs []string
	cs := connect(t, comp, "/mcp", "2025-11-25", &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params.Message+":"+req.Params.ProgressToken.(string))
			mu.Unlock()
		},
		//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still relayed for clients that use it
		LoggingMessageHandler: func(_ context.Context, req *sdk.LoggingMessageRequest) {
			mu.Lock()
			logs = append(logs, req.Params.Data.(string))
			mu.Unlock()
		},
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "ann:" + req.Params.Message}}, nil
		},
		//lint:ignore SA1019 MCP sampling: deprecated in protocol 2026-07-28, still relayed for clients that use it
		CreateMessageHandler: func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			//lint:ignore SA1019 MCP sampling: deprecated in protocol 2026-07-28, still relayed for clients that use it
			return &sdk.CreateMessageResult{Model: "m", Role: "assistant", Content: &sdk.TextContent{Text: "sampled"}}, nil
		},
	})
	//lint:ignore SA1019 MCP logging is what is relayed
	if err := cs.SetLoggingLevel(testCtx(t), &sdk.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	params := &sdk.CallToolParams{Name: "a.slow", Arguments: map[string]any{"text": "ask"}}
	params.SetProgressToken("my-token")
	res, err := cs.CallTool(testCtx(t), params)
	if err != nil {
		t.Fatal(err)
	}
	if got := text(res); got != "accept:ann:your name? sampled done" {
		t.Errorf("result = %q", got)
	}
	testtools.Eventually(t, "progress and log relayed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(progress, "half:my-token") && slices.Contains(logs, "working on ask")
	})

	// A cancelled call cancels the upstream's.
	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "a.slow", Arguments: map[string]any{"text": "wait"}})
		done <- err
	}()
	testtools.Eventually(t, "the slow call logs", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(logs, "working on wait")
	})
	cancel()
	select {
	case <-cancelled:
	case <-testCtx(t).Done():
		t.Fatal("the upstream call was not cancelled")
	}
	<-done
}

func TestGatewayPromptsResourcesCompletionAndSubscriptions(t *testing.T) {
	t.Parallel()
	a := startUpstream(t, "a", echoServer)
	comp, _ := gatewayServer(t, gateway.Options{Upstreams: []config.UpstreamConfig{{ID: "a", URL: a.url, Transport: "http"}}})
	updated := make(chan string, 1)
	cs := connect(t, comp, "/mcp", "2025-11-25", &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) { updated <- req.Params.URI },
	})
	ctx := testCtx(t)
	pr, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "a.greet", Arguments: map[string]string{"who": "bob"}})
	if err != nil || pr.Messages[0].Content.(*sdk.TextContent).Text != "hello bob" {
		t.Fatalf("prompt = %+v, %v", pr, err)
	}
	rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "memo://a"})
	if err != nil || rr.Contents[0].Text != "content of a" {
		t.Fatalf("resource = %+v, %v", rr, err)
	}
	rr, err = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "memo://items/7"})
	if err != nil || rr.Contents[0].Text != "item memo://items/7" {
		t.Fatalf("template = %+v, %v", rr, err)
	}
	cr, err := cs.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: "a.greet"},
		Argument: sdk.CompleteParamsArgument{Name: "who", Value: "b"}})
	if err != nil || cr.Completion.Values[0] != "greet:bx" { // the upstream saw its own name
		t.Fatalf("completion = %+v, %v", cr, err)
	}
	cr, err = cs.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/resource", URI: "memo://items/{id}"},
		Argument: sdk.CompleteParamsArgument{Name: "id", Value: "1"}})
	if err != nil || cr.Completion.Values[0] != "memo://items/{id}:1x" {
		t.Fatalf("template completion = %+v, %v", cr, err)
	}
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "memo://a"}); err != nil {
		t.Fatal(err)
	}
	if err := a.srv.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: "memo://a"}); err != nil {
		t.Fatal(err)
	}
	select {
	case uri := <-updated:
		if uri != "memo://a" {
			t.Errorf("updated %s", uri)
		}
	case <-ctx.Done():
		t.Fatal("no resources/updated relayed")
	}
}

func TestGatewayPropagatesListChanged(t *testing.T) {
	t.Parallel()
	a := startUpstream(t, "a", echoServer)
	comp, _ := gatewayServer(t, gateway.Options{Upstreams: []config.UpstreamConfig{{ID: "a", URL: a.url, Transport: "http"}}})
	changed := make(chan struct{}, 8)
	cs := connect(t, comp, "/mcp", "2025-11-25", &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})
	sdk.AddTool(a.srv, &sdk.Tool{Name: "added"}, func(context.Context, *sdk.CallToolRequest, echoArgs) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "new"}}}, nil, nil
	})
	select {
	case <-changed:
	case <-testCtx(t).Done():
		t.Fatal("no list_changed reached the client")
	}
	testtools.Eventually(t, "a.added listed", func() bool { return slices.Contains(toolNames(t, cs), "a.added") })
	a.srv.RemoveTools("echo")
	testtools.Eventually(t, "a.echo gone", func() bool { return !slices.Contains(toolNames(t, cs), "a.echo") })
}

func TestGatewayAudiencesSeeTheirSubsets(t *testing.T) {
	t.Parallel()
	a := startUpstream(t, "a", echoServer)
	comp, _ := gatewayServer(t, gateway.Options{Upstreams: []config.UpstreamConfig{{ID: "a", URL: a.url, Transport: "http"}}},
		mcpserver.Audience{Path: "/mcp/support", Names: []string{"a.echo", "greet"}},
		mcpserver.Audience{Path: "/mcp/admin", Names: []string{"*"}})
	support := connect(t, comp, "/mcp/support", "2025-11-25", nil)
	if got := toolNames(t, support); !slices.Equal(got, []string{"a.echo", "greet"}) {
		t.Errorf("support sees %v", got)
	}
	if _, err := support.CallTool(testCtx(t), &sdk.CallToolParams{Name: "a.fail", Arguments: map[string]any{}}); err == nil {
		t.Error("support called a tool outside its audience")
	}
	if res, err := support.CallTool(testCtx(t), &sdk.CallToolParams{Name: "a.echo", Arguments: map[string]any{"text": "s"}}); err != nil || text(res) != "echo:s" {
		t.Errorf("support echo = %v, %v", res, err)
	}
	admin := connect(t, comp, "/mcp/admin", "", nil)
	if got := toolNames(t, admin); len(got) != 6 {
		t.Errorf("admin sees %v", got)
	}
	all := connect(t, comp, "/mcp", "", nil)
	if got := toolNames(t, all); len(got) != 6 {
		t.Errorf("/mcp sees %v", got)
	}
	// A session of /mcp/support cannot be used through /mcp.
	sid := support.ID()
	req, _ := http.NewRequest(http.MethodPost, "http://"+comp.Addr("gw").String()+"/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body strings.Builder
	_, _ = io.Copy(&body, resp.Body)
	resp.Body.Close()
	if !strings.Contains(body.String(), "another endpoint") {
		t.Errorf("a support session through /mcp answered %s", body.String())
	}
}

func TestGatewayNameClashStopsTheStart(t *testing.T) {
	t.Parallel()
	a := startUpstream(t, "a", echoServer)
	hc := engine.NewContext("clash")
	hc.SetLogger(slog.New(slog.DiscardHandler))
	if err := hc.AddWorkflow(&engine.Workflow{ID: "echo", FromURI: "direct://echo",
		Processors: []engine.Processor{engine.ProcessorFunc(func(context.Context, *exchange.Exchange) error { return nil })}}); err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(gateway.Options{ServerID: "gw", Logger: slog.New(slog.DiscardHandler),
		Upstreams: []config.UpstreamConfig{{ID: "a", URL: a.url, Transport: "http", Prefix: str("")}}})
	if err != nil {
		t.Fatal(err)
	}
	comp := mcpserver.New(hc)
	hc.AddComponent("mcp-server", comp)
	if err := comp.AddServer(mcpserver.Options{ID: "gw", Addr: "127.0.0.1:0", Extension: g}); err != nil {
		t.Fatal(err)
	}
	err = hc.Start(testCtx(t))
	if err == nil {
		_ = hc.Stop(context.Background())
		t.Fatal("the server started with a clash")
	}
	if !strings.Contains(err.Error(), `"echo"`) || !strings.Contains(err.Error(), "workflow echo") || !strings.Contains(err.Error(), "upstream a") {
		t.Errorf("error = %v", err)
	}
}

// A session that replaces a lost one gets the subscriptions the lost one held.
func TestGatewayReopenedSessionResubscribes(t *testing.T) {
	t.Parallel()
	a := startUpstream(t, "a", echoServer)
	comp, g := gatewayServer(t, gateway.Options{Upstreams: []config.UpstreamConfig{{ID: "a", URL: a.url, Transport: "http", Sessions: config.SessionsShared}}})
	cs := connect(t, comp, "/mcp", "2025-11-25", nil)
	if err := cs.Subscribe(testCtx(t), &sdk.SubscribeParams{URI: "memo://a"}); err != nil {
		t.Fatal(err)
	}
	if n := a.subs.Load(); n != 1 {
		t.Fatalf("upstream subscriptions = %d", n)
	}
	fresh, err := sdk.NewClient(&sdk.Implementation{Name: "x", Version: "1"}, nil).Connect(testCtx(t),
		&sdk.StreamableClientTransport{Endpoint: a.url, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	g.Reopened("a")(gateway.SessionKey{}, fresh)
	if n := a.subs.Load(); n != 2 {
		t.Fatalf("upstream subscriptions after the reopen = %d, want 2", n)
	}
}
