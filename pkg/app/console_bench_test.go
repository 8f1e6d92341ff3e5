package app_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/console/capture"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/exchange"
)

// consoleBenchRate is the exchanges per second the scale target
// names; consoleBenchWorkflows its number of workflows.
const (
	consoleBenchRate      = 10_000
	consoleBenchWorkflows = 1000
)

// BenchmarkConsolePages renders every console page of an application with
// 1,000 workflows (and an MCP tool and a durable run waiting for approval,
// for their detail pages) while drivers hold the exchanges through the
// engine's real path, console tracers on, at a paced 10,000 a second, and a
// live feed client reads the Exchanges stream. Per page it reports the p50
// and p99 of a page request (real HTTP on the management listener, API key),
// the exchanges per second reached meanwhile (below the target when the
// machine cannot hold it while rendering), and the heap in use and the RSS
// at the end.
func BenchmarkConsolePages(b *testing.B) {
	data := b.TempDir()
	extra := fmt.Sprintf(`  data_dir: %q
mcps:
  - id: bench
    addr: "127.0.0.1:0"
    expose: [greet]
tools:
  - id: greet
    description: Greets
    input:
      name: {type: string, required: true}
    output:
      greeting: {type: string}
    steps:
      - set-body: "hello"
  - id: ship
    description: Ships after an approval
    durable: true
    input:
      order: {type: string}
    output:
      done: {type: string}
    steps:
      - approve: {message: "Ship?"}
`, data)
	a := buildScale(b, scaleYAML(consoleBenchWorkflows, 2, "64MiB", extra))
	lu, err := url.Parse(a.ConsoleURL())
	if err != nil {
		b.Fatal(err)
	}
	origin := "http://" + lu.Host
	get := func(ctx context.Context, p string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, origin+p, nil)
		req.Header.Set("X-API-Key", "bench-operator-key")
		return http.DefaultClient.Do(req)
	}

	// A run waiting for its approval, for the Runs detail page.
	run, err := durable.For(a.Context()).Start(context.Background(), "ship", exchange.NewWithBody(exchange.InOut, `{"order":"7"}`), durable.StartOptions{})
	if err != nil {
		b.Fatal(err)
	}

	ran, stop := driveAt(a, consoleBenchRate, consoleBenchWorkflows)
	defer stop()

	// The live feed, open for the whole run, read as fast as it comes.
	feedCtx, feedStop := context.WithCancel(context.Background())
	defer feedStop()
	if resp, err := get(feedCtx, "/console/exchanges/feed"); err == nil {
		go func() { _, _ = io.Copy(io.Discard, resp.Body); resp.Body.Close() }()
	} else {
		b.Fatal(err)
	}

	var paths []string
	for _, r := range app.ConsoleRoutes(a) {
		if r.Method == http.MethodGet && !strings.Contains(r.Pattern, "{") {
			paths = append(paths, r.Pattern)
		}
	}
	// The detail pages: a workflow's graph, an exchange (the newest captured
	// when the round starts: at the default budget it stays in the ring for the
	// round), an MCP tool, a run.
	time.Sleep(200 * time.Millisecond)
	newest, _ := app.ConsoleCapture(a).List(capture.Filter{}, 1)
	if len(newest) == 0 {
		b.Fatal("nothing captured")
	}
	names := map[string]string{ // stable benchmark names for the pages of generated ids
		"/console/exchanges/" + newest[0].ID:      "console_exchanges_{id}",
		"/console/runs/" + url.PathEscape(run.ID): "console_runs_{id}",
	}
	paths = append(paths, "/console/workflows/w0500", "/console/exchanges/"+newest[0].ID,
		"/console/mcp/bench/tools/greet", "/console/runs/"+url.PathEscape(run.ID))

	for _, p := range paths {
		if stream(get, p) {
			continue // an event stream never ends: its pages' render is what is measured
		}
		name := names[p]
		if name == "" {
			name = strings.Trim(strings.ReplaceAll(p, "/", "_"), "_")
		}
		b.Run(name, func(b *testing.B) {
			times := make([]time.Duration, 0, b.N)
			startRan, start := ran.Load(), time.Now()
			for b.Loop() {
				t0 := time.Now()
				resp, err := get(context.Background(), p)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("GET %s: %d", p, resp.StatusCode)
				}
				times = append(times, time.Since(t0))
			}
			slices.Sort(times)
			q := func(f float64) float64 {
				return float64(times[min(len(times)-1, int(f*float64(len(times))))]) / float64(time.Millisecond)
			}
			b.ReportMetric(q(0.5), "p50-ms")
			b.ReportMetric(q(0.99), "p99-ms")
			b.ReportMetric(float64(ran.Load()-startRan)/time.Since(start).Seconds(), "exchanges/s")
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
			b.ReportMetric(rssMiB(), "rss-MiB")
		})
	}
}

