package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/gateway/upstream"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/engine"
)

// stdioUpstreamEnv makes the test binary the stdio upstream of these tests.
const stdioUpstreamEnv = "HELIX_GATEWAY_TEST_STDIO_UPSTREAM"

func TestMain(m *testing.M) {
	if os.Getenv(stdioUpstreamEnv) == "1" {
		if err := stdioUpstream().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "stdio upstream:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type workArgs struct {
	Text     string `json:"text"`
	Group    string `json:"group"`    // calls of one group meet (see meet)
	Together int    `json:"together"` // how many calls the group has
	Ask      bool   `json:"ask"`
}

// stdioUpstream serves work (progress, a log message, an elicitation when
// asked, its text back), pid (the process id) and later (a log message after
// its result).
func stdioUpstream() *sdk.Server {
	// A legacy stateful server: it asks its client with requests of its own.
	srv := sdk.NewServer(&sdk.Implementation{Name: "stdio-upstream", Version: "1"},
		&sdk.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25", "2025-06-18"}})
	// Each group's calls meet twice: once all have started (so that all are
	// in flight when the first speaks) and once all have spoken.
	var mu sync.Mutex
	met := map[string]int{}
	meet := func(group string, n int) {
		mu.Lock()
		met[group]++
		mu.Unlock()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
			mu.Lock()
			done := met[group] >= n
			mu.Unlock()
			if done {
				return
			}
		}
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "work"}, func(ctx context.Context, req *sdk.CallToolRequest, a workArgs) (*sdk.CallToolResult, any, error) {
		meet(a.Group+"/started", a.Together)
		if tok := req.Params.GetProgressToken(); tok != nil {
			_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Message: "progress of " + a.Text})
		}
		//lint:ignore SA1019 MCP logging: what the gateway relays
		_ = req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "info", Data: "log of " + a.Text})
		answer := ""
		if a.Ask {
			r, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "who? " + a.Text,
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
			if err != nil {
				answer = " elicitation failed: " + err.Error()
			} else {
				answer = fmt.Sprintf(" %s %v", r.Action, r.Content["name"])
			}
		}
		meet(a.Group+"/spoken", a.Together)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "result of " + a.Text + answer}}}, nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "pid"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(os.Getpid())}}}, nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "later"}, func(_ context.Context, req *sdk.CallToolRequest, a workArgs) (*sdk.CallToolResult, any, error) {
		go func() {
			time.Sleep(50 * time.Millisecond)
			//lint:ignore SA1019 MCP logging: what the gateway relays
			_ = req.Session.Log(context.Background(), &sdk.LoggingMessageParams{Level: "info", Data: "later of " + a.Text})
		}()
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil, nil
	})
	return srv
}

// syncBuffer is a log the gateway writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// stdioGateway serves the test binary's stdio upstream with the given
// sessions mode through upstream.Pool; callers are named by their X-User header.
func stdioGateway(t *testing.T, sessions string) (*mcpserver.Component, *gateway.Gateway, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	u := config.UpstreamConfig{ID: "local", Transport: config.UpstreamStdio, Command: os.Args[0], Args: []string{"-test.run=^$"},
		Env: map[string]string{stdioUpstreamEnv: "1"}, Sessions: sessions, Health: config.HealthConfig{Interval: -1}}
	g, err := gateway.New(gateway.Options{ServerID: "gw", Upstreams: []config.UpstreamConfig{u}, Logger: logger,
		NewPool: func(u config.UpstreamConfig, _ *http.Client) (gateway.Pool, error) {
			return upstream.New(u, nil, logger)
		},
		Principal: func(_ context.Context, h http.Header) *gateway.Principal {
			return &gateway.Principal{ID: h.Get("X-User"), Name: h.Get("X-User")}
		}})
	if err != nil {
		t.Fatal(err)
	}
	hc := engine.NewContext("gw")
	hc.SetLogger(slog.New(slog.DiscardHandler))
	comp := mcpserver.New(hc)
	hc.AddComponent("mcp-server", comp)
	if err := comp.AddServer(mcpserver.Options{ID: "gw", Addr: "127.0.0.1:0", Extension: g}); err != nil {
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
	return comp, g, logs
}

// userHeader names the caller of every request.
type userHeader struct{ user string }

func (u userHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-User", u.user)
	return http.DefaultTransport.RoundTrip(r)
}

// heard is what one client received.
type heard struct {
	mu       sync.Mutex
	progress []string
	logs     []string
	asked    []string
}

func (h *heard) all() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.progress, ",") + "|" + strings.Join(h.logs, ",") + "|" + strings.Join(h.asked, ",")
}

