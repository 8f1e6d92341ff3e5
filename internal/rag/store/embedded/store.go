// Package embedded is Helix's default RAG store: pure Go, in one directory, no
// service to run. It holds chunks, their vectors and a BM25 keyword index in
// memory, and persists them in an append-only log that is replayed on open.
//
// Vector search is exact (a dot product with every normalised vector) below
// Options.VectorIndexThreshold vectors, and approximate above it, through the
// inverted-file index of package ann, built in the background and saved next
// to the log (see vector.go). Keyword search is BM25 over terms from a [textproc.Analyzer], in
// two fields: a chunk's text and its title, each with its own statistics, the
// best field's score plus half the other's (see [Store.SearchKeyword]).
//
// Durability: every Put and Delete is one self-framed log record (a marker, its
// length and CRC32-Cs) and (unless Options.NoSync) fsynced before it is
// applied and acknowledged, so after a crash a document is either fully present
// or absent. Concurrent writes share one write and fsync (a group commit). A
// torn or corrupt record is skipped on replay and logged: the records before
// and after it are kept, and opening or querying a store never changes its
// file (a torn tail is cut by the next write; [Verify] reports damage and
// [Repair] rewrites a log without it). When the log holds more replaced or
// deleted bytes than live ones it is rewritten (to a temporary file, fsynced,
// then renamed over the log).
package embedded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/textproc"
)

// BM25 are the parameters of BM25 ranking.
type BM25 struct {
	// K1 saturates term frequency: higher values let repeated terms count longer.
	K1 float64
	// B is how much a chunk's length normalises its score, from 0 (not at all)
	// to 1 (fully).
	B float64
}

// DefaultBM25 are Lucene's and Elasticsearch's defaults (k1 1.2, b 0.75), the
// parameters of BEIR's published BM25 baseline, whose way of scoring a title
// and a text as two fields SearchKeyword follows. (Anserini's 0.9 / 0.4, the
// other published set, were the default while the store had one field: they
// go with Anserini's "flat" indexes of title and text as one text.
// BENCHMARKS.md has both sets' figures.)
var DefaultBM25 = BM25{K1: 1.2, B: 0.75}

// DefaultCompactMinGarbage is the replaced-or-deleted log size below which the
// log is never rewritten: small stores are not worth the I/O.
const DefaultCompactMinGarbage = 16 << 20

// Options configure a [Store]. The zero value is the default.
type Options struct {
	// Analyzer makes keyword terms of chunks and queries; nil means
	// textproc.English(). A store must be reopened with the analyzer it was
	// filled with: the index is rebuilt from the log with it.
	Analyzer textproc.Analyzer
	// BM25 parameters; nil means DefaultBM25.
	BM25 *BM25
	// NoSync skips the fsync after each write: faster ingest, but a machine
	// crash (not a process crash) may lose the latest writes.
	NoSync bool
	// CompactMinGarbage is the replaced-or-deleted log size from which the log
	// is rewritten when garbage also exceeds the live data; 0 means
	// DefaultCompactMinGarbage.
	CompactMinGarbage int64
	// Logger receives recovery and compaction messages; nil means slog.Default().
	Logger *slog.Logger
	// VectorIndexThreshold is the number of vectors from which vector
	// searches use the approximate index (built in the background) instead
	// of comparing every vector; 0 means DefaultVectorIndexThreshold, < 0
	// never.
	VectorIndexThreshold int
	// IndexSaveBytes is the log growth after which the keyword index is saved
	// in the background, so that an open after a crash replays only the log
	// written since (see bgsave.go); a save also waits for a growth of a
	// quarter of what the last one covered. 0 means DefaultIndexSaveBytes,
	// < 0 saves only at Close.
	IndexSaveBytes int64
	// VectorProbe is the number of the index's lists a vector search scans:
	// more finds more of the exact neighbours, slower; 0 means the square root
	// of the number of lists (at least 8).
	VectorProbe int
}

// Store is the embedded [rag.Store]. Safe for concurrent use: queries run while
// documents are put, and see each document's old chunks or its new ones.
type Store struct {
	dir      string
	analyzer textproc.Analyzer
	bm25     BM25
	noSync   bool
	minGarb  int64
	logger   *slog.Logger
	lock     *os.File

	// writeMu serialises writers (log appends and the in-memory changes that
	// follow them); mu guards the index against readers only briefly.
	writeMu sync.Mutex
	log     *logFile // nil once closed

	// queueMu guards queue, the writes waiting for a group commit (group.go).
	queueMu sync.Mutex
	queue   []*pendingWrite

	// compacting is the background compaction under way (compact.go), nil
	// when none; guarded by writeMu. compactWG waits for its goroutine.
	compacting     *compaction
	compactWG      sync.WaitGroup
	lastCompaction *compaction // the latest that switched; guarded by writeMu

	mu     sync.RWMutex
	idx    *index
	closed bool // guarded by mu

	// seg is the saved index the store opened with (its mapping stays until
	// Close), segCovered the log offset the saved index covers (0: none
	// matches the log); guarded by writeMu.
	seg        *segment
	segCovered int64
	segSum     uint32 // the CRC32-C of the log's bytes segCovered covers

	// The background save (bgsave.go): saveBytes is the log growth that
	// starts one; saving is set while one is under way and saveStopped once
	// Close began (guarded by writeMu); saveWG waits for its goroutine.
	saveBytes   int64
	saving      bool
	saveStopped bool
	saveWG      sync.WaitGroup

	vi vectorIndex // see vector.go
}

