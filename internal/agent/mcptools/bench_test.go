package mcptools_test

import (
	"context"
	"encoding/json"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/agent"
	"github.com/arvenza/helix/internal/agent/agenttest"
	"github.com/arvenza/helix/internal/agent/mcptools"
)

// benchIterations is the model turns of one benchmarked run: turn 1 calls the MCP
// tool, turn 2 answers.
const benchIterations = 2

// benchModel answers instantly in process: a tool call of echo, then, once the
// conversation holds the tool's result, the answer.
func benchModel() agent.Model {
	callTurn := &agent.ModelResponse{Message: agent.Message{Role: agent.RoleAssistant,
		ToolCalls: []agent.ToolCall{{ID: "1", Name: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)}}}}
	final := &agent.ModelResponse{Message: agent.Message{Role: agent.RoleAssistant, Text: "done"}}
	return agenttest.ModelFunc(func(_ context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == agent.RoleTool {
			return final, nil
		}
		return callTurn, nil
	})
}

// benchTools serves one instant echo tool from an in-process go-sdk server over
// Streamable HTTP (loopback) and returns its tools, discovered.
func benchTools(b *testing.B) *mcptools.Server {
	b.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "bench", Version: "1"}, &sdk.ServerOptions{Logger: quiet})
	srv.AddTool(&sdk.Tool{Name: "echo", Description: "echoes text", InputSchema: objectSchema},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: text("ok")}, nil
		})
	ts := serveHTTP(b, srv)
	s := newServer(b, mcptools.Options{Name: "MCP server bench", Conn: httpConfig(ts.URL)})
	if _, err := s.Tools(context.Background()); err != nil {
		b.Fatal(err)
	}
	return s
}

// checkRun reports a run that did not go as scripted; it uses Errorf, not Fatalf,
// since RunParallel's goroutines may not stop the benchmark.
func checkRun(b *testing.B, res *agent.Result, err error) bool {
	if err != nil || res.Iterations != benchIterations || res.ToolCalls != 1 || res.Text != "done" {
		b.Errorf("res %+v, err %v", res, err)
		return false
	}
	return true
}

// BenchmarkIterationMCP measures one agent run with one MCP tool call (two
// iterations): Helix's loop, the MCP client, loopback HTTP and the go-sdk server,
// with a model that costs nothing. ns/iteration and allocs/iteration are reported
// beside the per-run figures (allocations of the in-process server included).
func BenchmarkIterationMCP(b *testing.B) {
	a, err := agent.New(agent.Config{ID: "bench"}, benchModel(), benchTools(b))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for b.Loop() {
		res, err := a.Run(ctx, agent.Request{Message: "go"})
		if !checkRun(b, res, err) {
			b.FailNow()
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchIterations), "ns/iteration")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N*benchIterations), "allocs/iteration")
}

