package embedded

import (
	"context"
	"fmt"
	"github.com/arvenza/helix/internal/rag/ann"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/arvenza/helix/internal/rag"
)

// vecCorpus is what a vector test put in a store: each document's one
// vector and metadata, to compute the exact answers by brute force.
type vecCorpus struct {
	vecs map[string][]float32
	meta map[string]map[string]any
}

func (c *vecCorpus) put(t testing.TB, s *Store, id string, v []float32, meta map[string]any) {
	t.Helper()
	mustPut(t, s, id, "h"+id, chunks(id, meta, "text of "+id), [][]float32{v})
	c.vecs[id] = v
	c.meta[id] = meta
}

func (c *vecCorpus) remove(t testing.TB, s *Store, id string) {
	t.Helper()
	if err := s.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	delete(c.vecs, id)
	delete(c.meta, id)
}

// exact returns the chunk ids of the k documents nearest q among those f
// matches, best first (the mixture's vectors are unit length already).
func (c *vecCorpus) exact(q []float32, k int, f rag.Filter) []string {
	type sc struct {
		id string
		s  float32
	}
	var all []sc
	for id, v := range c.vecs {
		if len(f) == 0 || f.Matches(c.meta[id]) {
			all = append(all, sc{id + "#0", ann.Dot(q, v)})
		}
	}
	slices.SortFunc(all, func(a, b sc) int {
		if a.s != b.s {
			if a.s > b.s {
				return -1
			}
			return 1
		}
		return strings.Compare(a.id, b.id)
	})
	out := []string{}
	for i := 0; i < k && i < len(all); i++ {
		out = append(out, all[i].id)
	}
	return out
}

func overlap(got []rag.Hit, want []string) float64 {
	if len(want) == 0 {
		return 1
	}
	n := 0
	for _, h := range got {
		if slices.Contains(want, h.Chunk.ID) {
			n++
		}
	}
	return float64(n) / float64(len(want))
}

// fillVectors puts n one-chunk documents with Gaussian-mixture vectors; every
// 200th is tagged tenant "rare" (0.5 %), the others "common".
func fillVectors(t testing.TB, s *Store, m *mixture, n int) *vecCorpus {
	t.Helper()
	c := &vecCorpus{vecs: map[string][]float32{}, meta: map[string]map[string]any{}}
	for i := range n {
		v, _ := m.Vector()
		tenant := "common"
		if i%200 == 0 {
			tenant = "rare"
		}
		c.put(t, s, fmt.Sprintf("d%05d", i), v, map[string]any{"tenant": tenant})
	}
	return c
}

// waitVectorIndex waits for a background build of the vector index.
func waitVectorIndex(t testing.TB, s *Store) {
	t.Helper()
	if err := s.WaitVectorIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.vi.ann == nil {
		t.Fatal("no vector index was built")
	}
}

// checkRecall asserts that the store's vector search finds at least 95 % of
// the exact top 10 over queries from m, each hit with its exact cosine score,
// and that every hit passes f.
func checkRecall(t *testing.T, s *Store, c *vecCorpus, m *mixture, f rag.Filter) {
	t.Helper()
	var sum float64
	const queries = 40
	for range queries {
		q, _ := m.Vector()
		hits, err := s.SearchVector(ctx, q, 10, f)
		if err != nil {
			t.Fatal(err)
		}
		want := c.exact(q, 10, f)
		if len(hits) != len(want) {
			t.Fatalf("%d hits, want %d", len(hits), len(want))
		}
		for _, h := range hits {
			v := c.vecs[h.Chunk.DocID]
			if v == nil {
				t.Fatalf("hit %s is not a stored document (deleted or replaced?)", h.Chunk.ID)
			}
			if e := float64(ann.Dot(q, v)); math.Abs(h.Score-e) > 1e-6 {
				t.Fatalf("hit %s scored %v, its exact cosine is %v", h.Chunk.ID, h.Score, e)
			}
			if len(f) > 0 && !f.Matches(h.Chunk.Metadata) {
				t.Fatalf("hit %s does not match the filter %v", h.Chunk.ID, f)
			}
		}
		sum += overlap(hits, want)
	}
	if r := sum / queries; r < 0.95 {
		t.Fatalf("recall@10 %.3f against exact (filter %v), want ≥ 0.95", r, f)
	}
}

