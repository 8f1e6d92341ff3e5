package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/arvenza/helix/internal/testtools"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// startContext starts hc with an mcp-server component holding servers, and stops it
// at cleanup.
func startContext(t *testing.T, hc *engine.Context, servers ...Options) *Component {
	t.Helper()
	comp := New(hc)
	hc.AddComponent("mcp-server", comp)
	for _, o := range servers {
		if err := comp.AddServer(o); err != nil {
			t.Fatal(err)
		}
	}
	if err := hc.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if err := hc.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return comp
}

func serverURL(t *testing.T, comp *Component, id, path string) string {
	t.Helper()
	a := comp.Addr(id)
	if a == nil {
		t.Fatalf("server %s has no address", id)
	}
	return "http://" + a.String() + path
}

func connectHTTP(t *testing.T, transport sdk.Transport) *sdk.ClientSession {
	t.Helper()
	return connectHTTPAt(t, transport, "")
}

// connectHTTPAt connects the go-sdk client speaking version ("": its default,
// 2026-07-28, which every server serves without a session).
func connectHTTPAt(t *testing.T, transport sdk.Transport, version string) *sdk.ClientSession {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "http-test", Version: "1.0.0"}, nil)
	cs, err := client.Connect(testCtx(t), transport, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// troubleWorkflows are a panicking, a failing and a slow workflow beside greet.
func troubleWorkflows(slowCancelled *atomic.Bool) []*engine.Workflow {
	return []*engine.Workflow{
		greetWorkflow(),
		{ID: "panics", FromURI: "direct://panics", Processors: step(func(context.Context, *exchange.Exchange) error {
			var m map[string]int
			//lint:ignore SA5000 the nil map write is the point: a real runtime panic, not a panic(value)
			m["x"] = 1
			return nil
		})},
		{ID: "fails", FromURI: "direct://fails", Processors: step(func(context.Context, *exchange.Exchange) error {
			return errors.New("database unavailable")
		})},
		{ID: "slow", FromURI: "direct://slow", Processors: step(func(ctx context.Context, ex *exchange.Exchange) error {
			select {
			case <-ctx.Done():
				slowCancelled.Store(true)
				return ctx.Err()
			case <-time.After(testTimeout):
				ex.In().SetBody("late")
				return nil
			}
		})},
	}
}

// exerciseTrouble calls the trouble workflows and checks that the server answers
// each properly and keeps serving; the slow call must be cancelled on the server
// once the client gives up.
func exerciseTrouble(t *testing.T, cs *sdk.ClientSession, slowCancelled *atomic.Bool) {
	t.Helper()
	slowCancelled.Store(false)
	res := callTool(t, cs, "panics", nil)
	if !res.IsError || !strings.Contains(resultText(t, res), "panic") {
		t.Fatalf("panics: %q", resultText(t, res))
	}
	res = callTool(t, cs, "fails", nil)
	if !res.IsError || !strings.Contains(resultText(t, res), "database unavailable") {
		t.Fatalf("fails: %q", resultText(t, res))
	}
	ctx, cancel := context.WithTimeout(testCtx(t), 300*time.Millisecond)
	_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "slow"})
	cancel()
	if err == nil {
		t.Fatal("slow: the client's deadline did not end the call")
	}
	if got := resultText(t, callTool(t, cs, "greet", map[string]any{"name": "Ada"})); got != "Hello, Ada!" {
		t.Fatalf("greet after trouble: %q", got)
	}
	deadline := time.Now().Add(testTimeout)
	for !slowCancelled.Load() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !slowCancelled.Load() {
		t.Fatal("the slow workflow was not cancelled when the client gave up")
	}
}

