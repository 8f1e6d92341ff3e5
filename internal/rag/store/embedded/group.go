package embedded

import (
	"context"
	"fmt"

	"github.com/arvenza/helix/internal/rag"
)

// Group commit. A write is a record encoded (and its chunks analysed) before
// any lock, then queued; whichever writer next holds writeMu commits every
// queued record with one write and one fsync, applies them to the index, and
// marks them done. Writers that find their records done when they get writeMu
// return at once. While one group is being fsynced the next one gathers, so
// concurrent writers share fsyncs without any timer or linger, and a lone
// writer pays exactly one fsync as before.
//
// A record is acknowledged (its Put returns nil) only after the fsync that
// covers it; a failed write or fsync fails every record of its group, and the
// log is cut back to where the group began, so the next group does not follow
// a partial record.

// maxGroupBytes bounds one group's write: larger queues are committed in
// several groups, so a huge batch does not hold the next writers' records.
const maxGroupBytes = 8 << 20

// pendingWrite is one record waiting for a group commit. done and err are
// written and read under writeMu.
type pendingWrite struct {
	r        *record
	analyzed []analyzedChunk
	frame    []byte          // the record's framed encoding
	gone     []analyzedChunk // the terms of the document it replaces or deletes
	done     bool
	err      error
}

// prepare validates, encodes and analyses a put outside any lock.
func (s *Store) preparePut(docID, hash string, chunks []rag.Chunk, vectors [][]float32) (*pendingWrite, error) {
	r, err := s.newPutRecord(docID, hash, chunks, vectors)
	if err != nil {
		return nil, fmt.Errorf("store %s: put %q: %w", s.dir, docID, err)
	}
	frame := encodeFrame(nil, r)
	if int64(len(frame))-frameHeader > maxRecordBytes {
		return nil, fmt.Errorf("store %s: put %q: the document is too large for one log record (%d bytes, at most %d): split it into smaller documents", s.dir, docID, len(frame)-frameHeader, maxRecordBytes)
	}
	// Analysis is the expensive part of indexing: done before any lock, on
	// the caller's goroutine, so concurrent writers analyse in parallel.
	return &pendingWrite{r: r, analyzed: s.analyze(r), frame: frame}, nil
}

// PutBatch implements [rag.BatchStore]: each document is put as by Put, and
// all of them share the fsyncs of as few group commits as their size allows.
// errs[i] is docs[i]'s outcome: a document that fails validation fails alone;
// a failed write fails the documents of its group.
func (s *Store) PutBatch(ctx context.Context, docs []rag.PutDoc) []error {
	errs := make([]error, len(docs))
	if err := ctx.Err(); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	ws := make([]*pendingWrite, 0, len(docs))
	at := make([]int, 0, len(docs))
	for i, d := range docs {
		w, err := s.preparePut(d.ID, d.Hash, d.Chunks, d.Vectors)
		if err != nil {
			errs[i] = err
			continue
		}
		ws = append(ws, w)
		at = append(at, i)
	}
	s.commitWrites(ws)
	for j, w := range ws {
		errs[at[j]] = w.err
	}
	return errs
}

// commitWrites queues ws and returns once a group commit has done each of them.
func (s *Store) commitWrites(ws []*pendingWrite) {
	if len(ws) == 0 {
		return
	}
	s.queueMu.Lock()
	s.queue = append(s.queue, ws...)
	s.queueMu.Unlock()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	for _, w := range ws {
		for !w.done {
			s.commitGroup()
		}
	}
}

// takeGroup removes the next group from the queue: at least one record, then
// as many as fit in maxGroupBytes.
func (s *Store) takeGroup() []*pendingWrite {
	s.queueMu.Lock()
	defer s.queueMu.Unlock()
	n, bytes := 0, 0
	for n < len(s.queue) && (n == 0 || bytes+len(s.queue[n].frame) <= maxGroupBytes) {
		bytes += len(s.queue[n].frame)
		n++
	}
	group := s.queue[:n:n]
	if n == len(s.queue) {
		s.queue = nil
	} else {
		s.queue = append([]*pendingWrite(nil), s.queue[n:]...)
	}
	return group
}

