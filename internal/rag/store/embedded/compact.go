package embedded

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sync/atomic"
	"time"
)

// Background compaction. When the log holds more replaced or deleted bytes than
// live ones, a writer (holding writeMu, so the index and the log agree) takes a
// snapshot: a frozen copy of the index and the log's size at that moment, the
// mark. A goroutine then writes a put record per live document of the snapshot to
// chunks.log.tmp and builds the index of the new log (without tombstones) from
// the frozen copy, without any lock, while writers append to the log and
// readers query; the writes committed meanwhile are kept aside (the delta).
// The switch takes writeMu again, briefly: it copies the records appended
// after the mark, as they are, to the end of the temporary file, fsyncs it,
// renames it over the log, applies the delta to the new index and swaps it in.
//
// A crash at any point leaves a valid store: before the rename the log is
// untouched (the temporary file is removed at the next open); after it the new
// log holds every live document of the snapshot and every record written
// since, in order, fsynced before the rename.

// compactStage names the points of a background compaction at which tests
// inject failures (compactHook).
type compactStage string

const (
	stageSnapshotWritten compactStage = "snapshot written" // the temporary file holds the snapshot, not synced
	stageTailCopied      compactStage = "tail copied"      // and the records written meanwhile, not synced
	stageRenamed         compactStage = "renamed"          // the new log replaced the old one, directory not synced
)

// compactHook, when set (by tests), runs at each stage; an error fails the
// compaction there.
var compactHook func(s *Store, stage compactStage) error

func (s *Store) hook(stage compactStage) error {
	if compactHook == nil {
		return nil
	}
	return compactHook(s, stage)
}

// compaction is a background compaction under way.
type compaction struct {
	recs    []*record
	mark    int64 // the log's size when recs were taken
	seq     uint64
	stopped atomic.Bool // set by Close: give up
	// held is how long writers waited for it: the snapshot and the switch
	// (logged, and read by the compaction benchmark).
	held time.Duration
	// frozen is the index as of the snapshot, for building the new one.
	frozen *index
	// delta are the writes committed since the snapshot, in order; appended
	// by commitGroup under writeMu.
	delta []*pendingWrite
}

// frozen returns a copy of x that later writes do not change, holding what
// rebuilt reads: writers replace document entries (never change them), append
// to terms and vectors (never change what is there), but tombstone chunk
// entries in place, so those are copied. Called with writeMu held.
func (x *index) frozen() *index {
	y := *x
	y.docs = maps.Clone(x.docs)
	y.chunks = slices.Clone(x.chunks)
	return &y
}

// startCompaction takes the snapshot and starts the goroutine that writes it.
// Called with writeMu held.
func (s *Store) startCompaction() {
	start := time.Now()
	c := &compaction{mark: s.log.size, seq: s.idx.seq, frozen: s.idx.frozen()}
	c.held = time.Since(start)
	s.compacting = c
	s.compactWG.Add(1)
	go func() {
		defer s.compactWG.Done()
		err := s.runCompaction(c)
		s.writeMu.Lock()
		s.compacting = nil
		s.writeMu.Unlock()
		if err != nil && !c.stopped.Load() {
			// The old log is intact (or, after the rename, the new one is in
			// use): the store keeps working, and tries again at a later write.
			s.logger.Warn("rag store: compacting the log failed; it stays as it is", "dir", s.dir, "error", err)
		}
	}()
}

