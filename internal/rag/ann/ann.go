// Package ann is the approximate nearest-neighbour index of the embedded RAG
// store: an inverted file (IVF) over unit vectors. k-means centroids cut the
// space into lists; each vector is kept in the list of its nearest centroid as
// int8 codes (a quarter of float32's memory); a query scans the lists of its
// nearest centroids with the codes and re-scores the best candidates exactly,
// through a callback that reads the full-precision vectors wherever the caller
// keeps them, so the scores it returns are the exact cosines.
//
// Why IVF and not a graph (HNSW): inserting into a graph costs a search per
// vector and its memory holds the full-precision vectors, while an IVF insert is
// one pass over the centroids and its lists hold only ordinals and codes; a
// filter is checked on each candidate of a list, and a selective one simply
// makes the search probe more lists (or tell the caller to go exact), where a
// graph traversal under a selective filter loses its way. Deletes are a mark
// the search skips, dropped for good by [Index.Remap].
//
// An Index is not safe for concurrent mutation: its owner serialises Add,
// Delete and Remap against Search (a read lock for searches is enough: Search
// changes nothing).
package ann

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// noList marks an ordinal without a vector in the index (never added, or
// deleted).
const noList = math.MaxUint32

// Index is an IVF index over unit vectors of one dimension, addressed by the
// caller's ordinals (dense, from 0).
type Index struct {
	dim       int
	centroids []float32 // lists × dim, unit length
	lists     [][]uint32
	assign    []uint32  // ordinal → list, noList when absent
	codes     []int8    // ordinal → dim int8s
	scales    []float32 // ordinal → the code's scale
	live      int
}

// New returns an empty index with the given centroids (lists × dim floats, as
// [Train] returns them).
func New(dim int, centroids []float32) (*Index, error) {
	if dim <= 0 {
		return nil, fmt.Errorf("ann: dimension %d is not positive", dim)
	}
	if len(centroids) == 0 || len(centroids)%dim != 0 {
		return nil, fmt.Errorf("ann: %d centroid floats are not a whole number of %d-dimensional centroids", len(centroids), dim)
	}
	return &Index{dim: dim, centroids: centroids, lists: make([][]uint32, len(centroids)/dim)}, nil
}

// Dim is the vectors' dimension.
func (x *Index) Dim() int { return x.dim }

// Lists is the number of lists (centroids).
func (x *Index) Lists() int { return len(x.lists) }

// Len is the number of vectors in the index (added and not deleted).
func (x *Index) Len() int { return x.live }

// Ordinals is one past the highest ordinal the index has room for.
func (x *Index) Ordinals() int { return len(x.assign) }

// Has reports whether ord has a vector in the index.
func (x *Index) Has(ord uint32) bool {
	return int(ord) < len(x.assign) && x.assign[ord] != noList
}

// Add puts v (unit length, Dim long) in the index under ord, replacing what ord
// held.
func (x *Index) Add(ord uint32, v []float32) error {
	if len(v) != x.dim {
		return fmt.Errorf("ann: vector has %d dimensions, the index %d", len(v), x.dim)
	}
	return x.AddToList(ord, x.Nearest(v), v)
}

// Nearest returns the list v belongs in. It only reads the centroids, which
// never change: it may run alongside any other call, so that a writer can
// find its vectors' lists before it takes the lock that Add needs.
func (x *Index) Nearest(v []float32) uint32 {
	if len(v) != x.dim {
		return 0
	}
	return x.nearestList(v)
}

// AddToList is Add with v's list already found by [Index.Nearest].
func (x *Index) AddToList(ord, list uint32, v []float32) error {
	if len(v) != x.dim {
		return fmt.Errorf("ann: vector has %d dimensions, the index %d", len(v), x.dim)
	}
	if int(list) >= len(x.lists) {
		return fmt.Errorf("ann: list %d of %d", list, len(x.lists))
	}
	x.Delete(ord)
	x.grow(int(ord) + 1)
	x.place(ord, list, v)
	return nil
}

