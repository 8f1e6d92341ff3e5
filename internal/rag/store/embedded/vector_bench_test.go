package embedded

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/rag"
)

// BenchmarkVectorIndex fills a store with one-chunk documents of 384-dim
// Gaussian-mixture vectors, lets the index build, and reports per size:
// recall@10 against the exact search, approximate query p50/p99 and CPU per
// query, the exact query's p50, the put rate, the CPU per vector of puts and
// index build together, the wait for the build after the last put, and the
// Go heap in use. Sizes come from
// HELIX_BENCH_ANN_SIZES (comma-separated; 20000 when unset, so that
// bench-smoke stays quick): the scale run sets 100000,1000000.
//
//	HELIX_BENCH_ANN_SIZES=100000,1000000 go test -run '^$' -bench VectorIndex -benchtime 200x ./internal/rag/store/embedded
func BenchmarkVectorIndex(b *testing.B) {
	sizes := []int{20000}
	if env := os.Getenv("HELIX_BENCH_ANN_SIZES"); env != "" {
		sizes = nil
		for _, f := range strings.Split(env, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				b.Fatalf("HELIX_BENCH_ANN_SIZES: %q is not a positive number", f)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) { benchVectorIndex(b, n) })
	}
}

func benchVectorIndex(b *testing.B, n int) {
	const dim = 384
	dir := os.Getenv("HELIX_BENCH_DIR") // a disk with room; the test's temp dir when unset
	if dir == "" {
		dir = b.TempDir()
	} else {
		var err error
		if dir, err = os.MkdirTemp(dir, "ann-bench-*"); err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(dir)
	}
	s, logs := open(b, dir, Options{NoSync: true})
	m := newMixture(1, dim, max(10, min(1000, n/100)))
	start, cpuStart := time.Now(), cpuTime()
	for i := range n {
		v, _ := m.Vector()
		id := "d" + strconv.Itoa(i)
		if err := s.Put(ctx, id, "h", []rag.Chunk{{Index: 0, Text: "t"}}, [][]float32{v}); err != nil {
			b.Fatal(err)
		}
	}
	putTime := time.Since(start)
	buildStart := time.Now()
	s.vi.wg.Wait()
	buildWait := time.Since(buildStart)
	// Puts and the index build (which overlaps them from the threshold on).
	ingestCPU := cpuTime() - cpuStart
	if s.vi.ann == nil {
		b.Skipf("no index at %d vectors (threshold %d); logs:\n%s", n, s.vi.threshold, logs)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)

	queries := make([][]float32, 100)
	for i := range queries {
		queries[i], _ = m.Vector()
	}
	// The exact answers, and the exact search's latency, with the index
	// switched off.
	threshold := s.vi.threshold
	s.vi.threshold = math.MaxInt
	exact := make([][]string, len(queries))
	var exactTimes []time.Duration
	for i, q := range queries {
		t0 := time.Now()
		hits, err := s.SearchVector(ctx, q, 10, nil)
		if err != nil {
			b.Fatal(err)
		}
		exactTimes = append(exactTimes, time.Since(t0))
		exact[i] = ids(hits)
	}
	s.vi.threshold = threshold
	var sum float64
	for i, q := range queries {
		hits, err := s.SearchVector(ctx, q, 10, nil)
		if err != nil {
			b.Fatal(err)
		}
		sum += overlap(hits, exact[i])
	}
	times := make([]time.Duration, 0, 1024)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		if _, err := s.SearchVector(ctx, queries[i%len(queries)], 10, nil); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t0))
	}
	b.StopTimer()
	queryCPU := cpuTime() - cpu
	pct := func(ts []time.Duration, p int) float64 {
		ts = slices.Clone(ts)
		slices.Sort(ts)
		return float64(ts[min(len(ts)-1, len(ts)*p/100)].Microseconds()) / 1000
	}
	b.ReportMetric(sum/float64(len(queries)), "recall@10")
	b.ReportMetric(pct(times, 50), "p50-ms")
	b.ReportMetric(pct(times, 99), "p99-ms")
	b.ReportMetric(pct(exactTimes, 50), "exact-p50-ms")
	b.ReportMetric(float64(queryCPU.Microseconds())/1000/float64(b.N), "cpu-ms/query")
	b.ReportMetric(float64(n)/putTime.Seconds(), "puts/s")
	b.ReportMetric(float64(ingestCPU.Microseconds())/float64(n), "cpu-us/vector-ingested")
	b.ReportMetric(buildWait.Seconds(), "build-wait-s")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
	b.Logf("n=%d lists=%d: %s", n, s.vi.ann.Lists(), strings.TrimSpace(logs.String()))
}
