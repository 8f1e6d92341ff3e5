package app_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/exchange"
)

// BenchmarkConsolePages renders every console page of an application with
// 1,000 workflows while other goroutines drive exchanges through them as fast
// as they can: per page it reports the p50 and p99 of a page request (over
// real HTTP on the management listener, sign-in by API key), the exchanges
// per second the drivers got meanwhile, and the heap in use at the end.
func BenchmarkConsolePages(b *testing.B) {
	const workflows = 1000
	var y strings.Builder
	y.WriteString("helix:\n  console:\n    auth:\n      api_keys:\n        - {key: bench-operator-key, name: bench, roles: [operator]}\nworkflows:\n")
	for i := range workflows {
		fmt.Fprintf(&y, "  - id: w%04d\n    trigger: direct://w%04d\n    steps:\n      - set-header: {name: n, constant: \"%d\"}\n      - set-body: done\n", i, i, i)
	}
	cfg, err := config.LoadBytes("helix.yaml", []byte(y.String()))
	if err != nil {
		b.Fatal(err)
	}
	a, err := app.Build(cfg, quiet)
	if err != nil {
		b.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = a.Stop(ctx)
	}()
	lu, err := url.Parse(a.ConsoleURL())
	if err != nil {
		b.Fatal(err)
	}
	origin := "http://" + lu.Host

	// The traffic: drivers run exchanges round-robin over every workflow.
	stop := make(chan struct{})
	var ran atomic.Uint64
	var wg sync.WaitGroup
	for d := range max(1, runtime.GOMAXPROCS(0)-1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := d; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_ = a.Context().Run(context.Background(), fmt.Sprintf("w%04d", i%workflows), exchange.NewWithBody(exchange.InOut, "x"))
				ran.Add(1)
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()

	var paths []string
	for _, r := range app.ConsoleRoutes(a) {
		if r.Method == http.MethodGet && !strings.Contains(r.Pattern, "{") {
			paths = append(paths, r.Pattern)
		}
	}
	client := &http.Client{Timeout: 30 * time.Second}
	for _, p := range paths {
		b.Run(strings.Trim(strings.ReplaceAll(p, "/", "_"), "_"), func(b *testing.B) {
			times := make([]time.Duration, 0, b.N)
			startRan, start := ran.Load(), time.Now()
			for b.Loop() {
				t0 := time.Now()
				req, _ := http.NewRequest(http.MethodGet, origin+p, nil)
				req.Header.Set("X-API-Key", "bench-operator-key")
				resp, err := client.Do(req)
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
		})
	}
}
