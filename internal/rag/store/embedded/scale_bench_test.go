package embedded

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/rag/ragsynth"
)

// BenchmarkScale fills a store with synthetic one-chunk documents
// (internal/rag/ragsynth, seed 1) and measures, at each size:
//
//   - ingest-docs/s and open-s (closing and reopening the filled store);
//   - heap-MB (live heap after a GC) and rss-MB once reopened;
//   - the keyword query's p50-ms and p99-ms, and cpu-ms/op (process CPU time
//     per query, which a busy machine does not inflate as it does wall time).
//
// Sizes come from HELIX_RAG_SCALE (comma-separated chunk counts, default
// 10000), so the million-chunk run is asked for, never a default:
//
//	HELIX_RAG_SCALE=10000,100000,1000000 HELIX_RAG_SCALE_DIR=/tmp/x \
//	  go test ./internal/rag/store/embedded -run '^$' -bench Scale -benchtime 2000x
//
// HELIX_RAG_SCALE_DIM=384 stores vectors too (default: keyword only);
// HELIX_RAG_SCALE_DIR puts the stores there (default: the test's temporary
// directory), removed after each size.
func BenchmarkScale(b *testing.B) {
	sizes := []int{10_000}
	if v := os.Getenv("HELIX_RAG_SCALE"); v != "" {
		sizes = sizes[:0]
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				b.Fatalf("HELIX_RAG_SCALE=%q: want comma-separated chunk counts", v)
			}
			sizes = append(sizes, n)
		}
	}
	dim := 0
	if v := os.Getenv("HELIX_RAG_SCALE_DIM"); v != "" {
		var err error
		if dim, err = strconv.Atoi(v); err != nil || dim < 0 {
			b.Fatalf("HELIX_RAG_SCALE_DIM=%q: want a dimension", v)
		}
	}
	for _, size := range sizes {
		b.Run(fmt.Sprintf("chunks=%d", size), func(b *testing.B) { benchScale(b, size, dim) })
	}
}

func benchScale(b *testing.B, size, dim int) {
	base := os.Getenv("HELIX_RAG_SCALE_DIR")
	if base == "" {
		base = b.TempDir()
	}
	dir, err := os.MkdirTemp(base, "ragindex-scale-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	g := ragsynth.New(ragsynth.Config{Seed: 1, Dim: max(dim, 1)})
	s, _ := open(b, dir, Options{NoSync: true})
	start := time.Now()
	for i := range size {
		d := g.Document(i)
		var vecs [][]float32
		if dim > 0 {
			vecs = [][]float32{g.Vector(i)}
		}
		if err := s.Put(ctx, d.ID, d.Hash(), g.Chunks(i), vecs); err != nil {
			b.Fatal(err)
		}
	}
	ingest := time.Since(start)
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	start = time.Now()
	s, _ = open(b, dir, Options{NoSync: true})
	opened := time.Since(start)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)

	queries := make([]string, 1000)
	for i := range queries {
		queries[i] = g.Query(i).Text
	}
	times := make([]time.Duration, 0, 4096)
	cpu0 := cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t := time.Now()
		if _, err := s.SearchKeyword(ctx, queries[i%len(queries)], 10, nil); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t))
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	slices.Sort(times)
	pct := func(p int) float64 { return float64(times[min(len(times)-1, len(times)*p/100)].Nanoseconds()) / 1e6 }
	b.ReportMetric(pct(50), "p50-ms")
	b.ReportMetric(pct(99), "p99-ms")
	b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(len(times)), "cpu-ms/op")
	b.ReportMetric(float64(size)/ingest.Seconds(), "ingest-docs/s")
	b.ReportMetric(opened.Seconds(), "open-s")
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MB")
	b.ReportMetric(float64(rssBytes())/(1<<20), "rss-MB")
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rssBytes is the process's resident set size (Linux; 0 elsewhere).
func rssBytes() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if kb, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")), 10, 64)
			return n << 10
		}
	}
	return 0
}
