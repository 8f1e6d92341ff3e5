package embedded

import (
	"github.com/arvenza/helix/internal/rag"

	"fmt"
	"slices"
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
