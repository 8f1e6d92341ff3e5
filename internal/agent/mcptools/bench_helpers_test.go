package mcptools_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/agent"
	"github.com/arvenza/helix/internal/agent/mcptools"
	"github.com/arvenza/helix/internal/agent/openai"
	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
)

// The overhead benchmarks run one agent conversation of overheadIterations model
// turns: every turn but the last calls the MCP tool once, the last answers.
const (
	overheadIterations = 5
	overheadToolCalls  = overheadIterations - 1
)

// sideLabel is the pprof label that marks the goroutines of the two servers a run
// talks to and of the MCP client's session, so that a CPU profile can be split into
// Helix's side and the other ends (scripts/agent-overhead.sh). Goroutines inherit labels from the goroutine
// that starts them, and an httptest server's connections are served by goroutines
// its accept loop starts: starting the server under the label marks them all.
const sideLabel = "side"

// startLabelled starts an httptest server for h whose goroutines carry side=value;
// conns counts the connections it accepts (clients that keep too few idle
// connections dial again and again under load).
func startLabelled(b *testing.B, value string, h http.Handler, conns *atomic.Int64) *httptest.Server {
	b.Helper()
	ts := httptest.NewUnstartedServer(h)
	ts.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			conns.Add(1)
		}
	}
	pprof.Do(context.Background(), pprof.Labels(sideLabel, value), func(context.Context) {
		ts.Start()
	})
	return ts
}

// chatModelServer is a Chat Completions server that answers at once with
// pre-encoded JSON: a call of the echo tool while the conversation holds fewer than
// overheadToolCalls tool results, then the final answer. It keeps the request
// bodies of the first conversation, so that the baseline can replay them.
type chatModelServer struct {
	toolTurns [][]byte // toolTurns[i]: the answer when the request holds i tool results
	final     []byte

	mu       sync.Mutex
	captured [][]byte
}

func newChatModelServer() *chatModelServer {
	s := &chatModelServer{final: []byte(`{"id":"chatcmpl-bench","object":"chat.completion","created":1764576000,"model":"gpt-4o-mini",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"done","refusal":null},"logprobs":null,"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":120,"completion_tokens":2,"total_tokens":122},"system_fingerprint":"fp_bench"}`)}
	for i := range overheadToolCalls {
		id := string(rune('1' + i))
		s.toolTurns = append(s.toolTurns, []byte(`{"id":"chatcmpl-bench","object":"chat.completion","created":1764576000,"model":"gpt-4o-mini",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"call_`+id+`","type":"function",`+
			`"function":{"name":"echo","arguments":"{\"text\":\"hi\"}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],`+
			`"usage":{"prompt_tokens":100,"completion_tokens":12,"total_tokens":112},"system_fingerprint":"fp_bench"}`))
	}
	return s
}

var toolResultKey = []byte(`"tool_call_id"`)

func (s *chatModelServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	if len(s.captured) < overheadIterations {
		s.captured = append(s.captured, body)
	}
	s.mu.Unlock()
	answer := s.final
	if n := bytes.Count(body, toolResultKey); n < len(s.toolTurns) {
		answer = s.toolTurns[n]
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(answer)
}

// requests returns the request bodies of the first conversation.
func (s *chatModelServer) requests() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.captured)
}

// overheadEnv is the realistic path of an agent run: the openai provider on its
// SDK against chatModelServer, and the echo tool of an in-process go-sdk server
// over Streamable HTTP through mcptools. Both servers run in this process, their
// goroutines labelled (startLabelled).
type overheadEnv struct {
	model     *chatModelServer
	modelURL  string
	modelHTTP *http.Client // the provider's client; the model baseline posts through it too
	tools     *mcptools.Server
	mcpURL    string

	modelConns, mcpConns atomic.Int64 // connections the servers accepted
}

func newOverheadEnv(b *testing.B) *overheadEnv {
	b.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "bench", Version: "1"}, &sdk.ServerOptions{Logger: quiet})
	srv.AddTool(&sdk.Tool{Name: "echo", Description: "echoes text", InputSchema: objectSchema},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: text("ok")}, nil
		})
	env := &overheadEnv{model: newChatModelServer()}
	mcpTS := startLabelled(b, "mcp-server", streamable(srv), &env.mcpConns)
	cleanup(b, srv, mcpTS)

	env.mcpURL = mcpTS.URL
	modelTS := startLabelled(b, "model-server", env.model, &env.modelConns)
	b.Cleanup(modelTS.Close)
	env.modelURL = modelTS.URL + "/v1"
	// The transport Helix uses when no client is configured, with its defaults, but
	// its own, so that its idle connections can be closed at the end.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	b.Cleanup(transport.CloseIdleConnections)
	env.modelHTTP = &http.Client{Transport: transport}

	env.tools = newServer(b, mcptools.Options{Name: "MCP server bench", Conn: httpConfig(mcpTS.URL)})
	// Discovery connects the MCP session: its goroutines and those of its HTTP
	// connection (kept alive for the calls that follow) are the MCP client's.
	var err error
	pprof.Do(context.Background(), pprof.Labels(sideLabel, "mcp-client"), func(ctx context.Context) {
		_, err = env.tools.Tools(ctx)
	})
	if err != nil {
		b.Fatal(err)
	}
	return env
}

