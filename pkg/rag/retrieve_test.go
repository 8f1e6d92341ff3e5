package rag

import (
	"context"
	"reflect"
	"testing"
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
