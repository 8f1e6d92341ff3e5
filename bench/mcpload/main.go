// Command mcpload is a load generator for MCP servers over Streamable HTTP.
//
// It drives N concurrent clients, each with its own keep-alive connection (or a
// new connection per call, -new-conn; from several loopback addresses, -sources),
// that call one tool with raw JSON-RPC POSTs for a fixed time, and reports requests per
// second, latency percentiles, errors and, for a server running on this machine
// (-pid), its CPU time per call and resident memory. Answers may be JSON or an SSE
// stream. Subcommands measure start-up time and idle session memory, and summarise
// interleaved rounds; see BENCHMARKS.md.
//
//	mcpload [run] -url http://127.0.0.1:3000/mcp -clients 16 -duration 10s -pid 1234
//	mcpload startup -url http://127.0.0.1:3000/mcp -runs 10 -- helix mcp serve bench/echo.yaml
//	mcpload sessions -url http://127.0.0.1:3000/mcp -n 10000 -pid 1234 -idle 10s
//	mcpload wait -url http://127.0.0.1:3000/mcp -timeout 60s
//	mcpload summarize -base limit results.jsonl
//	mcpload run -url http://127.0.0.1:3000/mcp -clients 1024 -sources 8 -new-conn
//	mcpload matrix -base limit results.jsonl     # scripts/bench-concurrency.sh
//	mcpload pair -a direct=http://127.0.0.1:3102/mcp -b gateway=http://127.0.0.1:3110/mcp -rate 3000
//	mcpload overload -url http://127.0.0.1:3000/mcp -stateless -multiple 2 -duration 10s
//	mcpload backend -addr 127.0.0.1:3198 -slots 8 -service 5ms
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// defaultProtocol is the MCP revision the load tool announces; every peer and Helix
// (go-sdk v1.8.0) speaks it.
const defaultProtocol = "2025-06-18"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpload:", err)
		if errors.Is(err, errFailed) {
			os.Exit(1)
		}
		os.Exit(2)
	}
}

// errFailed marks a run that completed but saw errors (exit status 1, not 2).
var errFailed = errors.New("the run saw errors")

func run(ctx context.Context, args []string, out io.Writer) error {
	cmd := "run"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "run":
		return runCmd(ctx, args, out)
	case "startup":
		return startupCmd(ctx, args, out)
	case "sessions":
		return sessionsCmd(ctx, args, out)
	case "wait":
		return waitCmd(ctx, args, out)
	case "summarize":
		return summarizeCmd(args, out)
	case "matrix":
		return matrixCmd(args, out)
	case "pair":
		return pairCmd(ctx, args, out)
	case "overload":
		return overloadCmd(ctx, args, out)
	case "backend":
		return backendCmd(ctx, args, out)
	default:
		return fmt.Errorf("unknown subcommand %q (want run, pair, overload, backend, startup, sessions, wait, summarize or matrix)", cmd)
	}
}

func runCmd(ctx context.Context, args []string, out io.Writer) error {
	var cfg loadConfig
	var jsonOut string
	var allowErrors bool
	fs := flag.NewFlagSet("mcpload run", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&cfg.Label, "label", "server", "name of the server under test, copied into the result")
	fs.StringVar(&cfg.URL, "url", "", "Streamable HTTP endpoint of the MCP server")
	fs.IntVar(&cfg.Clients, "clients", 16, "concurrent clients (one keep-alive connection each)")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "measured window")
	fs.DurationVar(&cfg.Warmup, "warmup", time.Second, "load before the window that is not measured")
	fs.BoolVar(&cfg.Stateless, "stateless", false, "no initialize: send tools/call directly with the MCP-Protocol-Version header")
	fs.StringVar(&cfg.Protocol, "protocol", defaultProtocol, "MCP protocol revision")
	fs.StringVar(&cfg.Tool, "tool", "echo", "tool to call")
	fs.StringVar(&cfg.Args, "args", `{"text":"hello"}`, "tool arguments (JSON object)")
	fs.IntVar(&cfg.PID, "pid", 0, "PID of the server on this machine, for CPU per call and RSS (/proc)")
	fs.StringVar(&cfg.Memstats, "memstats", "", "expvar URL of the server (/debug/vars), for allocations per call")
	fs.DurationVar(&cfg.Timeout, "timeout", 30*time.Second, "per-request timeout")
	fs.IntVar(&cfg.Round, "round", 0, "side-by-side round number, copied into the result (summarize compares servers within a round)")
	fs.StringVar(&jsonOut, "json", "", "append the result as one JSON line to this file")
	fs.BoolVar(&allowErrors, "allow-errors", false, "exit 0 even when some calls failed")
	fs.BoolVar(&cfg.NewConn, "new-conn", false, "a new connection per call (no keep-alive): measures the server's accept path")
	fs.IntVar(&cfg.Sources, "sources", 1, "connect from this many loopback addresses (127.0.0.1 … 127.0.0.N) in turn, as clients of many hosts do; the server must listen on 127.0.0.1")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	r, err := runLoad(ctx, cfg)
	if err != nil {
		return err
	}
	printResult(out, r)
	if jsonOut != "" {
		if err := appendJSON(jsonOut, r); err != nil {
			return err
		}
	}
	if r.Errors > 0 && !allowErrors {
		return fmt.Errorf("%w: %d failed calls, first: %q", errFailed, r.Errors, r.ErrorSamples)
	}
	if r.Requests == 0 {
		return fmt.Errorf("%w: no call completed inside the window", errFailed)
	}
	return nil
}

func printResult(out io.Writer, r *result) {
	fmt.Fprintf(out, "%-10s %s %s clients=%d window=%.1fs requests=%d errors=%d\n",
		r.Label, r.Mode, r.Conn, r.Clients, r.Seconds, r.Requests, r.Errors)
	fmt.Fprintf(out, "  %.0f req/s  p50 %.0fµs  p99 %.0fµs  p99.9 %.0fµs  max %.0fµs\n",
		r.RPS, r.P50us, r.P99us, r.P999us, r.MaxUs)
	if r.CPUusPerCall >= 0 {
		fmt.Fprintf(out, "  server cpu %.1fµs/call  load tool cpu %.1fµs/call  rss %d KiB (anon %d)  peak rss %d KiB\n", r.CPUusPerCall, r.LoadCPUusPerCall, r.RSSKB, r.AnonRSSKB, r.PeakRSSKB)
	}
	if r.AllocPerCall >= 0 {
		fmt.Fprintf(out, "  server alloc %.0f B/call  %.1f allocs/call\n", r.AllocPerCall, r.MallocPerCall)
	}
	for _, s := range r.ErrorSamples {
		fmt.Fprintf(out, "  error: %s\n", s)
	}
}

func appendJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("results file: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("results file %s: %w", path, err)
	}
	return f.Close()
}
