package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The pair subcommand: two targets (a server and the gateway in front of it)
// measured in one run at a fixed rate of calls (open loop), in alternating
// slices of time, so that the machine's state (other load, CPU frequency, the
// hypervisor's steal) is the same for both within a fraction of a second.
//
//	mcpload pair -a direct=http://127.0.0.1:3102/mcp -b gateway=http://127.0.0.1:3110/mcp -rate 3000

// pairConfig describes one pair run.
type pairConfig struct {
	Targets  [2]target
	Rate     float64       // calls per second sent to the target whose slice it is
	Slice    time.Duration // how long one target gets the calls before the other
	Duration time.Duration // measured window (both targets together)
	Warmup   time.Duration
	Workers  int // sessions per target: calls in flight at most
	Protocol string
	Tool     string
	Args     string
	Timeout  time.Duration
	Round    int
}

// target is one server of a pair.
type target struct{ Label, URL string }

func (t *target) String() string { return t.Label + "=" + t.URL }

func (t *target) Set(s string) error {
	label, url, ok := strings.Cut(s, "=")
	if !ok || label == "" || url == "" {
		return fmt.Errorf("%q: want LABEL=URL", s)
	}
	t.Label, t.URL = label, url
	return nil
}

// pairResult is one target's side of a pair run; times are microseconds.
type pairResult struct {
	// Kind is "pair": summarize, which reads closed-loop results, skips it.
	Kind string `json:"kind"`
	// Side is "a" (the base) or "b".
	Side  string `json:"side"`
	Label string `json:"label"`
	Mode  string `json:"mode"` // "open-loop"
	// Rate is the rate asked for; Achieved the calls per second of the
	// target's slices that completed.
	Rate     float64 `json:"rate"`
	Achieved float64 `json:"achieved_rate"`
	Seconds  float64 `json:"seconds"` // the target's share of the window
	Requests int64   `json:"requests"`
	Errors   int64   `json:"errors"`
	// Latency from sending the request to reading its answer.
	P50us  float64 `json:"p50_us"`
	P90us  float64 `json:"p90_us"`
	P99us  float64 `json:"p99_us"`
	P999us float64 `json:"p999_us"`
	MaxUs  float64 `json:"max_us"`
	// Latency from when the call was due (its slot in the schedule): adds the
	// time a call waited for a free session or for the load tool itself, so
	// that a server that falls behind cannot hide it (coordinated omission).
	DueP50us float64 `json:"due_p50_us"`
	DueP99us float64 `json:"due_p99_us"`
	// Late counts calls sent more than a millisecond after their slot.
	Late         int64    `json:"late"`
	ErrorSamples []string `json:"error_samples,omitempty"`
	Round        int      `json:"round,omitempty"`
	StealPct     float64  `json:"steal_pct"`
}

