package ann

import (
	"cmp"
	"errors"
	"math"
	"slices"
)

// SearchOptions tune a search's recall against its cost.
type SearchOptions struct {
	// Probe is the number of lists scanned, nearest centroids first; 0 means
	// [DefaultProbe].
	Probe int
	// Rescore is the number of best candidates by their codes that are
	// re-scored exactly; 0 means max(8·k, 64).
	Rescore int
	// MaxProbe bounds how far a search widens when too few vectors pass the
	// filter in the probed lists; past it the search returns [ErrSelective].
	// 0 means max(Probe, Lists/2).
	MaxProbe int
}

// DefaultProbe is the number of lists a search scans among lists: √lists, at
// least 8 (all of them below 8). With DefaultLists that is about 1.4·n^¼
// lists of n^½/2 vectors each: the share of the vectors a query reads falls
// as the store grows (6 % at 20,000 vectors, 2 % at a million).
func DefaultProbe(lists int) int {
	return min(lists, max(8, int(math.Ceil(math.Sqrt(float64(lists))))))
}

// Hit is a search result: an ordinal and its exact score.
type Hit struct {
	Ord   uint32
	Score float32
}

// ErrSelective says the filter let too few vectors through the lists a search
// may scan: the caller should search exactly over the vectors that match.
var ErrSelective = errors.New("ann: the filter matches too few vectors near the query; search exactly over the matching ones")

// Search returns up to k ordinals whose vectors are nearest q (a unit vector)
// by inner product, best first, scored by exact (the caller's full-precision
// inner product). accept, when not nil, is asked about each candidate before it
// is scored (a filter, a liveness check); a search whose probed lists hold too
// few accepted vectors probes further, up to MaxProbe lists, then returns
// [ErrSelective] rather than fewer hits than there are.
func (x *Index) Search(q []float32, k int, opts SearchOptions, accept func(ord uint32) bool, exact func(ord uint32) float32) ([]Hit, error) {
	if len(q) != x.dim {
		return nil, ErrDimension
	}
	if k <= 0 || x.live == 0 {
		return nil, nil
	}
	lists := len(x.lists)
	probe := opts.Probe
	if probe <= 0 {
		probe = DefaultProbe(lists)
	}
	probe = min(probe, lists)
	maxProbe := opts.MaxProbe
	if maxProbe <= 0 {
		maxProbe = max(probe, lists/2)
	}
	maxProbe = min(max(maxProbe, probe), lists)
	k = min(k, x.live) // a huge k must not size the buffers below
	pool := opts.Rescore
	if pool <= 0 {
		pool = max(8*k, 64)
	}
	pool = min(max(pool, k), x.live)

	// Lists by their centroid's closeness to q.
	order := make([]Hit, lists)
	for l := range order {
		order[l] = Hit{Ord: uint32(l), Score: Dot(q, x.centroids[l*x.dim:(l+1)*x.dim])}
	}
	slices.SortFunc(order, func(a, b Hit) int { return cmp.Compare(b.Score, a.Score) })

	cands := heap{n: pool, h: make([]Hit, 0, pool)}
	accepted := 0
	scanned := 0
	// A filter that lets a fraction s of the vectors through pushes the
	// filtered neighbours further out: the search probes probe/√s lists (s
	// estimated from the lists scanned so far), and at least enough to fill
	// the pool, up to maxProbe.
	seen := 0
	for scanned < lists {
		if scanned >= probe {
			want := probe
			if accepted > 0 && accepted < seen {
				want = max(probe, int(math.Ceil(float64(probe)/math.Sqrt(float64(accepted)/float64(seen)))))
			}
			if scanned >= want && accepted >= pool {
				break
			}
			if scanned >= maxProbe {
				return nil, ErrSelective
			}
		}
		list := order[scanned].Ord
		scanned++
		for _, ord := range x.lists[list] {
			seen++
			if accept != nil && !accept(ord) {
				continue
			}
			accepted++
			s := x.scales[ord] * dotCode(q, x.codes[int(ord)*x.dim:(int(ord)+1)*x.dim])
			cands.push(Hit{ord, s})
		}
	}
	for i := range cands.h {
		cands.h[i].Score = exact(cands.h[i].Ord)
	}
	slices.SortFunc(cands.h, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Ord, b.Ord)
	})
	if len(cands.h) > k {
		cands.h = cands.h[:k]
	}
	return cands.h, nil
}

// heap keeps the n best hits, the worst at the root.
type heap struct {
	n int
	h []Hit
}

func (t *heap) push(c Hit) {
	h := t.h
	if len(h) < t.n {
		h = append(h, c)
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if h[i].Score >= h[p].Score {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
		t.h = h
		return
	}
	if c.Score <= h[0].Score {
		return
	}
	h[0] = c
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].Score < h[m].Score {
			m = l
		}
		if r < len(h) && h[r].Score < h[m].Score {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