func (x *Index) place(ord, list uint32, v []float32) {
	x.assign[ord] = list
	x.lists[list] = append(x.lists[list], ord)
	x.scales[ord] = quantize(x.codes[int(ord)*x.dim:(int(ord)+1)*x.dim], v)
	x.live++
}

// Delete removes ord's vector; the search never returns it again.
func (x *Index) Delete(ord uint32) {
	if !x.Has(ord) {
		return
	}
	l := x.lists[x.assign[ord]]
	if i := slices.Index(l, ord); i >= 0 {
		// Order within a list does not matter: the last entry takes its place.
		l[i] = l[len(l)-1]
		x.lists[x.assign[ord]] = l[:len(l)-1]
	}
	x.assign[ord] = noList
	x.live--
}

func (x *Index) grow(n int) {
	if n <= len(x.assign) {
		return
	}
	for len(x.assign) < n {
		x.assign = append(x.assign, noList)
		x.scales = append(x.scales, 0)
	}
	x.codes = slices.Grow(x.codes, (n-len(x.codes)/x.dim)*x.dim)[:n*x.dim]
}

func (x *Index) nearestList(v []float32) uint32 {
	best, bestScore := uint32(0), float32(math.Inf(-1))
	for l := range x.lists {
		if s := Dot(v, x.centroids[l*x.dim:(l+1)*x.dim]); s > bestScore {
			best, bestScore = uint32(l), s
		}
	}
	return best
}

// Remap returns an index with the same centroids whose ordinals are renumbered
// by mapping (ok false drops one), for a store that compacted its ordinals. The
// vectors keep their lists and codes: nothing is re-quantised or re-assigned.
func (x *Index) Remap(newLen int, mapping func(old uint32) (uint32, bool)) *Index {
	y := &Index{dim: x.dim, centroids: x.centroids, lists: make([][]uint32, len(x.lists))}
	y.grow(newLen)
	for old, list := range x.assign {
		if list == noList {
			continue
		}
		nw, ok := mapping(uint32(old))
		if !ok || int(nw) >= newLen {
			continue
		}
		y.assign[nw] = list
		copy(y.codes[int(nw)*x.dim:(int(nw)+1)*x.dim], x.codes[old*x.dim:(old+1)*x.dim])
		y.scales[nw] = x.scales[old]
		y.live++
	}
	// Lists in ordinal order, as a fresh build would have them.
	for ord, list := range y.assign {
		if list != noList {
			y.lists[list] = append(y.lists[list], uint32(ord))
		}
	}
	return y
}

// quantize writes v's int8 codes to dst and returns their scale: v[i] ≈
// dst[i] × scale, each to within half a step of the vector's largest
// component over 127.
func quantize(dst []int8, v []float32) float32 {
	var m float32
	for _, f := range v {
		m = max(m, f, -f)
	}
	if m == 0 {
		clear(dst)
		return 0
	}
	inv := 127 / m
	for i, f := range v {
		dst[i] = int8(math.Round(float64(f * inv)))
	}
	return m / 127
}

// Dot is the inner product of two equally long vectors, unrolled four ways so
// the additions do not wait on one another. The embedded store's exact search
// uses it too.
func Dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

// dotCode is the inner product of a float32 query and an int8 code.
func dotCode(q []float32, c []int8) float32 {
	c = c[:len(q)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(q); i += 4 {
		s0 += q[i] * float32(c[i])
		s1 += q[i+1] * float32(c[i+1])
		s2 += q[i+2] * float32(c[i+2])
		s3 += q[i+3] * float32(c[i+3])
	}
	for ; i < len(q); i++ {
		s0 += q[i] * float32(c[i])
	}
	return s0 + s1 + s2 + s3
}

// ErrDimension is returned for a vector of the wrong dimension.
var ErrDimension = errors.New("ann: the vector's dimension is not the index's")
