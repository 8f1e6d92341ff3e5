package embedded

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/rag"
)

// The keyword arm filters before it ranks: with a filter that only a few
// weakly matching chunks pass, among many that match the query better, top_k
// hits still come back when at least top_k chunks pass (no post-filter
// emptiness), best first. Nested and list-valued metadata filter the same
// after a restart, and a filter that cannot be used is an error, not an empty
// answer.
func TestKeywordFilterBeforeRanking(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, _ := open(t, dir, Options{})
	const docs, tenantEvery = 400, 40 // 10 chunks of tenant "t"
	for i := range docs {
		meta := map[string]any{"tenant": "other", "tags": []any{"a", "b"}, "owner": map[string]any{"team": "ops"}}
		// The other tenants' chunks are short and say "invoice" thrice: they
		// outrank every chunk of tenant t, which says it once among filler.
		text := "invoice invoice invoice"
		if i%tenantEvery == 0 {
			meta = map[string]any{"tenant": "t", "tags": []any{"billing", fmt.Sprint("n", i)}, "owner": map[string]any{"team": "core", "level": float64(i)}}
			text = "invoice " + strings.Repeat("filler words about nothing much ", 5+i/tenantEvery)
		}
		mustPut(t, s, fmt.Sprint("d", i), "h", chunks(fmt.Sprint("d", i), meta, text), nil)
	}
	check := func(s *Store, when string) {
		t.Helper()
		ctx := context.Background()
		for _, c := range []struct {
			filter rag.Filter
			want   []string
		}{
			{rag.Filter{"tenant": "t"}, []string{"d0#0", "d40#0", "d80#0", "d120#0", "d160#0"}},
			{rag.Filter{"tags": "billing", "owner.level": map[string]any{"$gte": 200}}, []string{"d200#0", "d240#0", "d280#0", "d320#0", "d360#0"}},
			{rag.Filter{"$or": []any{map[string]any{"tags": "n80"}, map[string]any{"tags": "n360"}}}, []string{"d80#0", "d360#0"}},
			{rag.Filter{"owner.team": "core", "$not": map[string]any{"tags": map[string]any{"$in": []any{"n0", "n40"}}}}, []string{"d80#0", "d120#0", "d160#0", "d200#0", "d240#0"}},
		} {
			hits, err := s.SearchKeyword(ctx, "invoice", 5, c.filter)
			if err != nil {
				t.Fatalf("%s %v: %v", when, c.filter, err)
			}
			if got := ids(hits); strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Errorf("%s %v: %v, want %v", when, c.filter, got, c.want)
			}
		}
		if _, err := s.SearchKeyword(ctx, "invoice", 5, rag.Filter{"tenant": map[string]any{"$regex": "."}}); err == nil ||
			!strings.Contains(err.Error(), `filter.tenant.$regex: unknown operator "$regex"`) {
			t.Errorf("%s: a bad filter gives %v", when, err)
		}
	}
	check(s, "open")
	s.Close()
	s, _ = open(t, dir, Options{})
	check(s, "after a restart")
}

// BenchmarkKeywordFilter is a keyword query whose filter only one chunk in
// 40 passes: the filter's cost per query (parsed once, evaluated per
// candidate).
func BenchmarkKeywordFilter(b *testing.B) {
	s, _ := open(b, b.TempDir(), Options{})
	for i := range 4000 {
		meta := map[string]any{"tenant": fmt.Sprint("t", i%40), "year": float64(2000 + i%25)}
		mustPut(b, s, fmt.Sprint("d", i), "h", chunks(fmt.Sprint("d", i), meta, fmt.Sprintf("invoice %d for the printer repair and the server rack", i)), nil)
	}
	f := rag.Filter{"tenant": "t7", "year": map[string]any{"$gte": 2010}}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		hits, err := s.SearchKeyword(ctx, "printer invoice", 10, f)
		if err != nil || len(hits) != 10 {
			b.Fatalf("%d hits, %v", len(hits), err)
		}
	}
}
