package embedded

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/ann"
)

// DefaultVectorIndexThreshold is the number of vectors from which SearchVector
// uses the approximate index rather than comparing every vector: below it an
// exact search takes a few milliseconds and an index would only cost memory
// and build time.
const DefaultVectorIndexThreshold = 20000

// vectorIndex is the store's approximate vector index (package ann) and its
// upkeep. Below the threshold, or until the index is built, SearchVector is
// exact. The index is built in the background (a search never waits for it),
// kept up to date by every put and delete, renumbered by compactions, saved
// on Close and after each build, and loaded on open, when the vectors it was
// saved for are still the store's (else rebuilt from the log's vectors).
type vectorIndex struct {
	threshold int // < 0: never
	probe     int

	// ann is nil while searches are exact. Guarded by Store.mu (readers
	// search it under the read lock; writers change it under the write lock).
	ann *ann.Index
	// trained is the number of vectors the index's lists were trained on:
	// when the store outgrows it four times, the lists are retrained.
	trained int
	dirty   atomic.Bool // changed since it was saved

	building atomic.Bool
	cancel   context.CancelFunc
	ctx      context.Context
	startMu  sync.Mutex // orders starting a build against stopping them
	stopped  bool       // guarded by startMu
	wg       sync.WaitGroup
	saveMu   sync.Mutex // one writer of the file at a time
}

