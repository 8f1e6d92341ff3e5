package ann

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
)

// exactTop returns the k ordinals of vs nearest q by brute force (accept nil
// for all), best first.
func exactTop(vs [][]float32, q []float32, k int, accept func(uint32) bool) []uint32 {
	type sc struct {
		ord uint32
		s   float32
	}
	all := make([]sc, 0, len(vs))
	for i, v := range vs {
		if v == nil || (accept != nil && !accept(uint32(i))) {
			continue
		}
		all = append(all, sc{uint32(i), Dot(q, v)})
	}
	slices.SortFunc(all, func(a, b sc) int {
		if a.s != b.s {
			if a.s > b.s {
				return -1
			}
			return 1
		}
		return int(a.ord) - int(b.ord)
	})
	out := make([]uint32, 0, k)
	for i := 0; i < k && i < len(all); i++ {
		out = append(out, all[i].ord)
	}
	return out
}

func recall(got []Hit, want []uint32) float64 {
	if len(want) == 0 {
		return 1
	}
	n := 0
	for _, h := range got {
		if slices.Contains(want, h.Ord) {
			n++
		}
	}
	return float64(n) / float64(len(want))
}

func build(t testing.TB, vs [][]float32) *Index {
	t.Helper()
	vec := func(i int) []float32 { return vs[i] }
	// Fewer iterations and a smaller sample than the defaults: the tests run
	// under -race, and the lists need only be good enough.
	cents, err := Train(context.Background(), len(vs[0]), len(vs), vec, TrainOptions{Seed: 1, Iterations: 4, SamplePerList: 16})
	if err != nil {
		t.Fatal(err)
	}
	x, err := Build(context.Background(), len(vs[0]), cents, len(vs), vec)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// TestRecallClustered: on 20,000 vectors from a Gaussian mixture, the
// default search finds at least 95 % of the exact top 10 (computed by brute
// force), and its scores are the exact inner products.
func TestRecallClustered(t *testing.T) {
	const n, dim, queries = 20000, 64, 100
	m := newMixture(7, dim, 200)
	vs := m.Vectors(n)
	x := build(t, vs)
	var sum float64
	for range queries {
		q, _ := m.Vector()
		exact := func(o uint32) float32 { return Dot(q, vs[o]) }
		got, err := x.Search(q, 10, SearchOptions{}, nil, exact)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 10 {
			t.Fatalf("%d hits, want 10", len(got))
		}
		for _, h := range got {
			if h.Score != Dot(q, vs[h.Ord]) {
				t.Fatalf("hit %d scored %v, its exact score is %v", h.Ord, h.Score, Dot(q, vs[h.Ord]))
			}
		}
		sum += recall(got, exactTop(vs, q, 10, nil))
	}
	if r := sum / queries; r < 0.95 {
		t.Fatalf("recall@10 %.3f, want ≥ 0.95", r)
	} else {
		t.Logf("recall@10 %.3f over %d lists", r, x.Lists())
	}
}

// TestFilterDuringSearch: a filter that lets 5 % of the vectors through is
// applied while the lists are scanned (the search probes further to find
// enough), and the filtered top 10 keep recall ≥ 0.95; one that lets 0.5 %
// through makes the search ask for an exact one rather than answer with
// fewer hits than there are.
func TestFilterDuringSearch(t *testing.T) {
	const n, dim = 20000, 64
	m := newMixture(3, dim, 200)
	vs := m.Vectors(n)
	x := build(t, vs)
	accept := func(o uint32) bool { return o%20 == 0 } // 5 %
	var sum float64
	for range 50 {
		q, _ := m.Vector()
		got, err := x.Search(q, 10, SearchOptions{}, accept, func(o uint32) float32 { return Dot(q, vs[o]) })
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range got {
			if !accept(h.Ord) {
				t.Fatalf("hit %d does not pass the filter", h.Ord)
			}
		}
		if len(got) != 10 {
			t.Fatalf("%d hits under the filter, want 10", len(got))
		}
		sum += recall(got, exactTop(vs, q, 10, accept))
	}
	if r := sum / 50; r < 0.95 {
		t.Fatalf("recall@10 %.3f under a 5 %% filter, want ≥ 0.95", r)
	}
	for _, accept := range []func(uint32) bool{
		func(o uint32) bool { return o%200 == 0 }, // 0.5 %
		func(o uint32) bool { return o == 12345 },
	} {
		q, _ := m.Vector()
		_, err := x.Search(q, 10, SearchOptions{}, accept, func(o uint32) float32 { return Dot(q, vs[o]) })
		if !errors.Is(err, ErrSelective) {
			t.Fatalf("a selective filter: %v, want ErrSelective", err)
		}
	}
}

// TestDeleteNeverReturns: a deleted ordinal is never a hit, even the query's
// own vector; re-adding it brings it back once, not twice.
func TestDeleteNeverReturns(t *testing.T) {
	m := newMixture(5, 32, 8)
	vs := m.Vectors(2000)
	x := build(t, vs)
	exact := func(q []float32) func(uint32) float32 { return func(o uint32) float32 { return Dot(q, vs[o]) } }
	for _, o := range []uint32{0, 17, 1999} {
		x.Delete(o)
		got, err := x.Search(vs[o], 20, SearchOptions{Probe: x.Lists()}, nil, exact(vs[o]))
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range got {
			if h.Ord == o {
				t.Fatalf("deleted ordinal %d returned", o)
			}
		}
	}
	if x.Len() != 1997 {
		t.Fatalf("Len %d after 3 deletes of 2000", x.Len())
	}
	if err := x.Add(17, vs[17]); err != nil {
		t.Fatal(err)
	}
	if err := x.Add(17, vs[17]); err != nil {
		t.Fatal(err)
	}
	got, _ := x.Search(vs[17], 5, SearchOptions{Probe: x.Lists()}, nil, exact(vs[17]))
	if got[0].Ord != 17 || got[1].Ord == 17 {
		t.Fatalf("re-added ordinal: %v", got)
	}
}

// TestPersistRoundTrip: an index written and read back answers as the
// original; a flipped byte or a cut anywhere is ErrCorrupt, never a panic.
func TestPersistRoundTrip(t *testing.T) {
	m := newMixture(9, 16, 4)
	vs := m.Vectors(500)
	x := build(t, vs)
	x.Delete(3)
	var buf bytes.Buffer
	if err := x.Write(&buf, 0xfeed); err != nil {
		t.Fatal(err)
	}
	vec := func(i int) []float32 { return vs[i] }
	var tag uint64
	y, err := Read(bytes.NewReader(buf.Bytes()), func(h Header) error { tag = h.Tag; return nil }, vec)
	if err != nil {
		t.Fatal(err)
	}
	if tag != 0xfeed || y.Len() != x.Len() || y.Has(3) {
		t.Fatalf("read back: tag %x, %d vectors (want %d), has the deleted one: %v", tag, y.Len(), x.Len(), y.Has(3))
	}
	q := vs[42]
	a, _ := x.Search(q, 10, SearchOptions{}, nil, func(o uint32) float32 { return Dot(q, vs[o]) })
	b, _ := y.Search(q, 10, SearchOptions{}, nil, func(o uint32) float32 { return Dot(q, vs[o]) })
	if !slices.Equal(a, b) {
		t.Fatalf("read-back index answers %v, the original %v", b, a)
	}
	data := buf.Bytes()
	for i := 0; i < len(data); i += 97 {
		bad := slices.Clone(data)
		bad[i] ^= 0x40
		if _, err := Read(bytes.NewReader(bad), nil, vec); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("byte %d flipped: %v, want ErrCorrupt", i, err)
		}
		if _, err := Read(bytes.NewReader(data[:i]), nil, vec); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("cut at %d: %v, want ErrCorrupt", i, err)
		}
	}
}

// TestRemap: renumbering drops the unmapped ordinals and keeps the others
// findable under their new numbers.
func TestRemap(t *testing.T) {
	m := newMixture(11, 16, 4)
	vs := m.Vectors(300)
	x := build(t, vs)
	// Drop the even ordinals; odd o becomes o/2.
	y := x.Remap(150, func(o uint32) (uint32, bool) { return o / 2, o%2 == 1 })
	if y.Len() != 150 {
		t.Fatalf("%d vectors after remap, want 150", y.Len())
	}
	q := vs[101]
	got, _ := y.Search(q, 1, SearchOptions{Probe: y.Lists()}, nil, func(o uint32) float32 { return Dot(q, vs[2*o+1]) })
	if len(got) != 1 || got[0].Ord != 50 {
		t.Fatalf("vector 101 after remap: %v, want ordinal 50", got)
	}
}
