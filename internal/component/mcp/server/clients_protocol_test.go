package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	mcpgotransport "github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/testtools"
)

// Real MCP client libraries against the helix binary, on the protocol of today
// (2026-07-28): the go-sdk (v1.8.0) and mcp-go (v1.2.1) over stdio, SSE and
// Streamable HTTP (stateful and stateless). Each client connects with its defaults,
// must end up on 2026-07-28, and calls a workflow with an elicit step and one with
// a sample step. On 2026-07-28 a server asks the client by answering the call with
// an input_required result (SEP-2322) that the client fulfils with its handlers and
// retries; the tests record what each client received and require such a round,
// and no server-to-client elicitation/create or sampling/createMessage request
// (the mechanism of the earlier protocol versions).

const todaysProtocol = "2026-07-28"

// clientsWorkflows are the tools of the application: signup asks the user for a
// name, summarize asks the client's model for a summary.
const clientsWorkflows = `
workflows:
  - id: signup
    description: "Signs a user up, asking for the name"
    trigger: direct://signup
    steps:
      - elicit:
          message: "Sign up ${body.who}"
          timeout: 60s
          schema:
            properties:
              username: { type: string, description: "Your name", minLength: 2 }
            required: [username]
      - transform:
          starlang: |
            "%s %s" % (header("HelixElicitAction"), payload["username"])
  - id: summarize
    description: "Summarizes a document with the client's model"
    trigger: direct://summarize
    steps:
      - sample:
          prompt: "Summarize ${body.doc}"
          max_tokens: 50
          timeout: 60s
      - transform:
          starlang: |
            "%s (%s)" % (payload, header("HelixSampleModel"))
`

// clientsNetworkServers serves the workflows over Streamable HTTP (stateful, the
// default), SSE and stateless Streamable HTTP, each on its own port.
const clientsNetworkServers = `
helix:
  mcp:
    servers:
      - { enabled: true, transport: http, addr: "127.0.0.1:%d", name: clients-http }
      - { enabled: true, transport: sse, addr: "127.0.0.1:%d", name: clients-sse }
      - { enabled: true, transport: http, addr: "127.0.0.1:%d", name: clients-stateless, stateless: true }
`

const clientsStdioServer = `
helix:
  mcp:
    servers:
      - { enabled: true, transport: stdio, name: clients-stdio }
`

// clientsApp writes the application with servers into a temporary file.
func clientsApp(t *testing.T, servers string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "clients.yaml")
	if err := os.WriteFile(file, []byte(servers+clientsWorkflows), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// clientsNetwork runs `helix mcp serve` with the network servers and returns their
// base URLs by transport name (http, sse, http-stateless). At cleanup it sends
// SIGTERM and requires a clean exit (a data race in a -race binary exits 66).
func clientsNetwork(t *testing.T) map[string]string {
	t.Helper()
	ports := []int{testtools.FreePort(t), testtools.FreePort(t), testtools.FreePort(t)}
	file := clientsApp(t, fmt.Sprintf(clientsNetworkServers, ports[0], ports[1], ports[2]))
	cmd := exec.Command(testtools.HelixBinary(t), "mcp", "serve", file)
	logs := &testtools.SyncBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
			if waitErr != nil {
				t.Errorf("helix mcp serve: %v\n%s", waitErr, logs.String())
			}
		case <-time.After(testtools.StartupBound):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("helix mcp serve did not stop on SIGTERM\n%s", logs.String())
		}
	})
	urls := map[string]string{}
	for i, name := range []string{"http", "sse", "http-stateless"} {
		addr := fmt.Sprintf("127.0.0.1:%d", ports[i])
		testtools.WaitForProcessTCP(t, addr, exited, logs.String)
		urls[name] = "http://" + addr
	}
	return urls
}

// stdioCommand is `helix mcp serve` of the stdio application, for a client to
// start as its subprocess.
func stdioCommand(t *testing.T) *exec.Cmd {
	t.Helper()
	return exec.Command(testtools.HelixBinary(t), "mcp", "serve", clientsApp(t, clientsStdioServer))
}

