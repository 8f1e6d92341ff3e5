// Package ragsynth makes synthetic retrieval data for tests and benchmarks at
// any size, seeded so that every run sees the same data: embedding-like vectors
// from a Gaussian mixture (real embeddings cluster by topic; uniform noise would
// make every neighbour equally far and flatter an index).
package ragsynth

import (
	"math"
	"math/rand/v2"
)

// Mixture draws unit vectors from a mixture of Gaussians around random unit
// centres: each vector is a centre plus isotropic noise, normalised.
type Mixture struct {
	dim     int
	centres [][]float32
	spread  float64
	rng     *rand.Rand
}

// NewMixture returns a mixture of clusters components in dim dimensions.
// spread is the noise's length relative to the centre's (0.5–1 gives
// clusters that overlap as topics do; 0 gives duplicates of the centres).
func NewMixture(seed uint64, dim, clusters int, spread float64) *Mixture {
	rng := rand.New(rand.NewPCG(seed, 0x51a7))
	m := &Mixture{dim: dim, spread: spread, rng: rng, centres: make([][]float32, max(1, clusters))}
	for i := range m.centres {
		c := make([]float32, dim)
		for j := range c {
			c[j] = float32(rng.NormFloat64())
		}
		normalize(c)
		m.centres[i] = c
	}
	return m
}

// Dim is the vectors' dimension.
func (m *Mixture) Dim() int { return m.dim }

// Vector draws the next vector and returns it with its cluster.
func (m *Mixture) Vector() ([]float32, int) {
	k := m.rng.IntN(len(m.centres))
	c := m.centres[k]
	v := make([]float32, m.dim)
	// Noise per dimension of σ = spread/√dim: its length is about spread.
	sigma := m.spread / math.Sqrt(float64(m.dim))
	for j := range v {
		v[j] = c[j] + float32(m.rng.NormFloat64()*sigma)
	}
	normalize(v)
	return v, k
}

// Vectors draws n vectors.
func (m *Mixture) Vectors(n int) [][]float32 {
	out := make([][]float32, n)
	for i := range out {
		out[i], _ = m.Vector()
	}
	return out
}

func normalize(v []float32) {
	var s float64
	for _, f := range v {
		s += float64(f) * float64(f)
	}
	if s == 0 {
		v[0] = 1
		return
	}
	inv := 1 / math.Sqrt(s)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
}
