package pgvector

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/arvenza/helix/internal/rag/ragsynth"
	"github.com/arvenza/helix/internal/testtools"
)

// BenchmarkSearchBM25 times keyword queries on ragsynth's chunks: the client's
// CPU and allocations per query (the server's share is measured by bench/rag's
// `rag pg-scale`). The corpus size is HELIX_RAG_PG_BENCH_CHUNKS, default 3,000.
func BenchmarkSearchBM25(b *testing.B) {
	u := testtools.PostgresURL(b)
	size := 3000
	if v, err := strconv.Atoi(os.Getenv("HELIX_RAG_PG_BENCH_CHUNKS")); err == nil && v > 0 {
		size = v
	}
	table := testtools.UniqueName("ragbench")
	b.Cleanup(func() {
		testtools.PostgresExec(b, u, "DROP TABLE IF EXISTS "+
			pgx.Identifier{table + "_terms"}.Sanitize()+", "+pgx.Identifier{table + "_df"}.Sanitize()+", "+
			pgx.Identifier{table + "_bm25_stats"}.Sanitize()+", "+pgx.Identifier{table + "_chunks"}.Sanitize()+", "+
			pgx.Identifier{table + "_documents"}.Sanitize()+", "+pgx.Identifier{table + "_meta"}.Sanitize())
	})
	ctx := context.Background()
	s, err := Open(ctx, Options{DSN: u, Table: table, Logger: quietLogger})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	gen := ragsynth.New(ragsynth.Config{Seed: 1})
	for i := range size {
		if err := s.Put(ctx, ragsynth.DocID(i), "h", gen.Chunks(i), nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := s.SearchKeyword(ctx, gen.Query(i%1000).Text, 10, nil); err != nil {
			b.Fatal(err)
		}
	}
}
