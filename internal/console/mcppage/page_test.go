package mcppage_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/console"
	"github.com/arvenza/helix/internal/console/mcppage"
)

type fakeSource struct{ servers []mcppage.Server }

func (f fakeSource) Servers() []mcppage.Server { return f.servers }
func (f fakeSource) Sessions(server string, max int) ([]mcppage.Session, int) {
	if server != "http1" {
		return nil, 0
	}
	all := []mcppage.Session{{ID: "s-1", Transport: "streamable", Protocol: "2025-11-25", Client: "inspector 1", Opened: time.Now()}}
	return all[:min(max, len(all))], len(all)
}

type greetArgs struct {
	Name string `json:"name"`
}

// upstream is a go-sdk server with a tool that reports progress and logs
// before answering, and one whose answer is larger than the form reads. It
// records the Authorization headers it receives.
func upstream(t *testing.T) (string, *atomic.Value, *atomic.Int32) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "up", Version: "1"}, &sdk.ServerOptions{})
	sdk.AddTool(srv, &sdk.Tool{Name: "greet"}, func(ctx context.Context, req *sdk.CallToolRequest, a greetArgs) (*sdk.CallToolResult, any, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "half way"})
		}
		//lint:ignore SA1019 MCP logging: what the try-it form shows
		_ = req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "info", Data: "greeting " + a.Name})
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Hello, " + a.Name + "!"}}}, nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "big"}, func(context.Context, *sdk.CallToolRequest, greetArgs) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Repeat("x", 3<<20)}}}, nil, nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	var auth atomic.Value
	auth.Store("")
	calls := &atomic.Int32{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("Authorization"); a != "" {
			auth.Store(a)
		}
		calls.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp", &auth, calls
}

func testConsole(t *testing.T) (*httptest.Server, *atomic.Value, *atomic.Int32) {
	t.Helper()
	u, auth, calls := upstream(t)
	schema := []byte(`{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"n":{"type":"integer"}}}`)
	src := fakeSource{servers: []mcppage.Server{
		{ID: "http1", Name: "http1", Transport: "http", URL: u, CallURL: u, Running: true, Auth: "API keys (1)",
			Admission: &mcppage.Admission{Limit: 8, Running: 3, Waiting: 1, Admitted: 40, Queued: 5, Refused: 2},
			Tools: []mcppage.Tool{
				{Name: "greet", Kind: "workflow", Workflow: "greet", Description: "<script>alert(1)</script>", Input: schema},
				{Name: "big", Kind: "workflow", Input: schema},
			}},
		{ID: "stdio1", Transport: "stdio", Running: true, Auth: "none", Tools: []mcppage.Tool{{Name: "greet", Input: schema}}},
	}}
	m := console.NewMux(console.Options{Pages: []console.Page{*mcppage.Page(src)},
		Auth: console.AuthenticatorFunc(func(r *http.Request) (console.Principal, error) {
			if r.Header.Get("X-Role") == "viewer" {
				return console.Principal{Name: "v", Role: console.RoleViewer}, nil
			}
			return console.Principal{Name: "op", Role: console.RoleOperator}, nil
		})})
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	return srv, auth, calls
}