// BenchmarkConsoleCaptureBudget floods an application, console on, with
// large bodies through the engine until its capture has filled and evicted
// its max_bytes (8 MiB, then 64 MiB), and reports, after a GC, the heap in
// use over the same application's heap before the flood, next to the
// budget: what the capture costs beyond its budget is the difference.
func BenchmarkConsoleCaptureBudget(b *testing.B) {
	for _, budget := range []int64{8 << 20, 64 << 20} {
		b.Run(fmt.Sprintf("max_bytes=%dMiB", budget>>20), func(b *testing.B) {
			for b.Loop() {
				a, stopApp := buildScaleStop(b, scaleYAML(consoleBenchWorkflows, 8, fmt.Sprintf("%dMiB", budget>>20), ""))
				c := app.ConsoleCapture(a)
				base := heapInuse()
				body := strings.Repeat("a large body ", 16<<10) // 208 KB: every snapshot is cut at the body limit
				flood := func(until func() bool) {
					var wg sync.WaitGroup
					var done atomic.Bool
					for d := range 4 {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for i := d; !done.Load(); i += 4 {
								_ = a.Context().Run(context.Background(), fmt.Sprintf("w%04d", i%consoleBenchWorkflows), exchange.NewWithBody(exchange.InOut, body))
							}
						}()
					}
					for !until() {
						time.Sleep(10 * time.Millisecond)
					}
					done.Store(true)
					wg.Wait()
				}
				// Fill the budget, then flood on until the newest capture of
				// the full ring has been evicted: the whole ring turned over.
				flood(func() bool { return c.Stats().Bytes >= budget*9/10 })
				last, _ := c.List(capture.Filter{}, 1)
				if len(last) == 0 {
					b.Fatal("nothing captured")
				}
				flood(func() bool { return c.Get(last[0].ID) == nil })
				st := c.Stats()
				heap := heapInuse()
				b.ReportMetric(float64(budget)/(1<<20), "budget-MiB")
				b.ReportMetric(float64(st.Bytes)/(1<<20), "captured-MiB")
				b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
				b.ReportMetric((float64(heap)-float64(base))/(1<<20), "heap-over-start-MiB")
				b.ReportMetric(rssMiB(), "rss-MiB")
				stopApp() // the next round's start heap holds no capture of this one
			}
		})
	}
}

// driveAt runs exchanges round-robin over workflows w0000… at rate a second
// (paced: each driver keeps a schedule and sleeps until its next slot; a
// driver more than 100 ms behind drops its backlog instead of bursting). It
// returns the count of exchanges run and the function that stops the drivers.
func driveAt(a *app.App, rate, workflows int) (*atomic.Uint64, func()) {
	drivers := 4 * runtime.GOMAXPROCS(0)
	every := time.Duration(drivers) * time.Second / time.Duration(rate)
	var ran atomic.Uint64
	quit := make(chan struct{})
	var wg sync.WaitGroup
	for d := range drivers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := time.Now().Add(time.Duration(d) * every / time.Duration(drivers))
			for i := d; ; i += drivers {
				select {
				case <-quit:
					return
				default:
				}
				if wait := time.Until(next); wait > 0 {
					time.Sleep(wait)
				} else if wait < -100*time.Millisecond {
					next = time.Now()
				}
				next = next.Add(every)
				_ = a.Context().Run(context.Background(), fmt.Sprintf("w%04d", i%workflows), exchange.NewWithBody(exchange.InOut, "x"))
				ran.Add(1)
			}
		}()
	}
	return &ran, func() { close(quit); wg.Wait() }
}

// stream reports whether GET p answers with an event stream (a live feed).
func stream(get func(context.Context, string) (*http.Response, error), p string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := get(ctx, p)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
}

func heapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// rssMiB is the process's resident set (VmRSS), 0 where /proc is absent.
func rssMiB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
