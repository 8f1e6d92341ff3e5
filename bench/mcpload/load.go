package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sync"
	"time"
)

// loadConfig describes one load run.
type loadConfig struct {
	Label     string        // name of the server under test, carried into the result
	URL       string        // Streamable HTTP endpoint
	Clients   int           // concurrent MCP clients, one keep-alive connection each
	Duration  time.Duration // measured window
	Warmup    time.Duration // run before the window, not measured
	Stateless bool          // skip initialize; send MCP-Protocol-Version on every call
	Protocol  string        // MCP protocol revision to announce
	Tool      string        // tool to call
	Args      string        // its arguments as a JSON object
	PID       int           // server process for CPU and RSS (0: not measured)
	Memstats  string        // expvar URL of the server for allocations (optional)
	Timeout   time.Duration // per request
	Round     int           // the side-by-side round this run belongs to (0: none)
	NewConn   bool          // a new connection per call instead of keep-alive (conns.go)
	Sources   int           // loopback source addresses the clients connect from (0, 1: one)
}

func (c *loadConfig) validate() error {
	switch {
	case c.URL == "":
		return errors.New("-url is required (the server's Streamable HTTP endpoint, e.g. http://127.0.0.1:3000/mcp)")
	case c.Clients < 1:
		return fmt.Errorf("-clients %d: need at least 1", c.Clients)
	case c.Duration <= 0:
		return fmt.Errorf("-duration %s: must be positive", c.Duration)
	case c.Warmup < 0:
		return fmt.Errorf("-warmup %s: must not be negative", c.Warmup)
	case c.Tool == "":
		return errors.New("-tool is required")
	}
	if c.Sources != 0 {
		if _, err := loopbackSources(c.Sources, c.URL); err != nil {
			return err
		}
	}
	if err := checkFileLimit(c.Clients); err != nil {
		return err
	}
	var probe map[string]any
	if err := json.Unmarshal([]byte(c.Args), &probe); err != nil {
		return fmt.Errorf("-args %q must be a JSON object: %w", c.Args, err)
	}
	return nil
}

// result is what a load run measured. Times are microseconds; -1 means "not measured".
type result struct {
	Label string `json:"label"`
	Mode  string `json:"mode"`
	// Conn is "keep-alive" or "new" (a new connection per call); Sources the
	// loopback addresses the clients connected from (conns.go).
	Conn         string   `json:"conn,omitempty"`
	Sources      int      `json:"sources,omitempty"`
	Clients      int      `json:"clients"`
	Seconds      float64  `json:"seconds"`
	Requests     int64    `json:"requests"`
	Errors       int64    `json:"errors"`
	ErrorSamples []string `json:"error_samples,omitempty"`
	RPS          float64  `json:"rps"`
	P50us        float64  `json:"p50_us"`
	P99us        float64  `json:"p99_us"`
	P999us       float64  `json:"p999_us"`
	MaxUs        float64  `json:"max_us"`
	CPUusPerCall float64  `json:"cpu_us_per_call"`
	// LoadCPUusPerCall is the load tool's own CPU per call: on a machine where it
	// shares the cores with the server, throughput is bounded by the sum of both.
	LoadCPUusPerCall float64 `json:"load_cpu_us_per_call"`
	RSSKB            int64   `json:"rss_kb"`
	PeakRSSKB        int64   `json:"peak_rss_kb"`
	AnonRSSKB        int64   `json:"anon_rss_kb"` // RssAnon at the window's end
	AllocPerCall     float64 `json:"alloc_bytes_per_call"`
	MallocPerCall    float64 `json:"mallocs_per_call"`
	// Round groups the runs of one side-by-side round, which follow each other within
	// seconds: summarize compares each server with the base of the same round.
	Round int `json:"round,omitempty"`
	// StealPct is the share of the machine's CPU time the hypervisor gave to others
	// during the window (/proc/stat's steal), -1 when unknown. On a shared host it is
	// what makes rounds differ; it is recorded so that a slow round can be told apart.
	StealPct float64 `json:"steal_pct"`
}

// errorLog counts errors and keeps the first few distinct messages.
type errorLog struct {
	mu      sync.Mutex
	n       int64
	samples []string
}

func (l *errorLog) add(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	msg := err.Error()
	if len(l.samples) < 5 && !slices.Contains(l.samples, msg) {
		l.samples = append(l.samples, msg)
	}
}

