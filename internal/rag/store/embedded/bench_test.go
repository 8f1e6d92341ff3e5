package embedded

import (
	"github.com/arvenza/helix/internal/rag"

	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// benchStore fills a store with 5,000 synthetic documents of 3 chunks each,
// with 384-dimensional vectors (the size of small sentence-embedding models).
func benchStore(b *testing.B) (*Store, *corpus) {
	b.Helper()
	s, _ := open(b, b.TempDir(), Options{NoSync: true})
	c := newCorpus(42, 384)
	for i := range 5000 {
		id := fmt.Sprintf("doc%d", i)
		hash, cs, vecs := c.doc(id, 3)
		mustPut(b, s, id, hash, cs, vecs)
	}
	return s, c
}

// reportLatency adds the 99th percentile of the per-query times.
func reportLatency(b *testing.B, times []time.Duration) {
	if len(times) == 0 {
		return
	}
	slices.Sort(times)
	p99 := times[min(len(times)-1, len(times)*99/100)]
	b.ReportMetric(float64(p99.Nanoseconds())/1e6, "p99-ms")
}

func BenchmarkSearchKeyword(b *testing.B) {
	s, c := benchStore(b)
	queries := make([]string, 256)
	for i := range queries {
		queries[i] = c.text(2 + i%8)
	}
	times := make([]time.Duration, 0, 1024)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		if _, err := s.SearchKeyword(ctx, queries[i%len(queries)], 10, nil); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	reportLatency(b, times)
}

func BenchmarkSearchVector(b *testing.B) {
	s, c := benchStore(b)
	queries := make([][]float32, 64)
	for i := range queries {
		queries[i] = c.vector()
	}
	times := make([]time.Duration, 0, 1024)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		if _, err := s.SearchVector(ctx, queries[i%len(queries)], 10, nil); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	reportLatency(b, times)
}

// BenchmarkPut measures ingest of 3-chunk documents with 384-dimensional
// vectors, with and without an fsync per put.
func BenchmarkPut(b *testing.B) {
	for _, noSync := range []bool{false, true} {
		b.Run(fmt.Sprintf("nosync=%v", noSync), func(b *testing.B) {
			s, _ := open(b, b.TempDir(), Options{NoSync: noSync})
			c := newCorpus(7, 384)
			type doc struct {
				hash string
				cs   []rag.Chunk
				vecs [][]float32
			}
			docs := make([]doc, 256)
			for i := range docs {
				docs[i].hash, docs[i].cs, docs[i].vecs = c.doc(fmt.Sprintf("doc%d", i), 3)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				d := docs[i%len(docs)]
				mustPut(b, s, d.cs[0].DocID, d.hash, d.cs, d.vecs) // replacing: compactions included
			}
		})
	}
}

// BenchmarkIngest measures documents/s into a store with an fsync per commit
// (durability on), for small documents of one or two 40-word chunks,
// keyword-only and with 384-dimensional vectors: one writer calling Put,
// 16 concurrent writers calling Put (as pipeline workers do), and 4 writers
// calling PutBatch with 64 documents each.
func BenchmarkIngest(b *testing.B) {
	for _, dim := range []int{0, 384} {
		c := newCorpus(11, dim)
		pool := make([]rag.PutDoc, 4096)
		for i := range pool {
			_, cs, vecs := c.doc("", 1+i%2)
			for j := range cs {
				cs[j].DocID = ""
			}
			pool[i] = rag.PutDoc{Hash: "h", Chunks: cs, Vectors: vecs}
		}
		for _, mode := range []struct {
			name    string
			writers int
			batch   int
		}{{"put-1", 1, 1}, {"put-16", 16, 1}, {"putbatch-4x64", 4, 64}} {
			b.Run(fmt.Sprintf("dim=%d/%s", dim, mode.name), func(b *testing.B) {
				s, _ := open(b, b.TempDir(), Options{})
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cpuTime()
				start := time.Now()
				for range mode.writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						docs := make([]rag.PutDoc, 0, mode.batch)
						for {
							first := next.Add(int64(mode.batch)) - int64(mode.batch)
							if first >= int64(b.N) {
								return
							}
							docs = docs[:0]
							for i := first; i < min(first+int64(mode.batch), int64(b.N)); i++ {
								d := pool[i%int64(len(pool))]
								d.ID = "doc" + strconv.FormatInt(i, 10)
								docs = append(docs, d)
							}
							if len(docs) == 1 {
								if err := s.Put(ctx, docs[0].ID, docs[0].Hash, docs[0].Chunks, docs[0].Vectors); err != nil {
									b.Error(err)
									return
								}
								continue
							}
							for _, err := range s.PutBatch(ctx, docs) {
								if err != nil {
									b.Error(err)
									return
								}
							}
						}
					}()
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "docs/s")
				b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/doc")
			})
		}
	}
}

// BenchmarkCompaction measures a background compaction of a store of 60,000
// one- or two-chunk documents (90,000 chunks), all replaced once (so half the
// log is garbage): how long it takes and how long writers waited for it (its
// snapshot and its switch), while another goroutine keeps writing.
func BenchmarkCompaction(b *testing.B) {
	const docs = 60_000
	c := newCorpus(13, 0)
	pool := make([]rag.PutDoc, 4096)
	for i := range pool {
		_, cs, _ := c.doc("", 1+i%2)
		pool[i] = rag.PutDoc{Hash: "h", Chunks: cs}
	}
	batch := func(s *Store, first, n int) {
		var ds []rag.PutDoc
		for i := first; i < first+n; i++ {
			d := pool[i%len(pool)]
			d.ID = "doc" + strconv.Itoa(i%docs)
			ds = append(ds, d)
		}
		for _, err := range s.PutBatch(ctx, ds) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	var total, held time.Duration
	for b.Loop() {
		b.StopTimer()
		s, _ := open(b, b.TempDir(), Options{NoSync: true, CompactMinGarbage: 1 << 40})
		for i := 0; i < 2*docs; i += 1000 {
			batch(s, i, 1000)
		}
		s.minGarb = 1
		b.StartTimer()
		start := time.Now()
		var stop atomic.Bool
		writing := make(chan struct{})
		go func() {
			defer close(writing)
			for i := 0; !stop.Load(); i += 10 {
				batch(s, i, 10)
			}
		}()
		s.settle()
		total += time.Since(start)
		stop.Store(true)
		<-writing
		s.writeMu.Lock()
		held += s.lastCompaction.held
		s.writeMu.Unlock()
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/compaction")
	b.ReportMetric(float64(held.Milliseconds())/float64(b.N), "writers-held-ms")
}