// TestVectorIndexRecallAndFilter: above the threshold the store searches its
// approximate index (built in the background) with recall@10 ≥ 0.95 against
// exact and the exact scores; a filter matching 0.5 % of the chunks still
// returns top_k hits, all matching, with recall ≥ 0.95 among them.
func TestVectorIndexRecallAndFilter(t *testing.T) {
	s, _ := open(t, t.TempDir(), Options{NoSync: true, VectorIndexThreshold: 2000})
	m := newMixture(21, 48, 40)
	c := fillVectors(t, s, m, 4000)
	waitVectorIndex(t, s)
	checkRecall(t, s, c, m, nil)
	checkRecall(t, s, c, m, rag.Filter{"tenant": "rare"})
	checkRecall(t, s, c, m, rag.Filter{"tenant": "common"})
	checkRecall(t, s, c, m, rag.Filter{"tenant": "nobody"})
	checkRecall(t, s, c, m, rag.Filter{"tenant": map[string]any{"$in": []any{"rare", "nobody"}}})
	// A huge top_k returns every chunk, without sizing anything by it.
	q, _ := m.Vector()
	hits, err := s.SearchVector(ctx, q, math.MaxInt, nil)
	if err != nil || len(hits) != len(c.vecs) {
		t.Fatalf("top_k MaxInt: %d hits, %v; want all %d", len(hits), err, len(c.vecs))
	}
}

// TestVectorIndexBelowThreshold: a store below the threshold builds no index.
func TestVectorIndexBelowThreshold(t *testing.T) {
	s, _ := open(t, t.TempDir(), Options{NoSync: true, VectorIndexThreshold: 500})
	m := newMixture(2, 16, 4)
	c := fillVectors(t, s, m, 499)
	s.vi.wg.Wait()
	if s.vi.ann != nil {
		t.Fatal("an index was built below the threshold")
	}
	checkRecall(t, s, c, m, nil)
}

// TestVectorIndexDeletesAndReplacements: deleted documents and the old
// vectors of replaced ones never come back, even for a query equal to them.
func TestVectorIndexDeletesAndReplacements(t *testing.T) {
	s, _ := open(t, t.TempDir(), Options{NoSync: true, VectorIndexThreshold: 1000})
	m := newMixture(4, 32, 20)
	c := fillVectors(t, s, m, 1500)
	waitVectorIndex(t, s)
	var gone [][]float32
	for i := 0; i < 1500; i += 7 {
		id := fmt.Sprintf("d%05d", i)
		gone = append(gone, c.vecs[id])
		if i%2 == 0 {
			c.remove(t, s, id)
		} else {
			v, _ := m.Vector()
			c.put(t, s, id, v, map[string]any{"tenant": "common"})
		}
	}
	for _, q := range gone {
		hits, err := s.SearchVector(ctx, q, 5, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			if h.Score > 0.99999 || c.vecs[h.Chunk.DocID] == nil {
				t.Fatalf("a deleted or replaced vector came back: %s (score %v)", h.Chunk.ID, h.Score)
			}
		}
	}
	checkRecall(t, s, c, m, nil)
}