// errClosed is returned by calls on a closed store.
var errClosed = errors.New("the store is closed")

// Open opens the store in dir, creating the directory if needed, and replays its
// log. Only one Store (in any process) may have dir open at a time.
func Open(dir string, opts Options) (*Store, error) {
	s := &Store{
		dir:       dir,
		analyzer:  opts.Analyzer,
		bm25:      DefaultBM25,
		noSync:    opts.NoSync,
		minGarb:   opts.CompactMinGarbage,
		logger:    opts.Logger,
		saveBytes: opts.IndexSaveBytes,
	}
	if s.saveBytes == 0 {
		s.saveBytes = DefaultIndexSaveBytes
	}
	if s.analyzer == nil {
		s.analyzer = textproc.English()
	}
	if opts.BM25 != nil {
		if !(opts.BM25.K1 >= 0) || !(opts.BM25.B >= 0 && opts.BM25.B <= 1) {
			return nil, fmt.Errorf("store %s: BM25 k1 must be ≥ 0 and b between 0 and 1 (got k1=%v, b=%v)", dir, opts.BM25.K1, opts.BM25.B)
		}
		s.bm25 = *opts.BM25
	}
	if s.minGarb <= 0 {
		s.minGarb = DefaultCompactMinGarbage
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("store %s: %w", dir, err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	s.lock = lock
	// A save that was interrupted leaves its temporary file: the saved index
	// itself is the previous one, intact.
	os.Remove(segmentPath(dir) + ".tmp")
	// The index reads chunks from the log through a descriptor of its own,
	// opened before the log is replayed: a replaced document's terms are read
	// back from its record during the replay.
	src, err := os.OpenFile(logPath(dir), os.O_RDONLY|os.O_CREATE, 0o644)
	if err != nil {
		unlockDir(lock)
		return nil, fmt.Errorf("store %s: %w", dir, err)
	}
	head := make([]byte, logHeaderSize)
	n, _ := src.ReadAt(head, 0)
	framed := logVersion(string(head[:n])) < 1 || logVersion(string(head[:n])) >= 3
	s.idx = newIndex(src, framed)
	// The saved index, when it is sound and matches the log, spares the
	// replay of what it covers (see segment.go).
	var resume int64
	var prior []Damage
	if st, err := src.Stat(); err == nil && framed && st.Size() > logHeaderSize {
		seg, err := loadSegment(dir, src, st.Size(), src)
		switch {
		case err != nil:
			s.logger.Warn("rag store: the saved index cannot be used; it is rebuilt from the log", "dir", dir, "file", segmentPath(dir), "reason", err.Error())
		case seg != nil:
			s.idx, s.seg, s.segCovered, s.segSum = seg.idx, seg, seg.covered, seg.sum
			resume, prior = seg.covered, seg.damage
		}
	}
	s.initVectorIndex(opts)
	lf, err := openLog(dir, s.logger, resume, prior, func(r *record, off, size int64) error {
		gone, err := s.goneTerms(r.docID)
		if err != nil {
			return err
		}
		return s.apply(r, off, size, s.analyze(r), gone)
	})
	if err != nil {
		src.Close()
		s.unmapSegment()
		unlockDir(lock)
		return nil, err
	}
	s.log = lf
	s.openVectorIndex()
	return s, nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// Documents implements [rag.Store].
func (s *Store) Documents(ctx context.Context) (map[string]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]string, len(s.idx.docs))
	for id, d := range s.idx.docs {
		out[id] = d.hash.String()
	}
	return out, nil
}

// Stats implements [rag.Store].
func (s *Store) Stats(ctx context.Context) (rag.Stats, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return rag.Stats{Documents: len(s.idx.docs), Chunks: s.idx.liveChunks}, nil
}

// Put implements [rag.Store]. It returns once the document's record is in the
// log (and fsynced, unless Options.NoSync) and in the index; concurrent Puts
// share fsyncs (see group.go).
func (s *Store) Put(ctx context.Context, docID, hash string, chunks []rag.Chunk, vectors [][]float32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w, err := s.preparePut(docID, hash, chunks, vectors)
	if err != nil {
		return err
	}
	s.commitWrites([]*pendingWrite{w})
	return w.err
}

// Delete implements [rag.Store].
func (s *Store) Delete(ctx context.Context, docID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	_, ok := s.idx.docs[docID]
	s.mu.RUnlock()
	if !ok {
		return nil
	}
	r := &record{kind: recDelete, docID: docID}
	w := &pendingWrite{r: r, frame: encodeFrame(nil, r)}
	s.commitWrites([]*pendingWrite{w})
	return w.err
}

// apply changes the index for a record already in the log at off; gone are
// the terms of the document it replaces or deletes. For the replay on open.
func (s *Store) apply(r *record, off, size int64, analyzed, gone []analyzedChunk) error {
	if r.kind == recPut {
		if err := s.idx.checkDim(r); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.applyLocked(r, off, size, analyzed, gone, nil)
	s.mu.Unlock()
	return nil
}

// applyLocked changes the index, and the vector index, for a checked record
// in the log at off (lists: its vectors' lists, see vectorLists; nil to find
// them here). Called with mu held for writing.
func (s *Store) applyLocked(r *record, off, size int64, analyzed, gone []analyzedChunk, lists []uint32) {
	old, first := s.idx.docOrds(r.docID), len(s.idx.chunks)
	switch r.kind {
	case recPut:
		s.idx.put(r, off, size, analyzed, gone)
		s.vectorsChanged(old, first, lists)
	case recDelete:
		s.idx.remove(r.docID, gone)
		s.vectorsChanged(old, len(s.idx.chunks), nil)
	}
}

// goneTerms analyses the stored record of document docID (nil when the store
// does not hold it): what a replacement or delete takes out of the keyword
// statistics. Called by writers only (under writeMu, or while opening), so the
// index does not change meanwhile.
func (s *Store) goneTerms(docID string) ([]analyzedChunk, error) {
	d := s.idx.docs[docID]
	if d == nil {
		return nil, nil
	}
	r, err := s.idx.record(d)
	if err != nil {
		return nil, err
	}
	return s.analyze(r), nil
}

// newPutRecord validates a put and normalises its vectors.
func (s *Store) newPutRecord(docID, hash string, chunks []rag.Chunk, vectors [][]float32) (*record, error) {
	if docID == "" {
		return nil, errors.New("the document id is empty")
	}
	if vectors != nil && len(vectors) != len(chunks) {
		return nil, fmt.Errorf("%d vectors for %d chunks", len(vectors), len(chunks))
	}
	r := &record{kind: recPut, docID: docID, hash: hash, chunks: make([]rag.Chunk, len(chunks))}
	for i, c := range chunks {
		if c.DocID == "" {
			c.DocID = docID
		} else if c.DocID != docID {
			return nil, fmt.Errorf("chunk %d belongs to document %q", i, c.DocID)
		}
		if c.ID == "" {
			c.ID = docID + "#" + strconv.Itoa(c.Index)
		}
		r.chunks[i] = c
	}
	if len(vectors) > 0 {
		dim := len(vectors[0])
		if dim == 0 {
			return nil, errors.New("vector 0 is empty")
		}
		s.mu.RLock()
		have := s.idx.dim
		s.mu.RUnlock()
		if have > 0 && dim != have {
			return nil, fmt.Errorf("vectors have %d dimensions, the store holds %d-dimensional vectors (a store holds one embedding model's vectors; use a new data directory for another model)", dim, have)
		}
		r.dim = dim
		r.vectors = make([]float32, 0, dim*len(vectors))
		for i, v := range vectors {
			if len(v) != dim {
				return nil, fmt.Errorf("vector %d has %d dimensions, vector 0 has %d", i, len(v), dim)
			}
			var sum float64
			for _, x := range v {
				sum += float64(x) * float64(x)
			}
			if math.IsNaN(sum) || math.IsInf(sum, 0) {
				return nil, fmt.Errorf("vector %d holds NaN or infinite values", i)
			}
			if sum == 0 {
				return nil, fmt.Errorf("vector %d is all zeros (no direction to compare)", i)
			}
			inv := 1 / math.Sqrt(sum)
			for _, x := range v {
				r.vectors = append(r.vectors, float32(float64(x)*inv))
			}
		}
	}
	return r, nil
}

// Close flushes the log and releases the directory. Calls after Close fail.
func (s *Store) Close() error {
	s.stopVectorIndex() // before writeMu: a build installs its index under it
	// A background save renames its file under writeMu: it is waited for
	// without it, and no other starts.
	s.writeMu.Lock()
	s.saveStopped = true
	s.writeMu.Unlock()
	s.saveWG.Wait()
	s.writeMu.Lock()
	if s.log == nil {
		s.writeMu.Unlock()
		return nil
	}
	s.saveIndex()
	s.saveVectorIndex()
	err := s.log.close()
	s.log = nil
	s.mu.Lock()
	s.closed = true
	s.idx.closeSource()
	s.unmapSegment()
	s.mu.Unlock()
	c := s.compacting
	s.writeMu.Unlock()
	// A background compaction gives up (its switch finds the log closed) and
	// removes its temporary file before the directory is released.
	if c != nil {
		c.stopped.Store(true)
	}
	s.compactWG.Wait()
	unlockDir(s.lock)
	if err != nil {
		return fmt.Errorf("store %s: %w", s.dir, err)
	}
	return nil
}

// maybeCompact starts a background compaction (compact.go) when the log is
// mostly garbage and none is under way. Called with writeMu held, so the index
// and the log agree.
func (s *Store) maybeCompact() {
	garbage, live := s.log.size-logHeaderSize-s.idx.liveBytes, s.idx.liveBytes
	if garbage < s.minGarb || garbage <= live || s.compacting != nil {
		return
	}
	s.startCompaction()
}

// compact rewrites the log at once, holding writers: for migrating a log of an
// older format before the first write to it.
func (s *Store) compact() error {
	// Readers only read the index, and writers wait for writeMu: reading the
	// index without mu is safe here.
	idx := s.idx
	before := s.log.size
	recs, err := idx.docRecords()
	if err != nil {
		return err
	}
	lf, sizes, err := rewriteLog(s.dir, s.log, recs, !s.noSync)
	if lf == nil {
		return err
	}
	if err != nil {
		s.logger.Warn("rag store: the compacted log may not survive a machine crash", "dir", s.dir, "error", err)
	}
	s.log = lf
	ids := make([]string, len(recs))
	offs := make([]int64, len(recs))
	off := logHeaderSize
	for i, r := range recs {
		ids[i], offs[i] = r.docID, off
		off += sizes[i]
	}
	s.reindex(ids, offs, sizes)
	s.logger.Info("rag store: compacted the log", "dir", s.dir, "bytes_before", before, "bytes_after", lf.size)
	return nil
}

// saveIndex saves the index beside the log unless the saved one is current
// (see segment.go). Called with writeMu held, with no background save under
// way. A failure costs the next open a longer replay, nothing else: it is
// logged.
func (s *Store) saveIndex() {
	l := s.log
	if l == nil || l.legacy || l.validEnd == s.segCovered || l.validEnd <= logHeaderSize {
		return
	}
	prev := checksummed{}
	if s.segCovered > 0 {
		prev = checksummed{n: s.segCovered, sum: s.segSum}
	}
	sum, err := saveSegment(s.dir, s.idx, l.validEnd, damageBefore(l, l.validEnd), l.f, prev)
	if err != nil {
		s.logger.Warn("rag store: saving the index failed; the next open replays the log", "dir", s.dir, "error", err)
		return
	}
	s.segCovered, s.segSum = l.validEnd, sum
}

// unmapSegment releases the saved index's mapping. Called once no query can
// use it (closing, with mu held, or on a failed open).
func (s *Store) unmapSegment() {
	if s.seg != nil && s.seg.mapping != nil {
		unmapFile(s.seg.mapping)
		s.seg.mapping = nil
	}
}

// reindex replaces the index with one for the rewritten log: the live
// documents ids (in the order they were put) at offs, of sizes bytes. Called
// with writeMu held, after the rewritten log took the old one's place.
func (s *Store) reindex(ids []string, offs, sizes []int64) {
	// The new index reads the new log through a descriptor of its own; the old
	// one's is closed once no query can be reading through it.
	var src io.ReaderAt
	if f, err := os.Open(s.log.path); err == nil {
		src = f
	} else {
		// Reading through the log's own descriptor works as well; only the
		// next compaction cannot leave it open for queries of this index.
		s.logger.Warn("rag store: reopening the compacted log for reading failed; queries read through the log's own descriptor", "dir", s.dir, "error", err)
		src = struct{ io.ReaderAt }{s.log.f}
	}
	idx := s.idx
	fresh := idx.rebuilt(ids, offs, sizes, src)
	vectors := s.vectorsRenumbered(idx, fresh)
	// The saved index is of the old log: gone, so that the next open does not
	// warn about it, and the new one saved in the background.
	s.segCovered, s.segSum = 0, 0
	os.Remove(segmentPath(s.dir))
	s.mu.Lock()
	s.idx = fresh
	s.vi.ann = vectors
	idx.closeSource()
	s.mu.Unlock()
	if !s.saving && !s.saveStopped && s.saveBytes >= 0 {
		s.startSave()
	}
}

// logPath is the log's file name in dir.
func logPath(dir string) string { return filepath.Join(dir, "chunks.log") }
