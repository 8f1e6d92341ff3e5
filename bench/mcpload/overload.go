package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// overloadConfig describes one overload run (issue 33): the server's capacity
// found closed-loop (or given), then open-loop load at Multiple times it.
type overloadConfig struct {
	Label     string
	URL       string
	Stateless bool
	Protocol  string
	Tool      string
	Args      string
	Timeout   time.Duration

	// Capacity is the closed-loop calls per second to offer a multiple of; 0:
	// measured first with CapClients clients for CapDuration.
	Capacity    float64
	CapClients  int
	CapDuration time.Duration
	// UnloadedP99us is the p99 of one client alone (no queueing anywhere); 0:
	// measured first, closed-loop, for CapDuration.
	UnloadedP99us float64

	Multiple float64       // offered rate = Multiple × Capacity
	Duration time.Duration // measured window of the open-loop run
	Warmup   time.Duration
	Workers  int // concurrent calls the generator can have in flight
	PID      int // server process whose CPU in the window is reported (0: none)
}

func (c *overloadConfig) validate() error {
	switch {
	case c.URL == "":
		return errors.New("-url is required")
	case c.Multiple <= 0:
		return fmt.Errorf("-multiple %g: must be positive", c.Multiple)
	case c.Duration <= 0 || c.CapDuration <= 0:
		return errors.New("-duration and -capacity-duration must be positive")
	case c.Workers < 1 || c.CapClients < 1:
		return errors.New("-workers and -capacity-clients need at least 1")
	case c.Capacity < 0 || c.UnloadedP99us < 0:
		return errors.New("-capacity and -unloaded-p99 must not be negative")
	}
	return nil
}

// overloadResult is what an overload run measured. Latencies are microseconds.
type overloadResult struct {
	Kind          string  `json:"kind"` // "overload"
	Label         string  `json:"label"`
	Mode          string  `json:"mode"`
	CapacityRPS   float64 `json:"capacity_rps"`
	CapacityP99us float64 `json:"capacity_p99_us"` // p99 of the capacity run (0 when given)
	UnloadedP99us float64 `json:"unloaded_p99_us"`
	OfferedRPS    float64 `json:"offered_rps"`
	Seconds       float64 `json:"seconds"`
	// Answered are the calls answered inside the window (ok, refused or
	// failed); Unsent the calls due in the window still waiting for a free
	// worker when it closed (the generator's backlog: the server kept every
	// worker busy).
	Answered int64 `json:"answered"`
	Unsent   int64 `json:"unsent"`
	OK       int64 `json:"ok"`      // admitted and answered with a result
	Refused  int64 `json:"refused"` // 503 + -32030 before any work
	// Failed are calls that were neither: an error after admission (or a
	// timeout, a dropped connection), the figure that must be zero.
	Failed       int64    `json:"failed"`
	ErrorSamples []string `json:"error_samples,omitempty"`
	GoodputRPS   float64  `json:"goodput_rps"`
	GoodputRatio float64  `json:"goodput_ratio"` // goodput / capacity
	// P50us and P99us are of the admitted calls answered in the window, from
	// sending to the answer;
	// P99DueUs from the time the call was due (what a client with that schedule
	// waits, the generator's backlog included).
	P50us      float64 `json:"p50_us"`
	P99us      float64 `json:"p99_us"`
	P99DueUs   float64 `json:"p99_due_us"`
	P99Ratio   float64 `json:"p99_ratio"` // P99us / UnloadedP99us
	RefusedP99 float64 `json:"refused_p99_us"`
	StealPct   float64 `json:"steal_pct"`
	// ServerCPUus is the server's CPU (user+system) during the window (-pid),
	// in µs; with OK and Refused of two runs it gives a refusal's cost against
	// a call's.
	ServerCPUus float64 `json:"server_cpu_us,omitempty"`
}

