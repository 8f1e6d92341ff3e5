package embedded

import "github.com/arvenza/helix/internal/rag/ragsynth"

// mixture draws vectors, in order, from ragsynth's corpus: topic centroids
// plus Gaussian noise, as real embeddings cluster by topic.
type mixture struct {
	g    *ragsynth.Generator
	next int
}

func newMixture(seed uint64, dim, clusters int) *mixture {
	return &mixture{g: ragsynth.New(ragsynth.Config{Seed: seed, Dim: dim, Clusters: clusters, Vocabulary: 2000})}
}

// Vector returns the next vector and its topic.
func (m *mixture) Vector() ([]float32, int) {
	i := m.next
	m.next++
	return m.g.Vector(i), m.g.Cluster(i)
}

// Vectors returns the next n vectors.
func (m *mixture) Vectors(n int) [][]float32 {
	out := make([][]float32, n)
	for i := range out {
		out[i], _ = m.Vector()
	}
	return out
}