func TestStreamableHTTPStateful(t *testing.T) {
	t.Parallel()
	var slowCancelled atomic.Bool
	hc := newTestContext(t, troubleWorkflows(&slowCancelled)...)
	comp := startContext(t, hc, Options{ID: "s", Name: "my-tools", Addr: "127.0.0.1:0"})
	for _, path := range []string{"/mcp", "/", "/greet"} {
		t.Run(path, func(t *testing.T) {
			cs := connectHTTPAt(t, &sdk.StreamableClientTransport{Endpoint: serverURL(t, comp, "s", path), MaxRetries: -1}, "2025-11-25")
			if cs.ID() == "" {
				t.Fatal("stateful server gave no session id")
			}
			exerciseTrouble(t, cs, &slowCancelled)
		})
	}
	infos := comp.Servers()
	if len(infos) != 1 || !infos[0].Running || infos[0].Addr != comp.Addr("s").String() || len(infos[0].Tools) != 4 {
		t.Fatalf("Servers() = %+v", infos)
	}
}

func TestStreamableHTTPStateless(t *testing.T) {
	t.Parallel()
	var slowCancelled atomic.Bool
	hc := newTestContext(t, troubleWorkflows(&slowCancelled)...)
	comp := startContext(t, hc, Options{ID: "s", Addr: "127.0.0.1:0", Stateless: true})
	cs := connectHTTP(t, &sdk.StreamableClientTransport{Endpoint: serverURL(t, comp, "s", "/mcp"), MaxRetries: -1})
	exerciseTrouble(t, cs, &slowCancelled)

	// A stateless server hands out no session, and a GET stream is refused.
	resp := rawPost(t, serverURL(t, comp, "s", "/mcp"), "127.0.0.1", initializeBody)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("stateless initialize: %d session %q", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"))
	}
	get, err := http.Get(serverURL(t, comp, "s", "/mcp"))
	if err != nil {
		t.Fatal(err)
	}
	get.Body.Close()
	if get.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("stateless GET: %d", get.StatusCode)
	}
}

func TestSSETransport(t *testing.T) {
	t.Parallel()
	var slowCancelled atomic.Bool
	hc := newTestContext(t, troubleWorkflows(&slowCancelled)...)
	comp := startContext(t, hc,
		Options{ID: "sse-only", Transport: "sse", Addr: "127.0.0.1:0"},
		Options{ID: "http", Addr: "127.0.0.1:0"}, // serves SSE too, for old clients
	)
	for _, id := range []string{"sse-only", "http"} {
		t.Run(id, func(t *testing.T) {
			cs := connectHTTP(t, &sdk.SSEClientTransport{Endpoint: serverURL(t, comp, id, "/sse")})
			exerciseTrouble(t, cs, &slowCancelled)
		})
	}
	// The endpoint event points at the documented /message path.
	req, _ := http.NewRequestWithContext(testCtx(t), http.MethodGet, serverURL(t, comp, "sse-only", "/sse"), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 256)
	n, _ := io.ReadAtLeast(resp.Body, buf, len("event: endpoint\ndata: /message?sessionid="))
	if !strings.Contains(string(buf[:n]), "data: /message?sessionid=") {
		t.Fatalf("endpoint event %q", buf[:n])
	}
	// An SSE-only server does not speak Streamable HTTP.
	r := rawPost(t, serverURL(t, comp, "sse-only", "/mcp"), "127.0.0.1", initializeBody)
	if r.StatusCode != http.StatusNotFound {
		t.Fatalf("streamable on sse server: %d", r.StatusCode)
	}
}

func TestTwoServersTwoToolSets(t *testing.T) {
	t.Parallel()
	noop := step(func(context.Context, *exchange.Exchange) error { return nil })
	hc := newTestContext(t,
		greetWorkflow(),
		&engine.Workflow{ID: "debug-query", FromURI: "direct://debug-query", Processors: noop},
		&engine.Workflow{ID: "check-order", FromURI: "direct://check-order", Processors: noop},
	)
	comp := startContext(t, hc,
		Options{ID: "dev-tools", Addr: "127.0.0.1:0", Expose: []string{"debug-query", "greet"}},
		Options{ID: "customer-tools", Addr: "127.0.0.1:0", Expose: []string{"check-order"}},
	)
	if comp.Addr("dev-tools").String() == comp.Addr("customer-tools").String() {
		t.Fatal("both servers on one address")
	}
	for id, want := range map[string]string{"dev-tools": "debug_query,greet", "customer-tools": "check_order"} {
		cs := connectHTTP(t, &sdk.StreamableClientTransport{Endpoint: serverURL(t, comp, id, "/mcp"), MaxRetries: -1})
		if got := strings.Join(toolNamesOf(listTools(t, cs)), ","); got != want {
			t.Errorf("%s: tools %s, want %s", id, got, want)
		}
		if id == "customer-tools" {
			if _, err := cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: "greet"}); err == nil {
				t.Error("customer-tools answered a tool it does not expose")
			}
		}
	}
}