func overloadCmd(ctx context.Context, args []string, out io.Writer) error {
	var cfg overloadConfig
	var jsonOut string
	fs := flag.NewFlagSet("mcpload overload", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&cfg.Label, "label", "server", "name of the run, copied into the result")
	fs.StringVar(&cfg.URL, "url", "", "Streamable HTTP endpoint of the MCP server")
	fs.BoolVar(&cfg.Stateless, "stateless", false, "no initialize: send tools/call directly with the MCP-Protocol-Version header")
	fs.StringVar(&cfg.Protocol, "protocol", defaultProtocol, "MCP protocol revision")
	fs.StringVar(&cfg.Tool, "tool", "echo", "tool to call")
	fs.StringVar(&cfg.Args, "args", `{"text":"hello"}`, "tool arguments (JSON object)")
	fs.DurationVar(&cfg.Timeout, "timeout", 10*time.Second, "per-request timeout (a call still unanswered then counts as failed)")
	fs.Float64Var(&cfg.Capacity, "capacity", 0, "calls per second the server sustains; 0: measure it closed-loop first")
	fs.IntVar(&cfg.CapClients, "capacity-clients", 16, "clients of the closed-loop capacity run")
	fs.DurationVar(&cfg.CapDuration, "capacity-duration", 5*time.Second, "window of the capacity and unloaded runs")
	fs.Float64Var(&cfg.UnloadedP99us, "unloaded-p99", 0, "p99 in µs of one client alone; 0: measure it first")
	fs.Float64Var(&cfg.Multiple, "multiple", 2, "offered load as a multiple of capacity")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "window of the open-loop run")
	fs.DurationVar(&cfg.Warmup, "warmup", time.Second, "open-loop load before the window, not measured")
	fs.IntVar(&cfg.Workers, "workers", 1024, "calls the generator may have in flight (one connection each)")
	fs.StringVar(&jsonOut, "json", "", "append the result as one JSON line to this file")
	fs.IntVar(&cfg.PID, "pid", 0, "server process: report its CPU time in the window")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	r, err := runOverload(ctx, cfg, out)
	if err != nil {
		return err
	}
	printOverload(out, r)
	if jsonOut != "" {
		return appendJSON(jsonOut, r)
	}
	return nil
}

func printOverload(out io.Writer, r *overloadResult) {
	fmt.Fprintf(out, "%-10s overload %s: capacity %.0f/s (p99 %.0fµs), unloaded p99 %.0fµs, offered %.0f/s for %.0fs\n",
		r.Label, r.Mode, r.CapacityRPS, r.CapacityP99us, r.UnloadedP99us, r.OfferedRPS, r.Seconds)
	fmt.Fprintf(out, "  answered %d (ok %d refused %d failed %d), unsent %d\n", r.Answered, r.OK, r.Refused, r.Failed, r.Unsent)
	fmt.Fprintf(out, "  goodput %.0f/s = %.2f× capacity; admitted p50 %.0fµs p99 %.0fµs = %.1f× unloaded p99; p99 from due %.0fµs; refusals p99 %.0fµs\n",
		r.GoodputRPS, r.GoodputRatio, r.P50us, r.P99us, r.P99Ratio, r.P99DueUs, r.RefusedP99)
	if r.ServerCPUus > 0 && r.Answered > 0 {
		fmt.Fprintf(out, "  server CPU %.0f ms in the window, %.1f µs per answer\n", r.ServerCPUus/1000, r.ServerCPUus/float64(r.Answered))
	}
	for _, s := range r.ErrorSamples {
		fmt.Fprintf(out, "  error: %s\n", s)
	}
}

// isRefusal reports whether err is admission control's answer: HTTP 503 with
// the JSON-RPC busy error (-32030).
func isRefusal(err error) bool {
	var se *statusError
	return errors.As(err, &se) && se.Status == http.StatusServiceUnavailable && strings.Contains(se.Body, "-32030")
}

type overloadSample struct {
	done      time.Time     // when the answer came
	sent, due time.Duration // answer time from sending, from being due
	refused   bool
}