// newAgent builds an agent on the openai provider and the MCP tools of env.
func (env *overheadEnv) newAgent(b *testing.B) *agent.Agent {
	b.Helper()
	m, err := openai.New(openai.Config{Model: "gpt-4o-mini", APIKey: "sk-bench", BaseURL: env.modelURL, HTTPClient: env.modelHTTP})
	if err != nil {
		b.Fatal(err)
	}
	a, err := agent.New(agent.Config{ID: "bench", SystemPrompt: "You are a helpful assistant. Use the tools when they help."}, m, env.tools)
	if err != nil {
		b.Fatal(err)
	}
	return a
}

// checkOverheadRun reports a run that did not go as scripted (Errorf: it may run
// on RunParallel's goroutines).
func checkOverheadRun(b *testing.B, res *agent.Result, err error) bool {
	if err != nil || res.Iterations != overheadIterations || res.ToolCalls != overheadToolCalls || res.Text != "done" {
		b.Errorf("res %+v, err %v", res, err)
		return false
	}
	return true
}

// usage is what the process spent: CPU time of all its threads (user and system,
// GC included) and heap allocations.
type usage struct {
	cpu     time.Duration
	mallocs uint64
	bytes   uint64
}

func readUsage() usage {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return usage{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), mallocs: ms.Mallocs, bytes: ms.TotalAlloc}
}

func (u usage) sub(v usage) usage {
	return usage{cpu: u.cpu - v.cpu, mallocs: u.mallocs - v.mallocs, bytes: u.bytes - v.bytes}
}

// measure runs f after a GC (so that a block does not pay for the garbage of the
// one before) and returns what it spent.
func measure(f func()) usage {
	runtime.GC()
	before := readUsage()
	f()
	return readUsage().sub(before)
}

func (u usage) add(v usage) usage {
	return usage{cpu: u.cpu + v.cpu, mallocs: u.mallocs + v.mallocs, bytes: u.bytes + v.bytes}
}

// baseline is what an agent run costs that is not Helix's: its tool calls made
// bare (mcpclient Conn.CallTool on its own session with the same server) and its
// model requests made bare (the captured bodies posted through the provider's
// HTTP client, answers read but not decoded: the model's side plus the HTTP round
// trip, which the provider cannot avoid either).
type baseline struct {
	b      *testing.B
	conn   *mcpclient.Conn
	url    string
	client *http.Client
	bodies [][]byte

	calls, posts usage // spent so far
}

// newBaseline connects its session outside any measurement, as the agent's is.
// Call it after a run, whose requests the model server has captured.
func (env *overheadEnv) newBaseline(b *testing.B) *baseline {
	b.Helper()
	conn, err := mcpclient.NewConn(mcpclient.Config{Transport: mcpclient.TransportHTTP, Endpoint: env.mcpURL, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = conn.Close() })
	bl := &baseline{b: b, conn: conn, url: env.modelURL + "/chat/completions", client: env.modelHTTP, bodies: env.model.requests()}
	if len(bl.bodies) != overheadIterations {
		b.Fatalf("captured %d model requests, want %d", len(bl.bodies), overheadIterations)
	}
	bl.call()
	return bl
}

func (bl *baseline) call() {
	res, err := bl.conn.CallTool(context.Background(), "echo", map[string]any{"text": "hi"})
	if err != nil || res.IsError {
		bl.b.Fatalf("res %+v, err %v", res, err)
	}
}

func (bl *baseline) post(body []byte) {
	req, err := http.NewRequest(http.MethodPost, bl.url, bytes.NewReader(body))
	if err != nil {
		bl.b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-bench")
	resp, err := bl.client.Do(req)
	if err != nil {
		bl.b.Fatal(err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		bl.b.Fatalf("status %d, err %v", resp.StatusCode, err)
	}
}

// runs does, bare, what runs agent runs do besides Helix's own work, measuring the
// tool calls and the model requests apart.
func (bl *baseline) runs(runs int) {
	bl.calls = bl.calls.add(measure(func() {
		for range runs * overheadToolCalls {
			bl.call()
		}
	}))
	bl.posts = bl.posts.add(measure(func() {
		for range runs {
			for _, body := range bl.bodies {
				bl.post(body)
			}
		}
	}))
}

// latencies collects run durations (from several goroutines) and reports their
// percentiles per iteration.
type latencies struct {
	mu  sync.Mutex
	all []time.Duration
}

func (l *latencies) add(d []time.Duration) {
	l.mu.Lock()
	l.all = append(l.all, d...)
	l.mu.Unlock()
}

// report sets p50 and p99 of the runs, divided by the iterations of a run.
func (l *latencies) report(b *testing.B, iterations int) {
	if len(l.all) == 0 {
		return
	}
	slices.Sort(l.all)
	at := func(q float64) float64 {
		return float64(l.all[int(q*float64(len(l.all)-1))].Nanoseconds()) / float64(iterations)
	}
	b.ReportMetric(at(0.50), "p50-ns/iteration")
	b.ReportMetric(at(0.99), "p99-ns/iteration")
}