// WaitVectorIndex returns once no background build of the approximate vector
// index is under way, or with ctx's error. A store opened without a usable saved
// index, or grown four times past what its index was trained on, builds one in
// the background, and its vector searches are exact (slower, never wrong) until
// the build is installed: benchmarks and tools that measure the store as it
// serves wait for it.
func (s *Store) WaitVectorIndex(ctx context.Context) error {
	for s.vi.building.Load() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// vectorIndexPath is the index's file name in dir.
func vectorIndexPath(dir string) string { return filepath.Join(dir, "vectors.ann") }

func (s *Store) initVectorIndex(opts Options) {
	s.vi.threshold = opts.VectorIndexThreshold
	if s.vi.threshold == 0 {
		s.vi.threshold = DefaultVectorIndexThreshold
	}
	s.vi.probe = opts.VectorProbe
	s.vi.ctx, s.vi.cancel = context.WithCancel(context.Background())
}

// dropMappedVectors releases the resident pages of the vectors that lie in the
// saved index's mapping, after a pass over all of them (the index's load or
// build): the index's codes answer searches, and exact re-scoring reads back
// the few vectors it needs. Called with mu held, or before the store is
// shared.
func (s *Store) dropMappedVectors() {
	if s.seg != nil && s.seg.mapping != nil {
		dropMapped(floatBytes(s.idx.vecs.base))
	}
}

// openVectorIndex loads the saved index after the log was replayed, or starts
// building one when the store holds enough vectors.
func (s *Store) openVectorIndex() {
	if s.vi.threshold < 0 {
		return
	}
	defer s.dropMappedVectors()
	a, err := s.loadVectorIndex()
	switch {
	case err == nil:
		s.vi.ann = a
		// What the lists were trained for, from their number (the inverse
		// of ann.DefaultLists): a store that outgrew them retrains.
		s.vi.trained = max(1, a.Lists()*a.Lists()/4)
		s.maybeBuildVectorIndex()
		return
	case errors.Is(err, fs.ErrNotExist):
	default:
		s.logger.Warn("rag store: the vector index file does not apply; searches are exact until it is rebuilt from the store's vectors", "dir", s.dir, "error", err)
	}
	s.maybeBuildVectorIndex()
}

// loadVectorIndex reads the saved index, checks it was saved for the vectors
// the store now has at its ordinals, and brings it up to date with the log's
// tail (puts and deletes after it was saved).
func (s *Store) loadVectorIndex() (*ann.Index, error) {
	f, err := os.Open(vectorIndexPath(s.dir))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	x := s.idx // no writer runs yet
	if x.dim == 0 {
		return nil, errors.New("the store holds no vectors")
	}
	a, err := ann.Read(f, func(h ann.Header) error {
		if h.Dim != x.dim {
			return fmt.Errorf("it holds %d-dimensional vectors, the store %d-dimensional ones", h.Dim, x.dim)
		}
		if h.Ordinals > len(x.chunks) {
			return fmt.Errorf("it covers %d chunks, the log holds %d", h.Ordinals, len(x.chunks))
		}
		if h.Tag != vectorsTag(x, h.Ordinals) {
			return errors.New("it was saved for other vectors (the log was rewritten since)")
		}
		return nil
	}, func(ord int) []float32 { return x.vecs.at(ord) })
	if err != nil {
		return nil, err
	}
	for ord := range x.chunks {
		e := &x.chunks[ord]
		switch live := !e.dead && e.hasVec; {
		case live && !a.Has(uint32(ord)):
			if err := a.Add(uint32(ord), x.vecs.at(ord)); err != nil {
				return nil, err
			}
		case !live && a.Has(uint32(ord)):
			a.Delete(uint32(ord))
		}
	}
	return a, nil
}

// vectorsTag identifies the vectors at ordinals 0..n-1 (their count and a
// CRC32-C of their bytes): a saved index applies to them only.
func vectorsTag(x *index, n int) uint64 {
	return uint64(n)<<32 | uint64(x.vecs.checksum(n))
}

// maybeBuildVectorIndex starts a background build when the store holds
// enough vectors and has no index, or has outgrown its lists fourfold.
func (s *Store) maybeBuildVectorIndex() {
	if s.vi.threshold < 0 || s.vi.ctx.Err() != nil {
		return
	}
	s.mu.RLock()
	live := 0
	if s.idx.dim > 0 {
		live = s.idx.liveChunks
	}
	need := live >= s.vi.threshold && (s.vi.ann == nil || live > 4*max(s.vi.trained, 1))
	s.mu.RUnlock()
	if !need || !s.vi.building.CompareAndSwap(false, true) {
		return
	}
	s.vi.startMu.Lock()
	defer s.vi.startMu.Unlock()
	if s.vi.stopped {
		s.vi.building.Store(false)
		return
	}
	s.vi.wg.Add(1)
	go s.buildVectorIndex()
}

// buildVectorIndex trains and fills an index from a snapshot of the vectors,
// without holding a lock (vectors at existing ordinals never change: puts
// append, deletes only mark chunks dead), then catches up with the writes
// made meanwhile and installs it.
func (s *Store) buildVectorIndex() {
	defer s.vi.wg.Done()
	installed := false
	defer func() {
		s.vi.building.Store(false)
		if installed {
			// Writes during a long build may have outgrown it already.
			s.maybeBuildVectorIndex()
		}
	}()
	s.mu.RLock()
	x := s.idx
	n, dim := len(x.chunks), x.dim
	vecs := x.vecs.frozen()
	live := make([]bool, n)
	snapshot := 0
	for ord := range x.chunks {
		live[ord] = !x.chunks[ord].dead && x.chunks[ord].hasVec
		if live[ord] {
			snapshot++
		}
	}
	s.mu.RUnlock()
	vec := func(ord int) []float32 {
		if !live[ord] {
			return nil
		}
		return vecs.at(ord)
	}
	cents, err := ann.Train(s.vi.ctx, dim, n, vec, ann.TrainOptions{Seed: 1})
	if err != nil {
		s.buildFailed(err)
		return
	}
	a, err := ann.Build(s.vi.ctx, dim, cents, n, vec)
	if err != nil {
		s.buildFailed(err)
		return
	}
	// Installed under writeMu too: the index changes only under it (writers,
	// compactions), so they see one index from start to end.
	s.writeMu.Lock()
	s.mu.Lock()
	if s.idx != x || s.closed {
		// A compaction renumbered the chunks meanwhile: the next write
		// starts over.
		s.mu.Unlock()
		s.writeMu.Unlock()
		return
	}
	for ord := range n {
		if x.chunks[ord].dead {
			a.Delete(uint32(ord))
		}
	}
	for ord := n; ord < len(x.chunks); ord++ {
		if e := &x.chunks[ord]; !e.dead && e.hasVec {
			_ = a.Add(uint32(ord), x.vecs.at(ord)) // dimension checked on put
		}
	}
	// trained is the snapshot's size, not the index's after the catch-up: a
	// store that grew fourfold during a long build retrains at its next write.
	s.vi.ann, s.vi.trained = a, snapshot
	s.vi.dirty.Store(true)
	// Read under the locks: writers change the index as soon as they are let go.
	size, lists := a.Len(), a.Lists()
	s.mu.Unlock()
	s.writeMu.Unlock()
	installed = true
	s.logger.Info("rag store: built the vector index", "dir", s.dir, "vectors", size, "lists", lists)
	s.saveVectorIndex()
}

func (s *Store) buildFailed(err error) {
	if s.vi.ctx.Err() != nil {
		return // closing
	}
	s.logger.Warn("rag store: building the vector index failed; searches stay exact", "dir", s.dir, "error", err)
}

// saveVectorIndex writes the index when it changed since it was last saved:
// to a temporary file, fsynced, renamed over the old one. A failure is logged
// (the next open rebuilds the index; nothing is lost).
func (s *Store) saveVectorIndex() {
	s.vi.saveMu.Lock()
	defer s.vi.saveMu.Unlock()
	if !s.vi.dirty.Load() {
		return
	}
	// The read lock keeps writers from changing the index while it is
	// written.
	s.mu.RLock()
	defer s.mu.RUnlock()
	a := s.vi.ann
	if a == nil {
		return
	}
	s.vi.dirty.Store(false)
	// The tag reads every vector; so did the build that preceded most saves.
	defer s.dropMappedVectors()
	if err := writeVectorIndex(s.dir, a, vectorsTag(s.idx, a.Ordinals()), !s.noSync); err != nil {
		s.vi.dirty.Store(true)
		s.logger.Warn("rag store: saving the vector index failed; the next open rebuilds it", "dir", s.dir, "error", err)
	}
}

func writeVectorIndex(dir string, a *ann.Index, tag uint64, sync bool) error {
	tmp, err := os.CreateTemp(dir, "vectors.ann.tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := a.Write(tmp, tag); err != nil {
		tmp.Close()
		return err
	}
	if sync {
		if err := tmp.Sync(); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), vectorIndexPath(dir))
}