// client connects user to the gateway, at log level info.
func client(t *testing.T, comp *mcpserver.Component, user string) (*sdk.ClientSession, *heard) {
	t.Helper()
	h := &heard{}
	opts := &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			h.mu.Lock()
			h.progress = append(h.progress, req.Params.Message)
			h.mu.Unlock()
		},
		//lint:ignore SA1019 MCP logging: what the gateway relays
		LoggingMessageHandler: func(_ context.Context, req *sdk.LoggingMessageRequest) {
			h.mu.Lock()
			h.logs = append(h.logs, fmt.Sprint(req.Params.Data))
			h.mu.Unlock()
		},
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			h.mu.Lock()
			h.asked = append(h.asked, req.Params.Message)
			h.mu.Unlock()
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": user}}, nil
		},
	}
	tr := &sdk.StreamableClientTransport{Endpoint: "http://" + comp.Addr("gw").String() + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: userHeader{user}}}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: user, Version: "1"}, opts).Connect(testCtx(t), tr, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	//lint:ignore SA1019 MCP logging: what the gateway relays
	if err := cs.SetLoggingLevel(testCtx(t), &sdk.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	return cs, h
}

func work(t *testing.T, cs *sdk.ClientSession, group, text string, together int, ask bool) string {
	t.Helper()
	p := &sdk.CallToolParams{Name: "local.work", Arguments: map[string]any{"group": group, "text": text, "together": together, "ask": ask}}
	p.SetProgressToken("tok-" + text)
	res, err := cs.CallTool(testCtx(t), p)
	if err != nil {
		t.Errorf("work %s: %v", text, err)
		return ""
	}
	return text0(res)
}

func text0(res *sdk.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*sdk.TextContent); ok {
		return tc.Text
	}
	return ""
}