func pairCmd(ctx context.Context, args []string, out io.Writer) error {
	var cfg pairConfig
	var jsonOut string
	fs := flag.NewFlagSet("mcpload pair", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Var(&cfg.Targets[0], "a", "first target, LABEL=URL (the base: the other is compared with it)")
	fs.Var(&cfg.Targets[1], "b", "second target, LABEL=URL")
	fs.Float64Var(&cfg.Rate, "rate", 3000, "calls per second, open loop")
	fs.DurationVar(&cfg.Slice, "slice", 100*time.Millisecond, "time each target gets before the other")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "measured window, both targets together")
	fs.DurationVar(&cfg.Warmup, "warmup", time.Second, "load before the window that is not measured")
	fs.IntVar(&cfg.Workers, "workers", 64, "sessions per target (calls in flight at most)")
	fs.StringVar(&cfg.Protocol, "protocol", defaultProtocol, "MCP protocol revision")
	fs.StringVar(&cfg.Tool, "tool", "echo", "tool to call")
	fs.StringVar(&cfg.Args, "args", `{"text":"hello"}`, "tool arguments (JSON object)")
	fs.DurationVar(&cfg.Timeout, "timeout", 30*time.Second, "per-request timeout")
	fs.IntVar(&cfg.Round, "round", 0, "round number, copied into the results")
	fs.StringVar(&jsonOut, "json", "", "append the two results as JSON lines to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	res, err := runPair(ctx, cfg)
	if err != nil {
		return err
	}
	printPair(out, res)
	if jsonOut != "" {
		for _, r := range res {
			if err := appendJSON(jsonOut, r); err != nil {
				return err
			}
		}
	}
	for _, r := range res {
		if r.Errors > 0 {
			return fmt.Errorf("%w: %s: %d failed calls, first: %q", errFailed, r.Label, r.Errors, r.ErrorSamples)
		}
		if r.Requests == 0 {
			return fmt.Errorf("%w: %s: no call completed inside the window", errFailed, r.Label)
		}
	}
	return nil
}

func (c *pairConfig) validate() error {
	for i, t := range c.Targets {
		if t.URL == "" {
			return fmt.Errorf("-%c LABEL=URL is required", 'a'+i)
		}
	}
	switch {
	case c.Rate <= 0:
		return fmt.Errorf("-rate %g: must be positive", c.Rate)
	case c.Slice <= 0 || c.Duration < 2*c.Slice:
		return fmt.Errorf("-slice %s, -duration %s: need a positive slice and a window of at least two", c.Slice, c.Duration)
	case c.Warmup < 0:
		return fmt.Errorf("-warmup %s: must not be negative", c.Warmup)
	case c.Workers < 1:
		return fmt.Errorf("-workers %d: need at least 1", c.Workers)
	case c.Tool == "":
		return errors.New("-tool is required")
	}
	var probe map[string]any
	if err := json.Unmarshal([]byte(c.Args), &probe); err != nil {
		return fmt.Errorf("-args %q must be a JSON object: %w", c.Args, err)
	}
	return nil
}

// sample is one call: when it was due and its latencies.
type sample struct {
	at        time.Time
	sent, due time.Duration
}

// pairSide is what one target's workers share.
type pairSide struct {
	jobs    chan time.Time // due times
	mu      sync.Mutex
	samples []sample
	errs    errorLog
	late    atomic.Int64
}

// runPair runs the schedule: slots every 1/rate, slice after slice alternating
// between the targets; each slot's call goes to a free session of the
// slice's target. Calls due inside the window are measured.
func runPair(ctx context.Context, cfg pairConfig) ([2]*pairResult, error) {
	var out [2]*pairResult
	if err := cfg.validate(); err != nil {
		return out, err
	}
	hc := newHTTPClient(2*cfg.Workers, cfg.Timeout)
	defer hc.CloseIdleConnections()
	params, err := json.Marshal(map[string]any{"name": cfg.Tool, "arguments": json.RawMessage(cfg.Args)})
	if err != nil {
		return out, err
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()

	var sides [2]*pairSide
	var wg sync.WaitGroup
	for i, t := range cfg.Targets {
		side := &pairSide{jobs: make(chan time.Time, 1<<16)}
		sides[i] = side
		for w := 0; w < cfg.Workers; w++ {
			s := &session{hc: hc, url: t.URL, protocol: cfg.Protocol}
			if err := s.open(ctx); err != nil {
				return out, fmt.Errorf("%s: open session %d: %w", t.Label, w, err)
			}
			defer s.close(context.WithoutCancel(ctx))
			wg.Add(1)
			go func() {
				defer wg.Done()
				side.work(ctx, s, params)
			}()
		}
	}

	start := time.Now().Add(10 * time.Millisecond)
	winStart := start.Add(cfg.Warmup)
	winEnd := winStart.Add(cfg.Duration)
	interval := time.Duration(float64(time.Second) / cfg.Rate)
	var st0, st1 machineTicks
	measuring := false
	for n := 0; ; n++ {
		due := start.Add(time.Duration(n) * interval)
		if !due.Before(winEnd) {
			break
		}
		if !measuring && !due.Before(winStart) {
			st0, _ = readMachineTicks()
			measuring = true
		}
		if d := time.Until(due); d > 0 {
			// A timer wakes a little late; the delay counts in the due latencies
			// (of both targets alike), not in the sent ones.
			time.Sleep(d)
		}
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		slice := int(due.Sub(start) / cfg.Slice)
		sides[slice%2].jobs <- due
	}
	st1, _ = readMachineTicks()
	for _, s := range sides {
		close(s.jobs)
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return out, err
	}
	steal := stealPct(st0, st1)
	for i, side := range sides {
		out[i] = side.result(cfg, cfg.Targets[i].Label, winStart, winEnd, steal)
		out[i].Side = string(rune('a' + i))
	}
	return out, nil
}

// work calls the tool for every due time it takes.
func (p *pairSide) work(ctx context.Context, s *session, params []byte) {
	var rec []sample
	for due := range p.jobs {
		t0 := time.Now()
		if t0.Sub(due) > time.Millisecond {
			p.late.Add(1)
		}
		_, _, err := s.call(ctx, "tools/call", params)
		t1 := time.Now()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			p.errs.add(err)
			continue
		}
		rec = append(rec, sample{at: due, sent: t1.Sub(t0), due: t1.Sub(due)})
	}
	p.mu.Lock()
	p.samples = append(p.samples, rec...)
	p.mu.Unlock()
}

// result summarises the calls due inside the window.
func (p *pairSide) result(cfg pairConfig, label string, winStart, winEnd time.Time, steal float64) *pairResult {
	var sent, due []time.Duration
	for _, s := range p.samples {
		if !s.at.Before(winStart) && s.at.Before(winEnd) {
			sent = append(sent, s.sent)
			due = append(due, s.due)
		}
	}
	slices.Sort(sent)
	slices.Sort(due)
	secs := cfg.Duration.Seconds() / 2 // the target's slices
	return &pairResult{
		Kind: "pair", Label: label, Mode: "open-loop", Rate: cfg.Rate, Seconds: secs,
		Achieved: float64(len(sent)) / secs, Requests: int64(len(sent)),
		Errors: p.errs.n, ErrorSamples: p.errs.samples, Late: p.late.Load(),
		P50us: micros(percentile(sent, 0.5)), P90us: micros(percentile(sent, 0.9)),
		P99us: micros(percentile(sent, 0.99)), P999us: micros(percentile(sent, 0.999)), MaxUs: micros(percentile(sent, 1)),
		DueP50us: micros(percentile(due, 0.5)), DueP99us: micros(percentile(due, 0.99)),
		Round: cfg.Round, StealPct: steal,
	}
}

// printPair prints both targets and what the second adds to the first.
func printPair(out io.Writer, res [2]*pairResult) {
	for _, r := range res {
		fmt.Fprintf(out, "%-10s open loop %.0f/s for %.1fs: %d calls (%.0f/s) errors=%d late=%d\n",
			r.Label, r.Rate, r.Seconds, r.Requests, r.Achieved, r.Errors, r.Late)
		fmt.Fprintf(out, "  p50 %.0fµs  p90 %.0fµs  p99 %.0fµs  p99.9 %.0fµs  max %.0fµs  (from due: p50 %.0fµs p99 %.0fµs)\n",
			r.P50us, r.P90us, r.P99us, r.P999us, r.MaxUs, r.DueP50us, r.DueP99us)
	}
	a, b := res[0], res[1]
	fmt.Fprintf(out, "added by %s over %s: p50 %+.0fµs  p99 %+.0fµs  (steal %.1f%%)\n", b.Label, a.Label, b.P50us-a.P50us, b.P99us-a.P99us, a.StealPct)
}