// commitGroup writes, fsyncs and applies the next group. Called with writeMu
// held.
func (s *Store) commitGroup() {
	group := s.takeGroup()
	finish := func(err error) {
		for _, w := range group {
			if !w.done {
				w.done, w.err = true, err
			}
		}
	}
	if s.log == nil {
		finish(fmt.Errorf("store %s: %w", s.dir, errClosed))
		return
	}
	if s.log.legacy {
		// The first write to a log of an older format rewrites it in the
		// current one (atomically, like a compaction): reading never does.
		if err := s.compact(); err != nil {
			finish(fmt.Errorf("store %s: rewrite the log in the current format: %w", s.dir, err))
			return
		}
	}
	// Checked here, under writeMu and in the group's order: checks before it
	// raced other writers, and a record the replay would refuse must never
	// reach the log. exists follows the group's own puts and deletes.
	exists := map[string]bool{}
	present := func(id string) bool {
		if e, ok := exists[id]; ok {
			return e
		}
		s.mu.RLock()
		_, ok := s.idx.docs[id]
		s.mu.RUnlock()
		return ok
	}
	dim := s.idx.dim
	var buf []byte
	var written []*pendingWrite
	// The terms of the documents the group replaces or deletes leave the
	// keyword statistics with them (see Store.goneTerms): read before the
	// group is written, so a failed read fails its record alone. A document
	// the group itself put earlier goes with that put's terms.
	putInGroup := map[string]*pendingWrite{}
	gone := func(w *pendingWrite) error {
		if p, ok := putInGroup[w.r.docID]; ok {
			if p != nil {
				w.gone = p.analyzed
			}
			return nil
		}
		var err error
		w.gone, err = s.goneTerms(w.r.docID)
		return err
	}
	for _, w := range group {
		switch w.r.kind {
		case recDelete:
			if !present(w.r.docID) {
				w.done = true // nothing to delete: not an error, and no record
				continue
			}
			if err := gone(w); err != nil {
				w.done, w.err = true, fmt.Errorf("store %s: delete %q: %w", s.dir, w.r.docID, err)
				continue
			}
			exists[w.r.docID] = false
			putInGroup[w.r.docID] = nil
		case recPut:
			if w.r.dim > 0 && dim > 0 && w.r.dim != dim {
				w.done, w.err = true, fmt.Errorf("store %s: put %q: vectors have %d dimensions, the store holds %d-dimensional vectors (a store holds one embedding model's vectors; use a new data directory for another model)", s.dir, w.r.docID, w.r.dim, dim)
				continue
			}
			if err := gone(w); err != nil {
				w.done, w.err = true, fmt.Errorf("store %s: put %q: %w", s.dir, w.r.docID, err)
				continue
			}
			if w.r.dim > 0 {
				dim = w.r.dim
			}
			exists[w.r.docID] = true
			putInGroup[w.r.docID] = w
		}
		if buf == nil && len(group) == 1 {
			buf = w.frame // a lone record is written as it is
		} else {
			buf = append(buf, w.frame...)
		}
		written = append(written, w)
	}
	if len(written) == 0 {
		return
	}
	if err := s.log.appendFrames(buf, !s.noSync); err != nil {
		finish(fmt.Errorf("store %s: %w", s.dir, err))
		return
	}
	// Where the group begins: known only now, as a torn tail may have been
	// cut before it.
	off := s.log.size - int64(len(buf))
	lists := make([][]uint32, len(written))
	for i, w := range written {
		lists[i] = s.vectorLists(w.r)
	}
	s.mu.Lock()
	for i, w := range written {
		s.applyLocked(w.r, off, int64(len(w.frame)), w.analyzed, w.gone, lists[i])
		off += int64(len(w.frame))
	}
	s.mu.Unlock()
	finish(nil)
	s.maybeCompact()
	s.maybeSaveIndex()
	s.maybeBuildVectorIndex()
}