func runOverload(ctx context.Context, cfg overloadConfig, progress io.Writer) (*overloadResult, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	base := loadConfig{Label: cfg.Label, URL: cfg.URL, Stateless: cfg.Stateless, Protocol: cfg.Protocol, Tool: cfg.Tool,
		Args: cfg.Args, Timeout: cfg.Timeout, Duration: cfg.CapDuration, Warmup: time.Second}
	r := &overloadResult{Kind: "overload", Label: cfg.Label, Mode: mode(cfg.Stateless), CapacityRPS: cfg.Capacity,
		UnloadedP99us: cfg.UnloadedP99us, Seconds: cfg.Duration.Seconds()}
	if r.UnloadedP99us == 0 {
		one := base
		one.Clients = 1
		lr, err := runLoad(ctx, one)
		if err != nil {
			return nil, fmt.Errorf("unloaded run: %w", err)
		}
		if lr.Errors > 0 {
			return nil, fmt.Errorf("unloaded run: %d failed calls, first %q", lr.Errors, lr.ErrorSamples)
		}
		r.UnloadedP99us = lr.P99us
		fmt.Fprintf(progress, "unloaded (1 client): %.0f/s p99 %.0fµs\n", lr.RPS, lr.P99us)
	}
	if r.CapacityRPS == 0 {
		cl := base
		cl.Clients = cfg.CapClients
		lr, err := runLoad(ctx, cl)
		if err != nil {
			return nil, fmt.Errorf("capacity run: %w", err)
		}
		if lr.Errors > 0 {
			return nil, fmt.Errorf("capacity run: %d failed calls (is admission control refusing them? measure capacity without it), first %q",
				lr.Errors, lr.ErrorSamples)
		}
		r.CapacityRPS, r.CapacityP99us = lr.RPS, lr.P99us
		fmt.Fprintf(progress, "capacity (%d clients, closed loop): %.0f/s p99 %.0fµs\n", cl.Clients, lr.RPS, lr.P99us)
	}
	r.OfferedRPS = cfg.Multiple * r.CapacityRPS
	if r.OfferedRPS <= 0 {
		return nil, errors.New("no capacity to offer a multiple of")
	}

	hc := newHTTPClient(cfg.Workers, cfg.Timeout)
	defer hc.CloseIdleConnections()
	params, err := json.Marshal(map[string]any{"name": cfg.Tool, "arguments": json.RawMessage(cfg.Args)})
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	start := time.Now().Add(10 * time.Millisecond)
	winStart := start.Add(cfg.Warmup)
	winEnd := winStart.Add(cfg.Duration)
	interval := time.Duration(float64(time.Second) / r.OfferedRPS)
	total := int(float64(cfg.Warmup+cfg.Duration) / float64(interval))
	jobs := make(chan time.Time, total+1)

	var errs errorLog
	var failed, unsent atomic.Int64
	var mu sync.Mutex
	var samples []overloadSample
	var wg sync.WaitGroup
	for w := 0; w < cfg.Workers; w++ {
		s := &session{hc: hc, url: cfg.URL, protocol: cfg.Protocol}
		if !cfg.Stateless {
			if err := s.open(ctx); err != nil {
				return nil, fmt.Errorf("open session %d: %w", w, err)
			}
			defer s.close(context.WithoutCancel(ctx))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var rec []overloadSample
			for due := range jobs {
				t0 := time.Now()
				if !t0.Before(winEnd) {
					if !due.Before(winStart) {
						unsent.Add(1) // due in the window, still waiting for a worker when it closed
					}
					continue
				}
				_, _, err := s.call(ctx, "tools/call", params)
				t1 := time.Now()
				refused := false
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					if refused = isRefusal(err); !refused {
						if !t1.Before(winStart) && t1.Before(winEnd) {
							failed.Add(1)
							errs.add(err)
						}
						continue
					}
				}
				rec = append(rec, overloadSample{done: t1, sent: t1.Sub(t0), due: t1.Sub(due), refused: refused})
			}
			mu.Lock()
			samples = append(samples, rec...)
			mu.Unlock()
		}()
	}
	var st0, st1 machineTicks
	var cpu0, cpu1 time.Duration
	var cpuErr error
	measuring := false
	due := start
	for n := 0; n < total; n++ {
		due = start.Add(time.Duration(n) * interval)
		if !measuring && !due.Before(winStart) {
			st0, _ = readMachineTicks()
			if cfg.PID > 0 {
				cpu0, cpuErr = procCPU(cfg.PID)
			}
			measuring = true
		}
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		jobs <- due
	}
	st1, _ = readMachineTicks()
	if cfg.PID > 0 && cpuErr == nil {
		cpu1, cpuErr = procCPU(cfg.PID)
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// Everything answered inside the window counts: under overload the calls
	// answered then were mostly due earlier (the generator's backlog).
	var okSent, okDue, refusedSent []time.Duration
	for _, s := range samples {
		if s.done.Before(winStart) || !s.done.Before(winEnd) {
			continue
		}
		if s.refused {
			refusedSent = append(refusedSent, s.sent)
			continue
		}
		okSent = append(okSent, s.sent)
		okDue = append(okDue, s.due)
	}
	slices.Sort(okSent)
	slices.Sort(okDue)
	slices.Sort(refusedSent)
	r.Failed, r.ErrorSamples = failed.Load(), errs.samples
	r.OK, r.Refused = int64(len(okSent)), int64(len(refusedSent))
	r.Answered = r.OK + r.Refused + r.Failed
	r.Unsent = unsent.Load()
	r.GoodputRPS = float64(r.OK) / cfg.Duration.Seconds()
	r.GoodputRatio = r.GoodputRPS / r.CapacityRPS
	r.P50us = micros(percentile(okSent, 0.50))
	r.P99us = micros(percentile(okSent, 0.99))
	r.P99DueUs = micros(percentile(okDue, 0.99))
	r.RefusedP99 = micros(percentile(refusedSent, 0.99))
	if r.UnloadedP99us > 0 {
		r.P99Ratio = r.P99us / r.UnloadedP99us
	}
	r.StealPct = stealPct(st0, st1)
	if cfg.PID > 0 {
		if cpuErr != nil {
			return nil, cpuErr
		}
		r.ServerCPUus = float64(cpu1-cpu0) / float64(time.Microsecond)
	}
	return r, nil
}
