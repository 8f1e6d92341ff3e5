package ragsynth

import (
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// The corpus is a function of the seed and the index: a benchmark regenerates
// document i to check it, and another package gets the same corpus.
func TestDeterministic(t *testing.T) {
	t.Parallel()
	a, b := New(Config{Seed: 7}), New(Config{Seed: 7})
	for _, i := range []int{0, 1, 999_999} {
		if !reflect.DeepEqual(a.Document(i), b.Document(i)) || !reflect.DeepEqual(a.Vector(i), b.Vector(i)) ||
			!reflect.DeepEqual(a.Query(i), b.Query(i)) {
			t.Fatalf("item %d differs between two generators of one seed", i)
		}
	}
	if New(Config{Seed: 8}).Document(1).Text == a.Document(1).Text {
		t.Error("another seed gave the same document")
	}
	if a.Document(1).Text == a.Document(2).Text {
		t.Error("two documents are the same")
	}
}

// Word frequencies fall off as a power law: the commonest word is far more
// frequent than the hundredth, and the vocabulary's tail still shows up.
func TestZipfWordsAndLengths(t *testing.T) {
	t.Parallel()
	g := New(Config{Seed: 1})
	counts := map[string]int{}
	total, docs := 0, 2000
	var lengths []int
	for i := range docs {
		words := strings.Fields(strings.ReplaceAll(g.Document(i).Text, ".", ""))
		lengths = append(lengths, len(words))
		for _, w := range words {
			counts[w]++
			total++
		}
	}
	freq := make([]int, 0, len(counts))
	for _, n := range counts {
		freq = append(freq, n)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(freq)))
	if freq[0] < 20*freq[99] {
		t.Errorf("not Zipf-like: top word %d times, 100th %d", freq[0], freq[99])
	}
	if len(counts) < 10_000 {
		t.Errorf("only %d distinct words in %d documents", len(counts), docs)
	}
	sort.Ints(lengths)
	mean := float64(total) / float64(docs)
	if mean < 120 || mean > 180 || lengths[0] < 8 || lengths[len(lengths)-1] < 2*lengths[len(lengths)/2] {
		t.Errorf("lengths: mean %.0f, min %d, median %d, max %d", mean, lengths[0], lengths[len(lengths)/2], lengths[len(lengths)-1])
	}
}

// Vectors are unit length and clustered: a document is closer to a query of
// its own topic than to one of another.
func TestClusteredVectors(t *testing.T) {
	t.Parallel()
	g := New(Config{Seed: 3, Dim: 64, Clusters: 16})
	dot := func(a, b []float32) float64 {
		var s float64
		for i := range a {
			s += float64(a[i]) * float64(b[i])
		}
		return s
	}
	same, other := 0.0, 0.0
	n := 0
	for i := range 200 {
		v := g.Vector(i)
		if len(v) != 64 || math.Abs(dot(v, v)-1) > 1e-4 {
			t.Fatalf("vector %d: %d dimensions, norm² %v", i, len(v), dot(v, v))
		}
		for q := range 50 {
			qq := g.Query(q)
			if qq.Cluster == g.Cluster(i) {
				same += dot(v, qq.Vector)
				n++
			} else {
				other += dot(v, qq.Vector)
			}
		}
	}
	if n == 0 {
		t.Fatal("no query shared a document's topic")
	}
	if s, o := same/float64(n), other/float64(200*50-n); s < 0.3 || s < o+0.3 {
		t.Errorf("mean cosine to own-topic queries %.2f, to others %.2f", s, o)
	}
	if c := g.Chunks(5); len(c) != 1 || c[0].DocID != DocID(5) || c[0].Metadata["tenant"] != "t5" || c[0].Text == "" {
		t.Errorf("chunks of document 5: %+v", c)
	}
}

func TestWordsAreDistinct(t *testing.T) {
	t.Parallel()
	seen := map[string]int{}
	for i := range 50_000 {
		w := word(i)
		if j, ok := seen[w]; ok {
			t.Fatalf("words %d and %d are both %q", i, j, w)
		}
		seen[w] = i
	}
}