func do(t *testing.T, method, u string, form url.Values, hdr ...string) (int, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, u, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		pu, _ := url.Parse(u)
		req.Header.Set("Origin", "http://"+pu.Host)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestPagesListServersToolsAndSessions(t *testing.T) {
	t.Parallel()
	srv, _, _ := testConsole(t)
	code, body := do(t, "GET", srv.URL+"/console/mcp", nil)
	if code != 200 || !strings.Contains(body, `href="/console/mcp/http1"`) || !strings.Contains(body, "API keys (1)") || !strings.Contains(body, "standard input/output") {
		t.Fatalf("/mcp: %d\n%s", code, body)
	}
	code, body = do(t, "GET", srv.URL+"/console/mcp/http1?page=-3&page=x", nil)
	if code != 200 || !strings.Contains(body, `href="/console/mcp/http1/tools/greet"`) || !strings.Contains(body, "s-1") ||
		!strings.Contains(body, "2025-11-25") || !strings.Contains(body, "Showing 1 of 1 open sessions") ||
		!strings.Contains(body, "3 of 8 running, 1 waiting; 40 admitted, 5 queued, 2 refused (server busy)") {
		t.Fatalf("/mcp/http1: %d\n%s", code, body)
	}
	if strings.Contains(body, "<script>alert(1)") || !strings.Contains(body, "&lt;script&gt;alert(1)") {
		t.Error("a tool's description is not escaped")
	}
	for _, p := range []string{"/console/mcp/nope", "/console/mcp/http1/tools/nope", "/console/mcp/%3Cb%3E"} {
		if code, body := do(t, "GET", srv.URL+p, nil); code != 404 || strings.Contains(body, "<b>") {
			t.Errorf("%s: %d %s", p, code, body)
		}
	}
}

func TestViewerSeesNoForm(t *testing.T) {
	t.Parallel()
	srv, _, calls := testConsole(t)
	code, body := do(t, "GET", srv.URL+"/console/mcp/http1/tools/greet", nil, "X-Role", "viewer")
	if code != 200 || strings.Contains(body, `id="tryit"`) || strings.Contains(body, "credential") || !strings.Contains(body, "needs the operator role") {
		t.Fatalf("viewer: %d\n%s", code, body)
	}
	if code, _ := do(t, "POST", srv.URL+"/console/mcp/http1/tools/greet", url.Values{"arg.name": {"Ada"}}, "X-Role", "viewer"); code != 403 {
		t.Errorf("viewer POST: %d", code)
	}
	if calls.Load() != 0 {
		t.Errorf("a viewer's POST reached the server")
	}
}

// Without JavaScript the form posts and the page comes back with the whole
// exchange, in order, the credential used but never shown.
func TestTryItWithoutJS(t *testing.T) {
	t.Parallel()
	srv, auth, _ := testConsole(t)
	const cred = "sekret-credential-0123456789"
	code, body := do(t, "POST", srv.URL+"/console/mcp/http1/tools/greet", url.Values{"arg.name": {"Ada"}, "credential": {cred}})
	if code != 200 {
		t.Fatalf("POST: %d\n%s", code, body)
	}
	if got := auth.Load().(string); got != "Bearer "+cred {
		t.Errorf("the server received Authorization %q", got)
	}
	if strings.Contains(body, cred) {
		t.Error("the page echoes the credential")
	}
	order := []string{"Status: <strong>ok</strong>", `<pre class="result">Hello, Ada!</pre>`, "initialize", "notifications/initialized",
		"logging/setLevel", "tools/call", "progressToken", "← progress", "half way", "← log", "greeting Ada", "← response", "Hello, Ada!"}
	at := 0
	for _, w := range order[2:] {
		i := strings.Index(body[at:], w)
		if i < 0 {
			t.Fatalf("%q missing or out of order after byte %d:\n%s", w, at, body)
		}
		at += i
	}
	for _, w := range order[:2] {
		if !strings.Contains(body, w) {
			t.Errorf("page lacks %q", w)
		}
	}
}

func TestTryItStreams(t *testing.T) {
	t.Parallel()
	srv, _, _ := testConsole(t)
	code, body := do(t, "POST", srv.URL+"/console/mcp/http1/tools/greet", url.Values{"arg.name": {"Bo"}}, "Accept", "text/event-stream")
	if code != 200 || !strings.Contains(body, "event: event\ndata: {") || !strings.Contains(body, `"kind":"progress"`) {
		t.Fatalf("stream: %d\n%s", code, body)
	}
	last := body[strings.LastIndex(body, "event: "):]
	if !strings.HasPrefix(last, "event: outcome\n") || !strings.Contains(last, `"Result":"Hello, Bo!"`) {
		t.Errorf("last event: %s", last)
	}
}

func TestTryItRefusesBadInputAndBoundsAnswers(t *testing.T) {
	t.Parallel()
	srv, _, calls := testConsole(t)
	code, body := do(t, "POST", srv.URL+"/console/mcp/http1/tools/greet", url.Values{"arg.name": {"Ada"}, "arg.n": {"1.5"}})
	if code != 400 || !strings.Contains(body, `field &#34;n&#34;: &#34;1.5&#34; is not an integer`) || calls.Load() != 0 {
		t.Errorf("bad integer: %d, %d calls\n%s", code, calls.Load(), body)
	}
	code, body = do(t, "POST", srv.URL+"/console/mcp/http1/tools/greet", url.Values{"arg.name": {"Ada"}, "arg.n": {"1.5"}}, "Accept", "text/event-stream")
	if code != 400 || !strings.Contains(body, `"error":`) {
		t.Errorf("bad integer, streamed: %d %s", code, body)
	}
	code, body = do(t, "POST", srv.URL+"/console/mcp/stdio1/tools/greet", url.Values{"arg.name": {"Ada"}})
	if code != 409 || !strings.Contains(body, "needs an HTTP server") {
		t.Errorf("stdio: %d\n%s", code, body)
	}
	code, _ = do(t, "POST", srv.URL+"/console/mcp/http1/tools/greet", url.Values{"arg.name": {strings.Repeat("x", 3<<20)}})
	if code != 400 {
		t.Errorf("a 3 MiB form: %d", code)
	}
	// A 3 MiB answer is cut at the read budget, and the page says so.
	code, body = do(t, "POST", srv.URL+"/console/mcp/http1/tools/big", url.Values{"arg.name": {"Ada"}})
	if code != 200 || len(body) > 512<<10 || !strings.Contains(body, "the answer was cut after 1048576 bytes") {
		t.Errorf("big answer: %d, %d bytes\n%s", code, len(body), body)
	}
}