// Two HTTP clients share one stdio upstream session (one process): each
// hears only its own progress, log messages and results; an elicitation
// while both call is refused with the hint, and while one calls reaches it.
func TestSharedStdioUpstreamKeepsClientsApart(t *testing.T) {
	t.Parallel()
	comp, g, gwLog := stdioGateway(t, config.SessionsShared)
	ann, annHeard := client(t, comp, "ann")
	bob, bobHeard := client(t, comp, "bob")

	// One call in flight: its log message and elicitation reach its client.
	if got := work(t, ann, "0", "a0", 1, true); got != "result of a0 accept ann" {
		t.Errorf("ann's lone call = %q", got)
	}
	// Its log message and question reach her. (Its progress may not: over stdio
	// the go-sdk hands a progress notification to the gateway apart from the
	// result, and one handled after the call ended has no call to go to.)
	testtools.Eventually(t, "ann hears her lone call", func() bool {
		all := annHeard.all()
		return strings.Contains(all, "log of a0") && strings.Contains(all, "who? a0")
	})

	// Both in flight at once, without questions: each gets its own result and progress.
	var wg sync.WaitGroup
	results := make([]string, 2)
	for i, c := range []*sdk.ClientSession{ann, bob} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = work(t, c, "1", []string{"a1", "b1"}[i], 2, false)
		}()
	}
	wg.Wait()
	if results[0] != "result of a1" || results[1] != "result of b1" {
		t.Errorf("results = %q", results)
	}

	// Both in flight, both asking: neither client is asked, the upstream is told how to fix it.
	for i, c := range []*sdk.ClientSession{ann, bob} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = work(t, c, "2", []string{"a2", "b2"}[i], 2, true)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if !strings.Contains(r, "elicitation failed") || !strings.Contains(r, "sessions: per-client") {
			t.Errorf("result %d = %q, want the elicitation refused with the sessions: hint", i, r)
		}
	}
	if !strings.Contains(gwLog.String(), "upstream request refused") {
		t.Errorf("the refusal is not in the gateway's log:\n%s", gwLog.String())
	}

	// A log message after the call belongs to no one client on a shared session.
	if _, err := ann.CallTool(testCtx(t), &sdk.CallToolParams{Name: "local.later", Arguments: map[string]any{"text": "a3"}}); err != nil {
		t.Fatal(err)
	}
	testtools.Eventually(t, "the later log message in the gateway's log", func() bool {
		return strings.Contains(gwLog.String(), "not sent to any client")
	})

	annAll, bobAll := annHeard.all(), bobHeard.all()
	if strings.Contains(annAll, "b1") || strings.Contains(annAll, "b2") || strings.Contains(annAll, "log of a1") ||
		strings.Contains(annAll, "log of a2") || strings.Contains(annAll, "who? a2") || strings.Contains(annAll, "a3") {
		t.Errorf("ann heard what is not hers alone: %s", annAll)
	}
	if strings.Contains(bobAll, "a1") || strings.Contains(bobAll, "a2") || strings.Contains(bobAll, "log of b") || strings.Contains(bobAll, "who?") {
		t.Errorf("bob heard what is not his alone: %s", bobAll)
	}
	if st := g.Status().Upstreams[0]; st.Sessions != 1 {
		t.Errorf("shared: %d upstream sessions open, want 1", st.Sessions)
	}
}

// With sessions: per-principal each caller has a process of its own.
func TestPerPrincipalStdioProcessesStayApart(t *testing.T) {
	t.Parallel()
	comp, g, _ := stdioGateway(t, config.SessionsPerPrincipal)
	pid := func(cs *sdk.ClientSession) string {
		res, err := cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: "local.pid"})
		if err != nil {
			t.Fatal(err)
		}
		return text0(res)
	}
	ann1, _ := client(t, comp, "ann")
	ann2, _ := client(t, comp, "ann")
	bob, _ := client(t, comp, "bob")
	a1, a2, b := pid(ann1), pid(ann2), pid(bob)
	if a1 != a2 || a1 == b || b == "" {
		t.Errorf("pids: ann %s and %s, bob %s; want ann's the same and bob's another", a1, a2, b)
	}
	if st := g.Status().Upstreams[0]; st.Sessions != 3 { // the discovery session's, ann's, bob's
		t.Errorf("per-principal: %d upstream sessions open, want 3", st.Sessions)
	}
}

// With sessions: per-client a client's upstream session (its process) closes
// when the client's session ends, not when the pool finds it idle.
func TestPerClientUpstreamSessionReleasedWithItsClient(t *testing.T) {
	t.Parallel()
	comp, g, _ := stdioGateway(t, config.SessionsPerClient)
	ann, _ := client(t, comp, "ann")
	bob, _ := client(t, comp, "bob")
	for _, c := range []*sdk.ClientSession{ann, bob} {
		if _, err := c.CallTool(testCtx(t), &sdk.CallToolParams{Name: "local.pid"}); err != nil {
			t.Fatal(err)
		}
	}
	sessions := func() int { return g.Status().Upstreams[0].Sessions }
	if n := sessions(); n != 3 { // discovery's, ann's, bob's
		t.Fatalf("%d upstream sessions open, want 3", n)
	}
	_ = ann.Close() // DELETE of the downstream session
	testtools.Eventually(t, "ann's upstream session closed", func() bool { return sessions() == 2 })
	if _, err := bob.CallTool(testCtx(t), &sdk.CallToolParams{Name: "local.pid"}); err != nil {
		t.Errorf("bob after ann left: %v", err)
	}
}