// vectorLists returns the index's list for each of a put's vectors (nil when
// there is no index or no vectors): the costly part of an insert, a pass over
// the centroids, done before the write lock that readers wait on. Called with
// writeMu held, so the index is not replaced meanwhile.
func (s *Store) vectorLists(r *record) []uint32 {
	a := s.vi.ann
	if a == nil || r.kind != recPut || r.dim != a.Dim() {
		return nil
	}
	lists := make([]uint32, len(r.chunks))
	for i := range lists {
		lists[i] = a.Nearest(r.vectors[i*r.dim : (i+1)*r.dim])
	}
	return lists
}

// vectorsChanged updates the index after a put (its chunks from ordinal
// first on, in lists when vectorLists found them) or a delete, both
// replacing old's chunks. Called with writeMu and mu held (or while the log
// is replayed on open).
func (s *Store) vectorsChanged(old []uint32, first int, lists []uint32) {
	a := s.vi.ann
	if a == nil {
		return
	}
	for _, ord := range old {
		a.Delete(ord)
	}
	x := s.idx
	for ord := first; ord < len(x.chunks); ord++ {
		if !x.chunks[ord].hasVec {
			continue
		}
		v := x.vecs.at(ord)
		// The dimension was checked on put: these cannot fail.
		if i := ord - first; i < len(lists) {
			_ = a.AddToList(uint32(ord), lists[i], v)
		} else {
			_ = a.Add(uint32(ord), v)
		}
	}
	s.vi.dirty.Store(true)
}

// vectorsRenumbered returns the index renumbered for fresh, old compacted
// (nil when there is none). Called with writeMu held: neither index nor the
// vector index changes.
func (s *Store) vectorsRenumbered(old, fresh *index) *ann.Index {
	a := s.vi.ann
	if a == nil {
		return nil
	}
	newOrd := make([]uint32, len(old.chunks))
	for i := range newOrd {
		newOrd[i] = ^uint32(0)
	}
	for id, d := range fresh.docs {
		for j, ord := range old.docs[id].ords {
			newOrd[ord] = d.ords[j]
		}
	}
	s.vi.dirty.Store(true)
	return a.Remap(len(fresh.chunks), func(o uint32) (uint32, bool) {
		if int(o) >= len(newOrd) || newOrd[o] == ^uint32(0) {
			return 0, false
		}
		return newOrd[o], true
	})
}

// stopVectorIndex stops a build under way and keeps new ones from starting.
// Called without writeMu (a build takes it to install its index).
func (s *Store) stopVectorIndex() {
	s.vi.startMu.Lock()
	s.vi.stopped = true
	s.vi.startMu.Unlock()
	s.vi.cancel()
	s.vi.wg.Wait()
}

// searchVectorIndex searches the approximate index when there is one and the
// store holds at least the threshold's vectors, into top; ok false means
// search exactly (no index, or a filter too selective for it). match is the
// parsed filter, nil for none. Called with mu held for reading.
func (s *Store) searchVectorIndex(x *index, q []float32, top *topN, match *rag.Expr) (ok bool) {
	var meta metaCache // the filter's decoded metadata
	a := s.vi.ann
	if a == nil || a.Len() < s.vi.threshold {
		return false
	}
	accept := func(ord uint32) bool {
		e := &x.chunks[ord]
		return !e.dead && e.hasVec && (match == nil || match.Matches(x.metadataVia(ord, &meta)))
	}
	exact := func(ord uint32) float32 { return ann.Dot(q, x.vecs.at(int(ord))) }
	found, err := a.Search(q, top.n, ann.SearchOptions{Probe: s.vi.probe}, accept, exact)
	if err != nil {
		return false // ann.ErrSelective: exact over the matching chunks
	}
	top.heap = top.heap[:0]
	for _, h := range found {
		top.heap = append(top.heap, scored{h.Ord, float64(h.Score)})
	}
	return true
}