// runCompaction writes c's snapshot to the temporary file, then switches.
func (s *Store) runCompaction(c *compaction) error {
	tmp := logPath(s.dir) + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	renamed := false
	defer func() {
		if !renamed {
			f.Close()
			os.Remove(tmp)
		}
	}()
	// The snapshot's records come from the frozen index: no lock needed.
	c.recs = c.frozen.docRecords()
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(logMagic)
	sizes := make(map[string]int64, len(c.recs))
	size := logHeaderSize
	var buf []byte
	for _, r := range c.recs {
		if c.stopped.Load() {
			return errClosed
		}
		buf = encodeFrame(buf[:0], r)
		if _, err := w.Write(buf); err != nil {
			return err
		}
		sizes[r.docID] = int64(len(buf))
		size += int64(len(buf))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	// The new log's index: the snapshot's documents, in its order, with their
	// new record sizes; the delta is applied at the switch.
	recSizes := make([]int64, len(c.recs))
	for i, r := range c.recs {
		recSizes[i] = sizes[r.docID]
	}
	fresh := c.frozen.rebuilt(c.recs, recSizes)
	c.recs, c.frozen = nil, nil // the snapshot can go before the switch
	if err := s.hook(stageSnapshotWritten); err != nil {
		return err
	}

	// Catch up without a lock: copy the records appended since the mark and
	// apply the writes committed since the snapshot, a few rounds, so that
	// the switch has little left to do, and fsync the bulk of the new log.
	copied, end := c.mark, size
	for range maxCatchUpRounds {
		s.writeMu.Lock()
		if s.log == nil || c.stopped.Load() {
			s.writeMu.Unlock()
			return errClosed
		}
		lf, logEnd, delta := s.log, s.log.size, c.delta
		c.delta = nil
		s.writeMu.Unlock()
		n, err := copyRange(f, end, lf.f, copied, logEnd)
		if err != nil {
			return err
		}
		copied, end = logEnd, end+n
		applyDelta(fresh, delta)
		if n < catchUpBytes && len(delta) < catchUpWrites {
			break
		}
	}
	if err := syncFile(f); err != nil {
		return err
	}

	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	switchStart := time.Now()
	if s.log == nil || c.stopped.Load() {
		return errClosed
	}
	// The rest of the records written since the mark, as they are: they are
	// valid (each was appended whole, or cut back when its write failed).
	n, err := copyRange(f, end, s.log.f, copied, s.log.size)
	if err != nil {
		return err
	}
	end += n
	if err := s.hook(stageTailCopied); err != nil {
		return err
	}
	// The rename must not become visible before the data it names.
	if err := syncFile(f); err != nil {
		return err
	}
	before := s.log.size
	if err := os.Rename(tmp, s.log.path); err != nil {
		return err
	}
	renamed = true
	s.log.f.Close()
	s.log = &logFile{f: f, path: s.log.path, size: end, validEnd: end}
	applyDelta(fresh, c.delta)
	c.delta = nil
	s.mu.Lock()
	s.idx = fresh
	s.mu.Unlock()
	c.held += time.Since(switchStart)
	s.lastCompaction = c
	s.logger.Info("rag store: compacted the log", "dir", s.dir, "bytes_before", before, "bytes_after", s.log.size,
		"writers_held", c.held.Round(time.Microsecond))
	if err := s.hook(stageRenamed); err != nil {
		return err
	}
	if !s.noSync {
		if err := syncDir(s.dir); err != nil {
			// The rename happened, so the new log is the one to append to; only
			// the rename's durability is in doubt.
			return fmt.Errorf("sync directory %s after replacing the log: %w", s.dir, err)
		}
	}
	return nil
}

// Catch-up rounds before the switch: at most maxCatchUpRounds, ending early
// once a round had less than catchUpBytes and catchUpWrites to do.
const (
	maxCatchUpRounds = 4
	catchUpBytes     = 1 << 20
	catchUpWrites    = 256
)

// copyRange copies src's bytes [from, to) to dst at off, returning how many.
func copyRange(dst *os.File, off int64, src *os.File, from, to int64) (int64, error) {
	if to <= from {
		return 0, nil
	}
	if _, err := dst.Seek(off, io.SeekStart); err != nil {
		return 0, err
	}
	n, err := io.Copy(dst, io.NewSectionReader(src, from, to-from))
	if err == nil && n != to-from {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return n, fmt.Errorf("copy the %d bytes written during the compaction: %w", to-from, err)
	}
	return n, nil
}

// applyDelta applies committed writes to an index that no reader sees yet.
func applyDelta(x *index, delta []*pendingWrite) {
	for _, w := range delta {
		switch w.r.kind {
		case recPut:
			x.put(w.r, int64(len(w.frame)), w.analyzed)
		case recDelete:
			x.remove(w.r.docID)
		}
	}
}