// wire records the bytes a client received from the server (stdout of a stdio
// server, response bodies and event streams over HTTP) or, for the go-sdk, the
// lines of its LoggingTransport.
type wire struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *wire) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *wire) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// received returns the JSON-RPC messages of the recording that came from the
// server, in order: one per line, after an SSE "data:" or a LoggingTransport
// "read:" prefix; batches are flattened; the client's own messages ("write:")
// and anything that is no JSON object (event names, ids) are left out.
func (w *wire) received() []map[string]json.RawMessage {
	var msgs []map[string]json.RawMessage
	sc := bufio.NewScanner(strings.NewReader(w.String()))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "write:") {
			continue
		}
		for _, p := range []string{"data:", "read:"} {
			line = strings.TrimSpace(strings.TrimPrefix(line, p))
		}
		var one map[string]json.RawMessage
		if json.Unmarshal([]byte(line), &one) == nil {
			msgs = append(msgs, one)
			continue
		}
		var batch []map[string]json.RawMessage
		if json.Unmarshal([]byte(line), &batch) == nil {
			msgs = append(msgs, batch...)
		}
	}
	return msgs
}

// rounds sums up what the server sent: the methods of its requests to the client
// and the methods asked for by input_required results.
type rounds struct {
	serverRequests []string // methods of server-to-client requests
	inputRequests  []string // methods inside input_required results' inputRequests
}

func (w *wire) rounds() rounds {
	var r rounds
	for _, m := range w.received() {
		var method string
		if _, isCall := m["id"]; isCall && json.Unmarshal(m["method"], &method) == nil && method != "" {
			r.serverRequests = append(r.serverRequests, method)
			continue
		}
		var res struct {
			ResultType    string `json:"resultType"`
			InputRequests map[string]struct {
				Method string `json:"method"`
			} `json:"inputRequests"`
		}
		if json.Unmarshal(m["result"], &res) != nil || res.ResultType != "input_required" {
			continue
		}
		for _, ir := range res.InputRequests {
			r.inputRequests = append(r.inputRequests, ir.Method)
		}
	}
	return r
}

// recordingRoundTripper tees every response body into received and every
// request body, one per line, into sent; each request is preceded in sent by a
// line "> METHOD path" with the MCP headers it carried.
type recordingRoundTripper struct {
	received, sent *wire
}

// mcpHeaders are the request headers the HTTP transports of MCP define.
var mcpHeaders = []string{"Mcp-Protocol-Version", "Mcp-Session-Id", "Mcp-Method", "Mcp-Name", "Last-Event-Id"}