// runLoad runs cfg.Clients clients calling the tool as fast as the server answers:
// each opens its session (stateful mode) before the clock starts, calls through the
// warm-up, and then records every call that starts and ends inside the window.
func runLoad(ctx context.Context, cfg loadConfig) (*result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	sources, err := loopbackSources(max(cfg.Sources, 1), cfg.URL)
	if err != nil {
		return nil, err
	}
	clients := loadClients(cfg.Clients, cfg.Timeout, cfg.NewConn, sources)
	defer func() {
		for _, hc := range clients {
			hc.CloseIdleConnections()
		}
	}()
	params, err := json.Marshal(map[string]any{"name": cfg.Tool, "arguments": json.RawMessage(cfg.Args)})
	if err != nil {
		return nil, err
	}

	// Open every session first so that initialize cost is not part of the window.
	sessions := make([]*session, cfg.Clients)
	for i := range sessions {
		s := &session{hc: clients[i], url: cfg.URL, protocol: cfg.Protocol}
		if !cfg.Stateless {
			if err := s.open(ctx); err != nil {
				return nil, fmt.Errorf("client %d: open session at %s: %w", i, cfg.URL, err)
			}
			defer s.close(context.WithoutCancel(ctx))
		}
		sessions[i] = s
	}

	var errs errorLog
	start := time.Now()
	winStart := start.Add(cfg.Warmup)
	winEnd := winStart.Add(cfg.Duration)
	lat := make([][]time.Duration, cfg.Clients)
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := make([]time.Duration, 0, 4096)
			for ctx.Err() == nil {
				t0 := time.Now()
				if t0.After(winEnd) {
					break
				}
				_, _, err := s.call(ctx, "tools/call", params)
				t1 := time.Now()
				if err != nil {
					if ctx.Err() != nil {
						break
					}
					errs.add(err)
					continue
				}
				if !t0.Before(winStart) && !t1.After(winEnd) {
					rec = append(rec, t1.Sub(t0))
				}
			}
			lat[i] = rec
		}()
	}

	// Snapshot the server at the window's edges, on a connection of the tool's
	// own, not one of the clients'.
	statsClient := newHTTPClient(1, cfg.Timeout)
	defer statsClient.CloseIdleConnections()
	var cpu0, cpu1, self0, self1 time.Duration
	var ms0, ms1 memStats
	var st0, st1 machineTicks
	var snapErr error
	snapshot := func(cpu, self *time.Duration, ms *memStats, st *machineTicks) {
		*st, _ = readMachineTicks() // best effort: only the steal column depends on it
		if c, err := procCPU(os.Getpid()); err == nil {
			*self = c
		}
		if cfg.PID > 0 {
			c, err := procCPU(cfg.PID)
			if err != nil && snapErr == nil {
				snapErr = err
			}
			*cpu = c
		}
		if cfg.Memstats != "" {
			m, err := fetchMemStats(statsClient, cfg.Memstats)
			if err != nil && snapErr == nil {
				snapErr = err
			}
			*ms = m
		}
	}
	if sleepUntil(ctx, winStart) {
		snapshot(&cpu0, &self0, &ms0, &st0)
	}
	if sleepUntil(ctx, winEnd) {
		snapshot(&cpu1, &self1, &ms1, &st1)
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if snapErr != nil {
		return nil, snapErr
	}

	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	r := &result{
		Label: cfg.Label, Mode: mode(cfg.Stateless), Conn: connMode(cfg.NewConn), Sources: max(cfg.Sources, 1), Clients: cfg.Clients,
		Seconds: cfg.Duration.Seconds(), Requests: int64(len(all)),
		Errors: errs.n, ErrorSamples: errs.samples,
		CPUusPerCall: -1, LoadCPUusPerCall: -1, RSSKB: -1, PeakRSSKB: -1, AnonRSSKB: -1, AllocPerCall: -1, MallocPerCall: -1,
		Round: cfg.Round, StealPct: stealPct(st0, st1),
	}
	r.RPS = float64(len(all)) / cfg.Duration.Seconds()
	r.P50us = micros(percentile(all, 0.50))
	r.P99us = micros(percentile(all, 0.99))
	r.P999us = micros(percentile(all, 0.999))
	r.MaxUs = micros(percentile(all, 1))
	if n := float64(len(all)); n > 0 {
		r.LoadCPUusPerCall = micros(self1-self0) / n
		if cfg.PID > 0 {
			r.CPUusPerCall = micros(cpu1-cpu0) / n
		}
		if cfg.Memstats != "" {
			r.AllocPerCall = float64(ms1.TotalAlloc-ms0.TotalAlloc) / n
			r.MallocPerCall = float64(ms1.Mallocs-ms0.Mallocs) / n
		}
	}
	if cfg.PID > 0 {
		rss, peak, anon, err := procMemAnon(cfg.PID)
		if err != nil {
			return nil, err
		}
		r.RSSKB, r.PeakRSSKB, r.AnonRSSKB = rss, peak, anon
	}
	return r, nil
}

func mode(stateless bool) string {
	if stateless {
		return "stateless"
	}
	return "stateful"
}

// sleepUntil waits for t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// percentile of sorted durations by the nearest-rank method; 0 for no samples.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