// TestVectorIndexConcurrent: puts, deletes and searches at once (under -race)
// while the index is being built and after.
func TestVectorIndexConcurrent(t *testing.T) {
	s, _ := open(t, t.TempDir(), Options{NoSync: true, VectorIndexThreshold: 300})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := newMixture(uint64(w), 16, 8)
			for i := range 600 {
				v, _ := m.Vector()
				id := fmt.Sprintf("w%d-%d", w, i%400)
				if err := s.Put(ctx, id, "h", chunks(id, nil, "x"), [][]float32{v}); err != nil {
					t.Error(err)
					return
				}
				if i%50 == 49 {
					if err := s.Delete(ctx, fmt.Sprintf("w%d-%d", w, i%13)); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := newMixture(uint64(10+r), 16, 8)
			for range 300 {
				q, _ := m.Vector()
				if _, err := s.SearchVector(ctx, q, 5, nil); err != nil && err != rag.ErrNoVectors {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	waitVectorIndex(t, s)
}

// TestVectorIndexSurvivesRestart: the index is saved and loaded on open (not
// rebuilt), and brought up to date with the log's tail: puts and deletes
// written after it was saved, by a process that never closed the store.
func TestVectorIndexSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	opts := Options{NoSync: true, VectorIndexThreshold: 1000}
	s, _ := open(t, dir, opts)
	m := newMixture(8, 32, 20)
	c := fillVectors(t, s, m, 1200)
	waitVectorIndex(t, s)
	if _, err := os.Stat(vectorIndexPath(dir)); err != nil {
		t.Fatalf("the index was not saved after its build: %v", err)
	}
	// The log's tail: puts and deletes after the save.
	for i := range 100 {
		v, _ := m.Vector()
		c.put(t, s, fmt.Sprintf("tail%03d", i), v, nil)
	}
	for i := 0; i < 1200; i += 9 {
		c.remove(t, s, fmt.Sprintf("d%05d", i))
	}
	// A crash: the directory as it is now, without Close.
	crashed := t.TempDir()
	for _, name := range []string{"chunks.log", "vectors.ann"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(crashed, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s2, logs := open(t, crashed, opts)
	if s2.vi.ann == nil || s2.vi.building.Load() || strings.Contains(logs.String(), "vector index") {
		t.Fatalf("the saved index was not loaded on open (index %v, building %v); logs:\n%s", s2.vi.ann != nil, s2.vi.building.Load(), logs)
	}
	if got, want := s2.vi.ann.Len(), len(c.vecs); got != want {
		t.Fatalf("the loaded index holds %d vectors, the store %d", got, want)
	}
	checkRecall(t, s2, c, m, nil)
}

// TestVectorIndexDamagedFile: a damaged index file is detected on open,
// reported, searches stay right (exact) and the index is rebuilt.
func TestVectorIndexDamagedFile(t *testing.T) {
	dir := t.TempDir()
	opts := Options{NoSync: true, VectorIndexThreshold: 1000}
	s, _ := open(t, dir, opts)
	m := newMixture(12, 32, 20)
	c := fillVectors(t, s, m, 1100)
	waitVectorIndex(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path := vectorIndexPath(dir)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x10
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s2, logs := open(t, dir, opts)
	checkRecall(t, s2, c, m, nil) // exact or rebuilt: right either way
	waitVectorIndex(t, s2)
	if !strings.Contains(logs.String(), "damaged") || !strings.Contains(logs.String(), "built the vector index") {
		t.Fatalf("damage not reported or index not rebuilt; logs:\n%s", logs)
	}
	checkRecall(t, s2, c, m, nil)
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	// Rebuilt and saved again: the next open loads it.
	s3, logs := open(t, dir, opts)
	if s3.vi.ann == nil || strings.Contains(logs.String(), "vector index") {
		t.Fatalf("the rebuilt index was not saved; logs:\n%s", logs)
	}
}

// TestVectorIndexCompaction: a log rewrite renumbers the chunks; the index
// follows (no rebuild) and still finds the right chunks.
func TestVectorIndexCompaction(t *testing.T) {
	s, logs := open(t, t.TempDir(), Options{NoSync: true, VectorIndexThreshold: 1000, CompactMinGarbage: 1})
	m := newMixture(14, 32, 20)
	c := fillVectors(t, s, m, 1200)
	waitVectorIndex(t, s)
	for i := range 1500 {
		v, _ := m.Vector()
		c.put(t, s, fmt.Sprintf("d%05d", i%1200), v, map[string]any{"tenant": "common"})
	}
	s.compactWG.Wait() // compactions run in the background
	if !strings.Contains(logs.String(), "compacted the log") {
		t.Fatalf("the log was not compacted; logs:\n%s", logs)
	}
	s.vi.wg.Wait()
	s.mu.RLock()
	a, x := s.vi.ann, s.idx
	s.mu.RUnlock()
	if a == nil || a.Len() != x.liveChunks || a.Ordinals() > len(x.chunks) {
		t.Fatalf("after compaction the index holds %v vectors, the store %d live chunks", a != nil && a.Len() > 0, x.liveChunks)
	}
	checkRecall(t, s, c, m, nil)
}

// TestVectorIndexRetrains: a store grown fourfold past what the lists were
// trained on retrains them (more lists for more vectors), and stays right.
func TestVectorIndexRetrains(t *testing.T) {
	s, _ := open(t, t.TempDir(), Options{NoSync: true, VectorIndexThreshold: 300})
	m := newMixture(16, 16, 10)
	c := fillVectors(t, s, m, 300)
	waitVectorIndex(t, s)
	before := s.vi.ann.Lists()
	for i := range 1000 {
		v, _ := m.Vector()
		c.put(t, s, fmt.Sprintf("more%04d", i), v, nil)
	}
	waitVectorIndex(t, s)
	s.mu.RLock()
	after, trained := s.vi.ann.Lists(), s.vi.trained
	s.mu.RUnlock()
	if after <= before || trained <= 300 {
		t.Fatalf("after growing from 300 to 1,300 vectors: %d lists (before %d), trained on %d", after, before, trained)
	}
	checkRecall(t, s, c, m, nil)
}