func (rt recordingRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	line := "> " + r.Method + " " + r.URL.RequestURI()
	for _, h := range mcpHeaders {
		if v := r.Header.Get(h); v != "" {
			line += " " + h + "=" + v
		}
	}
	_, _ = rt.sent.Write([]byte(line + "\n"))
	if r.Body != nil && r.Method == http.MethodPost {
		body, err := io.ReadAll(r.Body)
		_ = r.Body.Close()
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		_, _ = rt.sent.Write(append(bytes.TrimSpace(body), '\n'))
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	_, _ = rt.received.Write([]byte("< " + resp.Status + " " + resp.Header.Get("Content-Type") + "\n"))
	resp.Body = &teeBody{body: resp.Body, to: rt.received}
	return resp, nil
}

// methods returns the JSON-RPC methods of the requests and notifications the
// client sent, in order, from a recording of its messages one per line (a
// LoggingTransport's "write:" lines when prefix is "write:").
func (w *wire) methods(prefix string) []string {
	var methods []string
	sc := bufio.NewScanner(strings.NewReader(w.String()))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), prefix)
		if !ok {
			continue
		}
		var m struct {
			Method string `json:"method"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Method != "" {
			methods = append(methods, m.Method)
		}
	}
	return methods
}

// writeRecorder is a stdio client's stdin that records what the client wrote.
type writeRecorder struct {
	io.WriteCloser
	sent *wire
}

func (w writeRecorder) Write(p []byte) (int, error) {
	_, _ = w.sent.Write(p)
	return w.WriteCloser.Write(p)
}

// teeBody copies a response body into a recording as it is read, and ends it
// with a newline so that the next body starts a line of its own.
type teeBody struct {
	body  io.ReadCloser
	to    *wire
	ended bool
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	_, _ = b.to.Write(p[:n])
	if err != nil && !b.ended {
		b.ended = true
		_, _ = b.to.Write([]byte("\n"))
	}
	return n, err
}

func (b *teeBody) Close() error { return b.body.Close() }

// asked counts the client's handler invocations and keeps what they were asked.
// With badName the user answers a name too short for the form.
type asked struct {
	badName                 bool
	elicitations, samplings atomic.Int32
	mu                      sync.Mutex
	messages                []string // elicitation messages and sampling prompts
}

func (a *asked) note(s string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.messages = append(a.messages, s)
}

// name is the user's answer to the form.
func (a *asked) name() string {
	if a.badName {
		return "A" // the form wants at least two characters
	}
	return answeredName
}

func (a *asked) all() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.messages)
}

// A protocolClient is one client library connected to Helix.
type protocolClient interface {
	// version is the protocol version the client negotiated.
	version() string
	// sentMethods are the JSON-RPC methods the client sent, in order.
	sentMethods() []string
	// sent is the record of what the client sent, for failure messages.
	sent() string
	call(ctx context.Context, tool string, args map[string]any) (text string, isError bool, err error)
}

// The clients' handlers answer the same way: the user "Ada" accepts, the model
// "m1" answers "short".
const (
	answeredName  = "Ada"
	answeredModel = "m1"
	answeredText  = "short"
)

// goSDKClient connects the go-sdk's client, with its defaults, over transport.
type goSDKClient struct {
	cs   *sdk.ClientSession
	log  *wire // the LoggingTransport's record of both directions
	http *wire // the HTTP requests (with their headers) of the SSE and HTTP transports
}

// connectFunc connects a client library over transport (a key of urls, or
// "stdio"), pinned to protocol version pin unless pin is "", with handlers that
// count into a (none when a is nil: the client declares neither capability), and
// records what it received in w.
type connectFunc func(t *testing.T, ctx context.Context, transport, pin string, urls map[string]string, a *asked, w *wire) protocolClient

func connectGoSDK(t *testing.T, ctx context.Context, transport, pin string, urls map[string]string, a *asked, w *wire) protocolClient {
	t.Helper()
	c := &goSDKClient{log: w, http: &wire{}}
	stderr := &testtools.SyncBuffer{} // helix's log, over stdio
	hc := &http.Client{Transport: recordingRoundTripper{received: &wire{}, sent: c.http}}
	var tr sdk.Transport
	switch transport {
	case "stdio":
		cmd := stdioCommand(t)
		cmd.Stderr = stderr
		tr = &sdk.CommandTransport{Command: cmd}
	case "sse":
		tr = &sdk.SSEClientTransport{Endpoint: urls["sse"] + "/sse", HTTPClient: hc}
	default:
		tr = &sdk.StreamableClientTransport{Endpoint: urls[transport] + "/mcp", HTTPClient: hc, MaxRetries: -1}
	}
	opts := &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			a.elicitations.Add(1)
			a.note(req.Params.Message)
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"username": a.name()}}, nil
		},
		//lint:ignore SA1019 tests MCP sampling (the sample step), deprecated in protocol 2026-07-28 but still supported
		CreateMessageHandler: func(_ context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			a.samplings.Add(1)
			if len(req.Params.Messages) > 0 {
				if tc, ok := req.Params.Messages[0].Content.(*sdk.TextContent); ok {
					a.note(tc.Text)
				}
			}
			//lint:ignore SA1019 tests MCP sampling (the sample step), deprecated in protocol 2026-07-28 but still supported
			return &sdk.CreateMessageResult{Role: "assistant", Content: &sdk.TextContent{Text: answeredText}, Model: answeredModel, StopReason: "endTurn"}, nil
		},
	}
	if a == nil { // a client without handlers declares neither capability
		opts = nil
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "helix-clients-test", Version: "1.0.0"}, opts)
	var session *sdk.ClientSessionOptions
	if pin != "" {
		session = &sdk.ClientSessionOptions{ProtocolVersion: pin}
	}
	cs, err := client.Connect(ctx, &sdk.LoggingTransport{Transport: tr, Writer: w}, session)
	if err != nil {
		t.Fatalf("go-sdk over %s: connect: %v", transport, err)
	}
	t.Cleanup(func() {
		// Over stdio Close closes helix's stdin and returns how it exited (a data
		// race in a -race binary exits 66).
		if err := cs.Close(); err != nil && transport == "stdio" {
			t.Errorf("helix over stdio: %v\n%s", err, stderr.String())
		}
	})
	c.cs = cs
	return c
}

func (c *goSDKClient) version() string {
	if r := c.cs.InitializeResult(); r != nil {
		return r.ProtocolVersion
	}
	return ""
}

func (c *goSDKClient) sentMethods() []string { return c.log.methods("write: ") }

func (c *goSDKClient) sent() string { return c.http.String() }

func (c *goSDKClient) call(ctx context.Context, tool string, args map[string]any) (string, bool, error) {
	res, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", false, err
	}
	var b strings.Builder
	for _, part := range res.Content {
		if tc, ok := part.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError, nil
}

// mcpGoClient connects mark3labs/mcp-go's client, with its defaults, over
// transport.
type mcpGoClient struct {
	c   *mcpgoclient.Client
	out *wire // the client's messages, one per line
}

type mcpGoHandlers struct{ a *asked }

func (h mcpGoHandlers) Elicit(_ context.Context, req mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
	h.a.elicitations.Add(1)
	h.a.note(req.Params.Message)
	return &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{
		Action: mcpgo.ElicitationResponseActionAccept, Content: map[string]any{"username": h.a.name()},
	}}, nil
}

func (h mcpGoHandlers) CreateMessage(_ context.Context, req mcpgo.CreateMessageRequest) (*mcpgo.CreateMessageResult, error) {
	h.a.samplings.Add(1)
	if len(req.Messages) > 0 {
		// mcp-go leaves a decoded message's content as it came (a JSON object):
		// read its text through JSON whatever Go type it has.
		var text struct {
			Text string `json:"text"`
		}
		if b, err := json.Marshal(req.Messages[0].Content); err == nil && json.Unmarshal(b, &text) == nil {
			h.a.note(text.Text)
		}
	}
	return &mcpgo.CreateMessageResult{
		SamplingMessage: mcpgo.SamplingMessage{Role: mcpgo.RoleAssistant, Content: mcpgo.NewTextContent(answeredText)},
		Model:           answeredModel, StopReason: "endTurn",
	}, nil
}

func connectMcpGo(t *testing.T, ctx context.Context, transport, pin string, urls map[string]string, a *asked, w *wire) protocolClient {
	t.Helper()
	c := &mcpGoClient{out: &wire{}}
	var tr mcpgotransport.Interface
	switch transport {
	case "stdio":
		// The client reads the server's stdout through the recording.
		cmd := stdioCommand(t)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		logs := &testtools.SyncBuffer{}
		cmd.Stderr = logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		t.Cleanup(func() {
			_ = stdin.Close() // a stdio server stops when its client closes stdin
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("helix over stdio: %v\n%s", err, logs.String())
				}
			case <-time.After(testtools.StartupBound):
				_ = cmd.Process.Kill()
				<-exited
				t.Errorf("helix over stdio did not stop when stdin closed\n%s", logs.String())
			}
		})
		tr = mcpgotransport.NewIO(io.TeeReader(stdout, w), writeRecorder{WriteCloser: stdin, sent: c.out}, nil)
	case "sse":
		rt := recordingRoundTripper{received: w, sent: c.out}
		sse, err := mcpgotransport.NewSSE(urls["sse"]+"/sse", mcpgotransport.WithHTTPClient(&http.Client{Transport: rt}))
		if err != nil {
			t.Fatal(err)
		}
		tr = sse
	default:
		rt := recordingRoundTripper{received: w, sent: c.out}
		h, err := mcpgotransport.NewStreamableHTTP(urls[transport]+"/mcp", mcpgotransport.WithHTTPBasicClient(&http.Client{Transport: rt}))
		if err != nil {
			t.Fatal(err)
		}
		tr = h
	}
	var opts []mcpgoclient.ClientOption
	if pin != "" {
		opts = append(opts, mcpgoclient.WithProtocolVersion(pin))
	}
	if a != nil { // a client without handlers declares neither capability
		h := mcpGoHandlers{a: a}
		opts = append(opts, mcpgoclient.WithElicitationHandler(h), mcpgoclient.WithSamplingHandler(h))
	}
	c.c = mcpgoclient.NewClient(tr, opts...)
	if err := c.c.Start(ctx); err != nil {
		t.Fatalf("mcp-go over %s: start: %v", transport, err)
	}
	t.Cleanup(func() { _ = c.c.Close() })
	init := mcpgo.InitializeRequest{}
	init.Params.ClientInfo = mcpgo.Implementation{Name: "helix-clients-test", Version: "1.0.0"}
	if _, err := c.c.Initialize(ctx, init); err != nil {
		t.Fatalf("mcp-go over %s: initialize: %v", transport, err)
	}
	return c
}

func (c *mcpGoClient) version() string { return c.c.ProtocolVersion() }

func (c *mcpGoClient) sentMethods() []string { return c.out.methods("") }

func (c *mcpGoClient) sent() string { return c.out.String() }

func (c *mcpGoClient) call(ctx context.Context, tool string, args map[string]any) (string, bool, error) {
	req := mcpgo.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := c.c.CallTool(ctx, req)
	if err != nil {
		return "", false, err
	}
	var b strings.Builder
	for _, part := range res.Content {
		if tc, ok := part.(mcpgo.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError, nil
}

var clientLibraries = map[string]connectFunc{"go-sdk": connectGoSDK, "mcp-go": connectMcpGo}

// TestClientsOnTodaysProtocol is the matrix: every client library × transport
// negotiates 2026-07-28, elicits and samples through the workflows, and received
// input_required results, not server-to-client requests.
func TestClientsOnTodaysProtocol(t *testing.T) {
	t.Parallel()
	urls := clientsNetwork(t)
	for _, name := range []string{"go-sdk", "mcp-go"} {
		for _, transport := range []string{"stdio", "sse", "http", "http-stateless"} {
			t.Run(name+"/"+transport, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), 2*testtools.StartupBound)
				defer cancel()
				var a asked
				w := &wire{}
				c := clientLibraries[name](t, ctx, transport, "", urls, &a, w)
				if v := c.version(); v != todaysProtocol {
					t.Errorf("negotiated protocol version %q, want %s (client sent %v)", v, todaysProtocol, c.sentMethods())
				}
				if sent := c.sentMethods(); len(sent) == 0 || sent[0] != "server/discover" || slices.Contains(sent, "initialize") {
					t.Errorf("client sent %v: want server/discover first and no initialize on %s", sent, todaysProtocol)
				}

				text, isErr, err := c.call(ctx, "signup", map[string]any{"who": "Bob"})
				if err != nil || isErr || text != "accept "+answeredName {
					t.Errorf("signup: %q (error result %v, err %v), want %q", text, isErr, err, "accept "+answeredName)
				}
				text, isErr, err = c.call(ctx, "summarize", map[string]any{"doc": "the report"})
				if want := answeredText + " (" + answeredModel + ")"; err != nil || isErr || text != want {
					t.Errorf("summarize: %q (error result %v, err %v), want %q", text, isErr, err, want)
				}
				if e, s := a.elicitations.Load(), a.samplings.Load(); e != 1 || s != 1 {
					t.Errorf("the client's handlers ran %d elicitation(s) and %d sampling(s), want one each", e, s)
				}
				if got := a.all(); !slices.Equal(got, []string{"Sign up Bob", "Summarize the report"}) {
					t.Errorf("the handlers were asked %q", got)
				}
				r := w.rounds()
				if len(r.serverRequests) != 0 {
					t.Errorf("the server sent requests to the client %v: on %s it must ask with input_required results", r.serverRequests, todaysProtocol)
				}
				if !slices.Equal(r.inputRequests, []string{"elicitation/create", "sampling/createMessage"}) {
					t.Errorf("input_required results asked for %v, want one elicitation/create, then one sampling/createMessage", r.inputRequests)
				}
				// Each call took one round: the call, then its retry with the answer.
				if sent := c.sentMethods(); countOf(sent, "tools/call") != 4 {
					t.Errorf("client sent %v: want each of the two calls sent twice (the call, then its retry with the answer)", sent)
				}
				if strings.HasPrefix(transport, "http") {
					checkSessionlessPOSTs(t, c.sent())
				}
				// A client of the same library without handlers declared no
				// capability: the calls fail, saying which capability is missing.
				bare := clientLibraries[name](t, ctx, transport, "", urls, nil, &wire{})
				for tool, capability := range map[string]string{"signup": "elicitation", "summarize": "sampling"} {
					text, isErr, err := bare.call(ctx, tool, map[string]any{"who": "Bob", "doc": "the report"})
					if err == nil || !strings.Contains(err.Error(), capability) {
						t.Errorf("%s from a client without the %s capability: %q (error result %v, err %v), want an error naming %s",
							tool, capability, text, isErr, err, capability)
					}
				}
				// A user whose answer does not fit the form: the call fails saying
				// which field breaks which rule (the go-sdk checks the answer
				// before it sends it, Helix refuses mcp-go's with -32602).
				wrong := clientLibraries[name](t, ctx, transport, "", urls, &asked{badName: true}, &wire{})
				text, isErr, err = wrong.call(ctx, "signup", map[string]any{"who": "Bob"})
				if err == nil || !strings.Contains(err.Error(), "/properties/username") || !strings.Contains(err.Error(), "minLength") {
					t.Errorf("signup answered with a one-letter name: %q (error result %v, err %v), want an error naming username and minLength", text, isErr, err)
				}
				// HELIX_TEST_CLIENTS_DUMP=1 shows the whole conversation of every cell.
				if t.Failed() || os.Getenv("HELIX_TEST_CLIENTS_DUMP") != "" {
					t.Logf("received:\n%s\nsent:\n%s", w.String(), c.sent())
				}
			})
		}
	}
}

func countOf(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}

// checkSessionlessPOSTs requires of a Streamable HTTP client on 2026-07-28 (from
// the "> METHOD path headers" lines of its recording) that every request is a
// POST naming the protocol version in Mcp-Protocol-Version and no session: the
// server serves it sessionless.
func checkSessionlessPOSTs(t *testing.T, sent string) {
	t.Helper()
	requests := 0
	for line := range strings.Lines(sent) {
		if !strings.HasPrefix(line, "> ") {
			continue
		}
		requests++
		if !strings.HasPrefix(line, "> POST /mcp ") || !strings.Contains(line, " Mcp-Protocol-Version="+todaysProtocol) || strings.Contains(line, "Mcp-Session-Id=") {
			t.Errorf("request %s: want a POST with Mcp-Protocol-Version %s and no Mcp-Session-Id", strings.TrimSpace(line), todaysProtocol)
		}
	}
	if requests == 0 {
		t.Error("no HTTP request was recorded")
	}
}

// tsClientReport is what testdata/ts_client_2025.mjs prints.
type tsClientReport struct {
	ProtocolVersion string   `json:"protocolVersion"`
	Signup          string   `json:"signup"`
	SignupError     bool     `json:"signupError"`
	Summarize       string   `json:"summarize"`
	SummarizeError  bool     `json:"summarizeError"`
	Asked           []string `json:"asked"`
	Sent            []string `json:"sent"`
	ServerRequests  []string `json:"serverRequests"`
	InputRequired   int      `json:"inputRequired"`
}

// TestTypeScriptClientOn20251125: the TypeScript SDK's client, whose newest
// protocol is 2025-11-25, keeps eliciting and sampling through the same servers
// the way that protocol asks: with elicitation/create and sampling/createMessage
// requests from the server, never an input_required result it could not read.
// (A stateless server cannot send such requests, so it is not in this list.)
func TestTypeScriptClientOn20251125(t *testing.T) {
	t.Parallel()
	node := testtools.Node(t)
	esm := "file://" + filepath.ToSlash(filepath.Join(testtools.NPMPackageDir(t, "@modelcontextprotocol/sdk"), "dist", "esm"))
	script, err := filepath.Abs(filepath.Join("testdata", "ts_client_2025.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	urls := clientsNetwork(t)
	stdio := stdioCommand(t)
	for transport, target := range map[string][]string{
		"http":  {urls["http"] + "/mcp"},
		"sse":   {"sse+" + urls["sse"] + "/sse"},
		"stdio": stdio.Args,
	} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*testtools.StartupBound)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, append([]string{script, esm}, target...)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("TypeScript client over %s: %v\nstdout: %s\nstderr: %s", transport, err, stdout.String(), stderr.String())
			}
			var r tsClientReport
			if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
				t.Fatalf("TypeScript client over %s printed %q: %v\nstderr: %s", transport, stdout.String(), err, stderr.String())
			}
			if r.ProtocolVersion != "2025-11-25" {
				t.Errorf("negotiated %q, want 2025-11-25", r.ProtocolVersion)
			}
			if len(r.Sent) < 2 || r.Sent[0] != "initialize" || r.Sent[1] != "notifications/initialized" || slices.Contains(r.Sent, "server/discover") {
				t.Errorf("the client sent %v: want initialize, notifications/initialized and no server/discover", r.Sent)
			}
			if r.Signup != "accept "+answeredName || r.SignupError {
				t.Errorf("signup: %q (error result %v)", r.Signup, r.SignupError)
			}
			if want := answeredText + " (" + answeredModel + ")"; r.Summarize != want || r.SummarizeError {
				t.Errorf("summarize: %q (error result %v), want %q", r.Summarize, r.SummarizeError, want)
			}
			if !slices.Equal(r.Asked, []string{"Sign up Bob", "Summarize the report"}) {
				t.Errorf("the handlers were asked %q", r.Asked)
			}
			if !slices.Equal(r.ServerRequests, []string{"elicitation/create", "sampling/createMessage"}) || r.InputRequired != 0 {
				t.Errorf("received server requests %v and %d input_required results: a 2025-11-25 client must be asked with one elicitation/create and one sampling/createMessage request",
					r.ServerRequests, r.InputRequired)
			}
		})
	}
}

// TestClientsPinnedTo20251125: the same libraries pinned to 2025-11-25 use
// initialize and are asked with elicitation/create and sampling/createMessage
// requests, never an input_required result. A stateless server cannot send
// requests, so it is not in this list; nor is mcp-go over SSE, whose SSE
// transport (v1.2.1) implements no server-to-client requests at all: it drops
// elicitation/create and sampling/createMessage, and the call waits until the
// step's timeout (docs/mcp-server.md, "Clients on 2026-07-28").
func TestClientsPinnedTo20251125(t *testing.T) {
	t.Parallel()
	urls := clientsNetwork(t)
	for _, name := range []string{"go-sdk", "mcp-go"} {
		for _, transport := range []string{"stdio", "sse", "http"} {
			if name == "mcp-go" && transport == "sse" {
				continue
			}
			t.Run(name+"/"+transport, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), 2*testtools.StartupBound)
				defer cancel()
				var a asked
				w := &wire{}
				c := clientLibraries[name](t, ctx, transport, "2025-11-25", urls, &a, w)
				if v := c.version(); v != "2025-11-25" {
					t.Errorf("negotiated protocol version %q, want 2025-11-25", v)
				}
				if sent := c.sentMethods(); len(sent) == 0 || sent[0] != "initialize" {
					t.Errorf("client sent %v: want initialize first", sent)
				}
				text, isErr, err := c.call(ctx, "signup", map[string]any{"who": "Bob"})
				if err != nil || isErr || text != "accept "+answeredName {
					t.Errorf("signup: %q (error result %v, err %v), want %q", text, isErr, err, "accept "+answeredName)
				}
				text, isErr, err = c.call(ctx, "summarize", map[string]any{"doc": "the report"})
				if want := answeredText + " (" + answeredModel + ")"; err != nil || isErr || text != want {
					t.Errorf("summarize: %q (error result %v, err %v), want %q", text, isErr, err, want)
				}
				if got := a.all(); !slices.Equal(got, []string{"Sign up Bob", "Summarize the report"}) {
					t.Errorf("the handlers were asked %q", got)
				}
				r := w.rounds()
				if !slices.Equal(r.serverRequests, []string{"elicitation/create", "sampling/createMessage"}) || len(r.inputRequests) != 0 {
					t.Errorf("received server requests %v and input_required results asking for %v: want one elicitation/create and one sampling/createMessage request",
						r.serverRequests, r.inputRequests)
				}
				if t.Failed() || os.Getenv("HELIX_TEST_CLIENTS_DUMP") != "" {
					t.Logf("received:\n%s\nsent:\n%s", w.String(), c.sent())
				}
			})
		}
	}
}
