package mcptools_test

import (
	"context"
	"encoding/json"
	"runtime"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/pkg/agent"
	"github.com/arvenza/helix/pkg/agent/agenttest"
	"github.com/arvenza/helix/pkg/agent/mcptools"
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
