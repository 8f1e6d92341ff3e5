package httprerank

import (
	"math"
	"testing"
)

// FuzzParse feeds hostile answers to the answer check of each format: it never
// panics, and what it accepts scores each passage once with a number.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"results":[{"index":1,"relevance_score":0.5},{"index":0,"relevance_score":0.1}]}`), uint8(2), uint8(0))
	f.Add([]byte(`[{"index":0,"score":1}]`), uint8(1), uint8(2))
	f.Add([]byte(`{"results":[{"index":0,"relevance_score":1},{"index":0,"relevance_score":1}]}`), uint8(2), uint8(1))
	f.Add([]byte(`[{"index":-1,"score":1e308}]`), uint8(1), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, n, format uint8) {
		r := &Reranker{cfg: Config{Format: Formats[int(format)%len(Formats)]}}
		scores, err := r.parse(data, int(n%64))
		if err != nil {
			return
		}
		if len(scores) != int(n%64) {
			t.Fatalf("%d scores for %d passages", len(scores), n%64)
		}
		for _, s := range scores {
			if math.IsNaN(s) || math.IsInf(s, 0) {
				t.Fatalf("score %v accepted", s)
			}
		}
	})
}