func TestWorkflowTriggeredServer(t *testing.T) {
	t.Parallel()
	// Spec §3.3: the server is a workflow whose trigger is mcp-server://.
	port := freePort(t)
	hc := newTestContext(t, greetWorkflow(), &engine.Workflow{
		ID:      "mcp-server",
		FromURI: fmt.Sprintf("mcp-server://127.0.0.1:%d?transport=http&name=my-tools&version=1.0.0", port),
	})
	comp := startContext(t, hc)
	id := fmt.Sprintf("mcp-server://127.0.0.1:%d", port)
	cs := connectHTTP(t, &sdk.StreamableClientTransport{Endpoint: serverURL(t, comp, id, "/mcp"), MaxRetries: -1})
	if info := cs.InitializeResult().ServerInfo; info.Name != "my-tools" || info.Version != "1.0.0" {
		t.Fatalf("server info %+v", info)
	}
	if got := strings.Join(toolNamesOf(listTools(t, cs)), ","); got != "greet" {
		t.Fatalf("tools %s (the server workflow must not be a tool)", got)
	}
	rr, err := cs.ReadResource(testCtx(t), &sdk.ReadResourceParams{URI: WorkflowsResourceURI})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rr.Contents[0].Text, `"state": "Started"`) {
		t.Fatalf("resource %s", rr.Contents[0].Text)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	return testtools.FreePort(t)
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func rawPost(t *testing.T, url, host, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func TestDNSRebindingProtection(t *testing.T) {
	t.Parallel()
	hc := newTestContext(t, greetWorkflow())
	comp := startContext(t, hc, Options{ID: "s", Addr: "127.0.0.1:0"})
	url := serverURL(t, comp, "s", "/mcp")
	port := comp.Addr("s").(*net.TCPAddr).Port
	for host, want := range map[string]int{
		"evil.example.com":                       http.StatusForbidden,
		fmt.Sprintf("evil.example.com:%d", port): http.StatusForbidden,
		fmt.Sprintf("localhost:%d", port):        http.StatusOK,
		fmt.Sprintf("127.0.0.1:%d", port):        http.StatusOK,
	} {
		if got := rawPost(t, url, host, initializeBody).StatusCode; got != want {
			t.Errorf("Host %s: status %d, want %d", host, got, want)
		}
	}
}

func TestHTTPMiddlewareWrapsServer(t *testing.T) {
	t.Parallel()
	hc := newTestContext(t, greetWorkflow())
	comp := startContext(t, hc, Options{ID: "s", Addr: "127.0.0.1:0", HTTPMiddleware: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-API-Key") != "k" {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}})
	if got := rawPost(t, serverURL(t, comp, "s", "/mcp"), "127.0.0.1", initializeBody).StatusCode; got != http.StatusUnauthorized {
		t.Fatalf("without key: %d", got)
	}
}

func TestStdioServerAndDone(t *testing.T) {
	t.Parallel()
	hc := newTestContext(t, greetWorkflow())
	inR, inW := io.Pipe()   // client → server
	outR, outW := io.Pipe() // server → client
	comp := startContext(t, hc, Options{ID: "stdio", Transport: "stdio", Stdin: inR, Stdout: outW})
	if comp.Addr("stdio") != nil {
		t.Fatal("stdio server has an address")
	}
	cs := connectHTTP(t, &sdk.IOTransport{Reader: outR, Writer: inW})
	if got := resultText(t, callTool(t, cs, "greet", map[string]any{"name": "Ada"})); got != "Hello, Ada!" {
		t.Fatalf("greet: %q", got)
	}
	select {
	case <-comp.Done():
		t.Fatal("Done closed while the client is connected")
	default:
	}
	_ = cs.Close() // closes the server's stdin
	select {
	case <-comp.Done():
	case <-time.After(testTimeout):
		t.Fatal("Done not closed after stdin ended")
	}
}

func TestStdioWritesOnlyProtocol(t *testing.T) {
	t.Parallel()
	// Everything the server writes on its stdout must be JSON-RPC: one JSON object
	// per line, nothing else (logs go elsewhere).
	hc := newTestContext(t, greetWorkflow())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	comp := startContext(t, hc, Options{ID: "io", Transport: "stdio", Stdin: inR, Stdout: outW})
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	t.Cleanup(func() { _ = outR.Close() })
	send := func(msg string) {
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next := func() string {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("server output ended")
			}
			if !json.Valid([]byte(l)) || !strings.HasPrefix(l, `{"jsonrpc":"2.0"`) {
				t.Fatalf("non-protocol output line %q", l)
			}
			return l
		case <-time.After(testTimeout):
			t.Fatal("no output from server")
			return ""
		}
	}
	send(initializeBody)
	if l := next(); !strings.Contains(l, `"id":1`) {
		t.Fatalf("initialize reply %s", l)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}`)
	if l := next(); !strings.Contains(l, `Hello, Ada!`) {
		t.Fatalf("call reply %s", l)
	}
	_ = inW.Close()
	select {
	case <-comp.Done():
	case <-time.After(testTimeout):
		t.Fatal("server did not notice the end of its input")
	}
}

func TestStopWaitsForRunningCallsAndRefusesNewOnes(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	release := make(chan struct{})
	hc := newTestContext(t, greetWorkflow(), &engine.Workflow{ID: "busy", FromURI: "direct://busy",
		Processors: step(func(ctx context.Context, ex *exchange.Exchange) error {
			close(entered)
			<-release
			ex.In().SetBody("finished")
			return nil
		})})
	comp := New(hc)
	hc.AddComponent("mcp-server", comp)
	// Served by a trigger, so it stops with the consumers, before the drain.
	if err := hc.AddWorkflow(&engine.Workflow{ID: "srv", FromURI: "mcp-server://127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	if err := hc.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	// Without the standalone GET stream: the server ends that stream when it closes
	// the session at stop, and the go-sdk client then fails every pending call, even
	// one whose answer is already in its socket buffer (a client-side race).
	cs := connectHTTP(t, &sdk.StreamableClientTransport{Endpoint: serverURL(t, comp, "mcp-server://127.0.0.1:0", "/mcp"),
		MaxRetries: -1, DisableStandaloneSSE: true})
	type outcome struct {
		res *sdk.CallToolResult
		err error
	}
	busy := make(chan outcome, 1)
	go func() {
		res, err := cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: "busy"})
		busy <- outcome{res, err}
	}()
	<-entered
	stopped := make(chan error, 1)
	go func() { stopped <- hc.Stop(testCtx(t)) }()

	// While stopping, a new call on the open session is refused with a tool error
	// (or the connection is already gone); it never runs the workflow.
	deadline := time.Now().Add(testTimeout)
	for {
		res, err := cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: "greet"})
		if err != nil || (res.IsError && strings.Contains(resultText(t, res), "shutting down")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("calls still accepted while stopping")
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	o := <-busy
	if o.err != nil || o.res.IsError || resultText(t, o.res) != "finished" {
		t.Fatalf("running call: %v %+v", o.err, o.res)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("stop: %v", err)
	}
	if comp.Addr("mcp-server://127.0.0.1:0") != nil {
		t.Fatal("server still registered after stop")
	}
}
