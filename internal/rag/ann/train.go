package ann

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
)

// TrainOptions shape the k-means training of the centroids.
type TrainOptions struct {
	// Lists is the number of centroids; 0 means [DefaultLists] of the number
	// of vectors.
	Lists int
	// Iterations of Lloyd's algorithm; 0 means 8 (the lists only need to be
	// good enough to group neighbours: recall comes from probing several).
	Iterations int
	// SamplePerList caps the training sample at this many vectors per list
	// (at least 8,192 in all); 0 means 40. Training cost grows with sample ×
	// lists, not with the store.
	SamplePerList int
	// Seed makes training reproducible.
	Seed uint64
}

// DefaultLists is the number of lists for n vectors: 2√n, so that a list
// holds about half as many vectors as there are centroids. Fewer, larger lists
// make inserts cheaper (one pass over the centroids each) but group
// neighbours worse when the data has many more topics than lists: at √n a
// search had to scan twice the vectors for the same recall on clustered data.
func DefaultLists(n int) int {
	return max(1, int(2*math.Sqrt(float64(n))))
}

// Train returns the centroids (lists × dim unit floats) of n vectors read
// through vec (ordinals 0..n-1; nil for one without a vector), by spherical
// k-means on a sample. It stops early with ctx's error.
func Train(ctx context.Context, dim, n int, vec func(ord int) []float32, opts TrainOptions) ([]float32, error) {
	if dim <= 0 {
		return nil, fmt.Errorf("ann: dimension %d is not positive", dim)
	}
	rng := rand.New(rand.NewPCG(opts.Seed, 0x5eed))
	ords := make([]int, 0, n)
	for i := range n {
		if vec(i) != nil {
			ords = append(ords, i)
		}
	}
	if len(ords) == 0 {
		return nil, fmt.Errorf("ann: no vectors to train on")
	}
	lists := opts.Lists
	if lists <= 0 {
		lists = DefaultLists(len(ords))
	}
	lists = min(lists, len(ords))
	per := opts.SamplePerList
	if per <= 0 {
		per = 40
	}
	iters := opts.Iterations
	if iters <= 0 {
		iters = 8
	}
	// The sample: a random subset (a partial Fisher–Yates shuffle).
	size := min(len(ords), max(lists*per, 8192))
	for i := range size {
		j := i + rng.IntN(len(ords)-i)
		ords[i], ords[j] = ords[j], ords[i]
	}
	sample := make([][]float32, size)
	for i := range sample {
		sample[i] = vec(ords[i])
	}
	// Initial centroids: the first lists sample vectors (already random).
	cents := make([]float32, lists*dim)
	for l := range lists {
		copy(cents[l*dim:], sample[l])
	}
	assign := make([]int, size)
	for range iters {
		if err := assignAll(ctx, dim, cents, sample, assign); err != nil {
			return nil, err
		}
		sums := make([]float64, lists*dim)
		counts := make([]int, lists)
		for i, v := range sample {
			l := assign[i]
			counts[l]++
			for d, f := range v {
				sums[l*dim+d] += float64(f)
			}
		}
		for l := range lists {
			if counts[l] == 0 {
				// An empty list takes a random sample vector: every centroid
				// keeps pulling its weight.
				copy(cents[l*dim:(l+1)*dim], sample[rng.IntN(size)])
				continue
			}
			normalizeInto(cents[l*dim:(l+1)*dim], sums[l*dim:(l+1)*dim])
		}
	}
	return cents, nil
}

func normalizeInto(dst []float32, src []float64) {
	var s float64
	for _, f := range src {
		s += f * f
	}
	if s == 0 {
		return
	}
	inv := 1 / math.Sqrt(s)
	for i, f := range src {
		dst[i] = float32(f * inv)
	}
}

// assignAll sets assign[i] to the nearest centroid of vs[i], on every core.
func assignAll(ctx context.Context, dim int, cents []float32, vs [][]float32, assign []int) error {
	workers := min(runtime.GOMAXPROCS(0), max(1, len(vs)/256))
	var wg sync.WaitGroup
	chunk := (len(vs) + workers - 1) / workers
	for w := range workers {
		lo, hi := w*chunk, min(len(vs), (w+1)*chunk)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				if i&1023 == 0 && ctx.Err() != nil {
					return
				}
				best, bestScore := 0, float32(math.Inf(-1))
				for l := 0; l*dim < len(cents); l++ {
					if s := Dot(vs[i], cents[l*dim:(l+1)*dim]); s > bestScore {
						best, bestScore = l, s
					}
				}
				assign[i] = best
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}

// Build returns an index of the n vectors read through vec (ordinals 0..n-1;
// nil for none) over the given centroids, assigning on every core.
func Build(ctx context.Context, dim int, centroids []float32, n int, vec func(ord int) []float32) (*Index, error) {
	x, err := New(dim, centroids)
	if err != nil {
		return nil, err
	}
	x.grow(n)
	lists := make([]uint32, n)
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for w := range workers {
		lo, hi := w*chunk, min(n, (w+1)*chunk)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				if i&1023 == 0 && ctx.Err() != nil {
					return
				}
				lists[i] = noList
				if v := vec(i); v != nil {
					if len(v) != dim {
						continue
					}
					lists[i] = x.nearestList(v)
					x.scales[i] = quantize(x.codes[i*dim:(i+1)*dim], v)
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for ord, l := range lists {
		if l != noList {
			x.assign[ord] = l
			x.lists[l] = append(x.lists[l], uint32(ord))
			x.live++
		}
	}
	return x, nil
}