// BenchmarkIterationMCP100Agents runs 100 agents at once, all calling tools of the
// same MCP server through one shared session; ns/op is wall time per run with 100
// in flight (throughput, not latency).
func BenchmarkIterationMCP100Agents(b *testing.B) {
	const agents = 100
	tools := benchTools(b)
	all := make([]*agent.Agent, agents)
	for i := range all {
		a, err := agent.New(agent.Config{ID: "bench"}, benchModel(), tools)
		if err != nil {
			b.Fatal(err)
		}
		all[i] = a
	}
	var next atomic.Int64
	ctx := context.Background()
	b.SetParallelism((agents + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		a := all[next.Add(1)%agents]
		for pb.Next() {
			res, err := a.Run(ctx, agent.Request{Message: "go"})
			if !checkRun(b, res, err) {
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchIterations), "ns/iteration")
}

// BenchmarkAgentRunOpenAIMCP is the realistic path of an agent iteration: the
// openai provider on the official SDK against a Chat Completions server that
// answers at once with pre-encoded JSON, and an MCP tool through mcptools against
// an in-process go-sdk server over Streamable HTTP. A run is overheadIterations
// turns, each but the last with one tool call. Besides wall time per iteration it
// reports p50/p99 per iteration (run duration / iterations), process CPU per
// iteration (both servers included) and allocations per iteration (same). Profile
// this one: the servers' goroutines are labelled (see sideLabel).
func BenchmarkAgentRunOpenAIMCP(b *testing.B) {
	benchmarkAgentRun(b, false)
}

// BenchmarkAgentOverheadOpenAIMCP is BenchmarkAgentRunOpenAIMCP followed by the
// same number of bare tool calls (mcpclient Conn.CallTool on the same server) and
// bare model POSTs (the same bodies, through the same HTTP client, answers not
// decoded), and reports what is left per iteration once they are subtracted:
// Helix's own CPU and allocations per iteration beyond the tool call and the
// model's HTTP exchange.
func BenchmarkAgentOverheadOpenAIMCP(b *testing.B) {
	benchmarkAgentRun(b, true)
}

// overheadChunk is how many runs are measured between two baseline blocks: the
// blocks alternate so that a change in the machine's load shows in both, and are
// long enough that the garbage one leaves for the next is small beside its own.
const overheadChunk = 100

func benchmarkAgentRun(b *testing.B, withBaseline bool) {
	env := newOverheadEnv(b)
	a := env.newAgent(b)
	ctx := context.Background()
	req := agent.Request{Message: "Say hi through the echo tool."}
	// The first run connects and lets the model server capture its requests.
	if res, err := a.Run(ctx, req); !checkOverheadRun(b, res, err) {
		b.FailNow()
	}
	var bl *baseline
	if withBaseline {
		bl = env.newBaseline(b)
	}
	durations := make([]time.Duration, 0, 1<<14)
	var run usage
	pending := 0 // runs not yet matched by a baseline block
	runtime.GC()
	start := readUsage()
	for b.Loop() {
		began := time.Now()
		res, err := a.Run(ctx, req)
		durations = append(durations, time.Since(began))
		if !checkOverheadRun(b, res, err) {
			b.FailNow()
		}
		if pending++; bl != nil && pending == overheadChunk {
			b.StopTimer()
			run = run.add(readUsage().sub(start))
			bl.runs(pending)
			pending = 0
			runtime.GC()
			start = readUsage()
			b.StartTimer()
		}
	}
	run = run.add(readUsage().sub(start))
	iterations := float64(b.N * overheadIterations)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/iterations, "ns/iteration")
	(&latencies{all: durations}).report(b, overheadIterations)
	b.ReportMetric(float64(run.cpu.Nanoseconds())/iterations, "cpu-ns/iteration")
	b.ReportMetric(float64(run.mallocs)/iterations, "allocs/iteration")
	b.ReportMetric(float64(run.bytes)/iterations, "B/iteration")
	if bl == nil {
		return
	}
	if pending > 0 {
		bl.runs(pending)
	}
	helix := run.sub(bl.calls).sub(bl.posts)
	b.ReportMetric(float64(bl.calls.cpu.Nanoseconds())/iterations, "toolcall-cpu-ns/iteration")
	b.ReportMetric(float64(bl.posts.cpu.Nanoseconds())/iterations, "modelpost-cpu-ns/iteration")
	b.ReportMetric(float64(helix.cpu.Nanoseconds())/iterations, "helix-cpu-ns/iteration")
	b.ReportMetric(float64(int64(helix.mallocs))/iterations, "helix-allocs/iteration")
	b.ReportMetric(float64(int64(helix.bytes))/iterations, "helix-B/iteration")
}

// BenchmarkAgentRunOpenAIMCP100Agents runs 100 agents at once on the realistic
// path, each its own agent and provider, all sharing the MCP session and the
// model server (and the provider's HTTP client, as agents of one Helix do when
// none is configured). ns/iteration is wall time divided by all iterations
// (throughput); p50/p99 are per run with 100 in flight, divided by its iterations.
func BenchmarkAgentRunOpenAIMCP100Agents(b *testing.B) {
	const agents = 100
	env := newOverheadEnv(b)
	all := make([]*agent.Agent, agents)
	for i := range all {
		all[i] = env.newAgent(b)
	}
	ctx := context.Background()
	req := agent.Request{Message: "Say hi through the echo tool."}
	if res, err := all[0].Run(ctx, req); !checkOverheadRun(b, res, err) {
		b.FailNow()
	}
	var next atomic.Int64
	var lat latencies
	b.SetParallelism((agents + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	runtime.GC()
	modelConns, mcpConns := env.modelConns.Load(), env.mcpConns.Load()
	before := readUsage()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		a := all[next.Add(1)%agents]
		var mine []time.Duration
		defer func() { lat.add(mine) }()
		for pb.Next() {
			start := time.Now()
			res, err := a.Run(ctx, req)
			mine = append(mine, time.Since(start))
			if !checkOverheadRun(b, res, err) {
				return
			}
		}
	})
	b.StopTimer()
	run := readUsage().sub(before)
	iterations := float64(b.N * overheadIterations)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/iterations, "ns/iteration")
	b.ReportMetric(iterations/b.Elapsed().Seconds(), "iterations/s")
	lat.report(b, overheadIterations)
	b.ReportMetric(float64(run.cpu.Nanoseconds())/iterations, "cpu-ns/iteration")
	b.ReportMetric(float64(run.mallocs)/iterations, "allocs/iteration")
	// Clients keep 2 idle connections per host by default: with 100 agents the
	// others are closed after each request and dialled again.
	b.ReportMetric(float64(env.modelConns.Load()-modelConns)/iterations, "model-dials/iteration")
	b.ReportMetric(float64(env.mcpConns.Load()-mcpConns)/iterations, "mcp-dials/iteration")
}
