package main

import (
	"math"
	"slices"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// The example is worked by hand. Run: d1 3, d2 2, d3 2, d4 1; trec_eval breaks the
// d2/d3 tie by id descending, so the ranking is d1 d3 d2 d4. Judgements: d2 2,
// d3 1, d5 1 (never retrieved), d4 0.
//
//	DCG@10  = 0 + 1/log2(3) + 2/log2(4) + 0     = 0.63093 + 1     = 1.63093
//	IDCG@10 = 2/log2(2) + 1/log2(3) + 1/log2(4) = 2 + 0.63093 + 0.5 = 3.13093
//	nDCG@10 = 0.520909;  nDCG@2 = 0.63093 / 2.63093 = 0.239812
//	recall@3 = 2/3 (d3, d2 of d2, d3, d5); recall@1 = 0
var (
	exampleRun = []RankedDoc{{"d1", 3}, {"d2", 2}, {"d3", 2}, {"d4", 1}}
	exampleRel = map[string]int{"d2": 2, "d3": 1, "d5": 1, "d4": 0}
)

func TestNDCGHandComputed(t *testing.T) {
	if got, want := NDCG(exampleRun, exampleRel, 10), 0.5209090851403014; !near(got, want) {
		t.Errorf("nDCG@10 = %.15f, want %.15f", got, want)
	}
	if got, want := NDCG(exampleRun, exampleRel, 2), 0.23981246656813146; !near(got, want) {
		t.Errorf("nDCG@2 = %.15f, want %.15f", got, want)
	}
	// The order the run is given in does not matter, only scores and ids.
	reversed := slices.Clone(exampleRun)
	slices.Reverse(reversed)
	if got := NDCG(reversed, exampleRel, 10); !near(got, 0.5209090851403014) {
		t.Errorf("nDCG@10 of the reversed run = %v", got)
	}
}

func TestNDCGEdges(t *testing.T) {
	perfect := []RankedDoc{{"a", 2}, {"b", 1}}
	if got := NDCG(perfect, map[string]int{"a": 2, "b": 1}, 10); !near(got, 1) {
		t.Errorf("perfect run: %v, want 1", got)
	}
	// Grades are linear gains: the grade-2 document first beats the grade-1 one first.
	swapped := []RankedDoc{{"a", 1}, {"b", 2}}
	if got := NDCG(swapped, map[string]int{"a": 2, "b": 1}, 10); got >= 1 || got <= 0 {
		t.Errorf("swapped run: %v, want in (0, 1)", got)
	}
	if got := NDCG(nil, map[string]int{"a": 1}, 10); got != 0 {
		t.Errorf("empty run: %v, want 0", got)
	}
	if got := NDCG(perfect, map[string]int{"x": 0}, 10); got != 0 || hasRelevant(map[string]int{"x": 0}) {
		t.Errorf("no relevant judgement: nDCG %v (want 0) and the query must not be scored", got)
	}
	// Ids compare as strings, descending: "9" ranks before "10" at equal scores.
	tied := []RankedDoc{{"10", 1}, {"9", 1}}
	if got, want := NDCG(tied, map[string]int{"9": 1}, 1), 1.0; got != want {
		t.Errorf("tie by id: nDCG@1 = %v, want %v", got, want)
	}
}

func TestRecall(t *testing.T) {
	if got := Recall(exampleRun, exampleRel, 3); !near(got, 2.0/3) {
		t.Errorf("recall@3 = %v, want 2/3", got)
	}
	if got := Recall(exampleRun, exampleRel, 1); got != 0 {
		t.Errorf("recall@1 = %v, want 0", got)
	}
	if got := Recall(exampleRun, exampleRel, 100); !near(got, 2.0/3) {
		t.Errorf("recall@100 = %v, want 2/3 (d5 is never retrieved)", got)
	}
}

func TestPercentile(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct{ p, want float64 }{{50, 5}, {99, 10}, {10, 1}, {100, 10}, {0, 1}} {
		if got := percentile(xs, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if percentile(nil, 50) != 0 {
		t.Error("percentile of nothing is not 0")
	}
}
