package rag

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func hits(ids ...string) []Hit {
	out := make([]Hit, len(ids))
	for i, id := range ids {
		out[i] = Hit{Chunk: Chunk{ID: id}, Score: float64(len(ids) - i)}
	}
	return out
}

func ids(hs []Hit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Chunk.ID
	}
	return out
}

// A chunk both arms rank well beats one that only one arm ranks first; ties keep
// the order of first appearance.
func TestFuseRRF(t *testing.T) {
	got := FuseRRF(3, hits("a", "b", "c"), hits("d", "b", "c"))
	if want := []string{"b", "c", "a"}; !reflect.DeepEqual(ids(got), want) {
		t.Fatalf("fused %v, want %v", ids(got), want)
	}
	if want := 2.0 / 62; got[0].Score != want {
		t.Errorf("b scores %v, want %v", got[0].Score, want)
	}
}

func TestFilterMatches(t *testing.T) {
	md := map[string]any{"lang": "en", "year": int64(2024)}
	for _, tc := range []struct {
		f    Filter
		want bool
	}{
		{nil, true},
		{Filter{"lang": "en"}, true},
		{Filter{"year": 2024.0}, true},
		{Filter{"year": "2024"}, false},
		{Filter{"lang": "de"}, false},
		{Filter{"missing": "x"}, false},
	} {
		if got := tc.f.Matches(md); got != tc.want {
			t.Errorf("%v.Matches = %v, want %v", tc.f, got, tc.want)
		}
	}
}

// keywordOnly is a store whose vector side is empty.
type keywordOnly struct{ Store }

func (keywordOnly) SearchKeyword(context.Context, string, int, Filter) ([]Hit, error) {
	return hits("k1", "k2"), nil
}

// Without an embedder, hybrid falls back to keyword search; vector search is an
// error that says what is missing.
func TestRetrieveWithoutEmbedder(t *testing.T) {
	got, err := Retrieve(context.Background(), keywordOnly{}, nil, Query{Text: "q"})
	if err != nil || !reflect.DeepEqual(ids(got), []string{"k1", "k2"}) {
		t.Fatalf("hybrid without embedder: %v, %v", ids(got), err)
	}
	if _, err := Retrieve(context.Background(), keywordOnly{}, nil, Query{Text: "q", Strategy: StrategyVector}); err == nil {
		t.Fatal("vector search without embedder succeeded")
	}
	got, _ = Retrieve(context.Background(), keywordOnly{}, nil, Query{Text: "q", MinScore: 2})
	if !reflect.DeepEqual(ids(got), []string{"k1"}) {
		t.Errorf("min_score kept %v", ids(got))
	}
}

// fixedStore returns its hits, at most n, to any search.
type fixedStore struct {
	Store
	hits []Hit
}

func (s fixedStore) SearchKeyword(_ context.Context, _ string, n int, _ Filter) ([]Hit, error) {
	return s.hits[:min(n, len(s.hits))], nil
}

func TestTopKIsCapped(t *testing.T) {
	st := fixedStore{hits: hits("a", "b", "c")}
	for _, q := range []Query{
		{Text: "q", TopK: 1_000_000},
		{Text: "q", TopK: DefaultMaxTopK + 1},
		{Text: "q", TopK: 11, MaxTopK: 10},
	} {
		_, err := Retrieve(context.Background(), st, nil, q)
		limit := q.MaxTopK
		if limit == 0 {
			limit = DefaultMaxTopK
		}
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("top_k %d is more than this pipeline returns (max_top_k %d)", q.TopK, limit)) {
			t.Errorf("top_k %d, max %d: %v", q.TopK, q.MaxTopK, err)
		}
	}
	for _, q := range []Query{{Text: "q", TopK: DefaultMaxTopK}, {Text: "q", TopK: 500, MaxTopK: 500}} {
		if got, err := Retrieve(context.Background(), st, nil, q); err != nil || len(got) != 3 {
			t.Errorf("top_k %d within max %d: %v, %v", q.TopK, q.MaxTopK, ids(got), err)
		}
	}
}

func hitSizes(hs []Hit) (total int) {
	for _, h := range hs {
		total += hitBytes(h)
	}
	return total
}

func TestResultsAreBoundedInBytes(t *testing.T) {
	big := strings.Repeat("é", 400_000) // 800,000 bytes, two per rune
	var hs []Hit
	for i := range 10 {
		hs = append(hs, Hit{Chunk: Chunk{ID: fmt.Sprint(i), Text: big, Headings: []string{"H"}, Metadata: map[string]any{"source": "s.md"}}, Score: 1})
	}
	st := fixedStore{hits: hs}
	got, err := Retrieve(context.Background(), st, nil, Query{Text: "q", TopK: 10})
	if err != nil {
		t.Fatal(err)
	}
	if n := hitSizes(got); n > DefaultMaxResultBytes {
		t.Fatalf("%d hits of %d bytes, more than %d", len(got), n, DefaultMaxResultBytes)
	}
	if len(got) != 2 || got[0].Chunk.Text != big {
		t.Fatalf("got %d hits; the first must be whole", len(got))
	}
	last := got[len(got)-1].Chunk.Text
	if !utf8.ValidString(last) || !strings.HasSuffix(last, "[cut here: the results are limited to 1048576 bytes (max_result_bytes); 8 more passages not shown]") {
		t.Fatalf("the cut passage ends %q", last[max(0, len(last)-200):])
	}
	if hs[1].Chunk.Text != big {
		t.Fatal("cutting a result changed the store's chunk")
	}

	got, err = Retrieve(context.Background(), st, nil, Query{Text: "q", TopK: 10, MaxBytes: 1000})
	if err != nil || len(got) != 1 || hitSizes(got) > 1000 {
		t.Fatalf("max 1000 bytes: %d hits, %d bytes, %v", len(got), hitSizes(got), err)
	}

	huge := Hit{Chunk: Chunk{ID: "m", Text: "t", Metadata: map[string]any{"blob": strings.Repeat("x", 5000)}}}
	_, err = Retrieve(context.Background(), fixedStore{hits: []Hit{huge}}, nil, Query{Text: "q", MaxBytes: 1000})
	if err == nil || !strings.Contains(err.Error(), "max_result_bytes") {
		t.Fatalf("a passage whose metadata alone is too large: %v", err)
	}
}
