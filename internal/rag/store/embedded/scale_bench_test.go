package embedded

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/ragsynth"
)

// BenchmarkScale fills a store with synthetic one-chunk documents
// (internal/rag/ragsynth, seed 1) and measures, at each size:
//
//   - ingest-docs/s and open-s (closing and reopening the filled store);
//   - heap-MB (live heap after a GC) and rss-MB once reopened;
//   - the keyword query's p50-ms and p99-ms (wall), cpu-p50-ms and cpu-p99-ms
//     (the querying thread's CPU time, which a busy machine does not inflate
//     as it does wall time) and cpu-ms/op (the process's, GC included).
//
// Sizes come from HELIX_RAG_SCALE (comma-separated chunk counts, default
// 10000), so the million-chunk run is asked for, never a default:
//
//	HELIX_RAG_SCALE=10000,100000,1000000 HELIX_RAG_SCALE_DIR=/tmp/x \
//	  go test ./internal/rag/store/embedded -run '^$' -bench Scale -benchtime 2000x
//
// HELIX_RAG_SCALE_DIM=384 stores vectors too (default: keyword only);
// HELIX_RAG_SCALE_HEAPPROFILE=path writes the reopened store's heap profile
// to path.<size>;
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
	if err := os.MkdirAll(base, 0o755); err != nil {
		b.Fatal(err)
	}
	dir, err := os.MkdirTemp(base, "ragindex-scale-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	g := ragsynth.New(ragsynth.Config{Seed: 1, Dim: max(dim, 1)})
	// Opened without the test helper: nothing keeps this first store (and its
	// index) alive once closed, so the heap measured is the reopened one's.
	s, err := Open(dir, Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	// Two writers of batches of 256 documents: analysis runs on both cores,
	// fsyncs are shared (group commit).
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lo := w * 256; lo < size; lo += 512 {
				batch := make([]rag.PutDoc, 0, 256)
				for i := lo; i < min(lo+256, size); i++ {
					d := g.Document(i)
					var vecs [][]float32
					if dim > 0 {
						vecs = [][]float32{g.Vector(i)}
					}
					batch = append(batch, rag.PutDoc{ID: d.ID, Hash: d.Hash(), Chunks: g.Chunks(i), Vectors: vecs})
				}
				for _, err := range s.PutBatch(ctx, batch) {
					if err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
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
	if p := os.Getenv("HELIX_RAG_SCALE_HEAPPROFILE"); p != "" {
		if f, err := os.Create(fmt.Sprintf("%s.%d", p, size)); err == nil {
			pprof.WriteHeapProfile(f)
			f.Close()
		}
	}

	queries := make([]string, 1000)
	for i := range queries {
		queries[i] = g.Query(i).Text
	}
	times := make([]time.Duration, 0, 4096)
	cpuTimes := make([]time.Duration, 0, 4096)
	// The query's own CPU time (its thread's), which waiting for a core on a
	// busy machine does not inflate: its p99 is the latency on an idle core.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t, c := time.Now(), threadCPUTime()
		if _, err := s.SearchKeyword(ctx, queries[i%len(queries)], 10, nil); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t))
		cpuTimes = append(cpuTimes, threadCPUTime()-c)
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	slices.Sort(times)
	slices.Sort(cpuTimes)
	pct := func(ts []time.Duration, p int) float64 {
		return float64(ts[min(len(ts)-1, len(ts)*p/100)].Nanoseconds()) / 1e6
	}
	b.ReportMetric(pct(times, 50), "p50-ms")
	b.ReportMetric(pct(times, 99), "p99-ms")
	b.ReportMetric(pct(cpuTimes, 50), "cpu-p50-ms")
	b.ReportMetric(pct(cpuTimes, 99), "cpu-p99-ms")
	b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(len(times)), "cpu-ms/op")
	b.ReportMetric(float64(size)/ingest.Seconds(), "ingest-docs/s")
	b.ReportMetric(opened.Seconds(), "open-s")
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MB")
	b.ReportMetric(float64(rssBytes())/(1<<20), "rss-MB")
	// The same once the runtime gave back the heap it no longer uses (the
	// ingest's, mostly): what the opened store itself keeps resident.
	debug.FreeOSMemory()
	b.ReportMetric(float64(rssBytes())/(1<<20), "rss-released-MB")
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
