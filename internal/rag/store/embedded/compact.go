package embedded

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"sync/atomic"
	"time"
)

// Background compaction. When the log holds more replaced or deleted bytes than
// live ones, a writer (holding writeMu, so the index and the log agree) takes a
// snapshot: where each live document's latest record is, and the log's size
// at that moment, the mark. A goroutine then copies those records, as they are,
// to chunks.log.tmp without any lock, while writers append to the log and readers query, and catches up: it
// copies the records appended since the mark, as they are, and fsyncs the
// bulk of the new log, still without a lock. The switch takes writeMu again:
// it copies the last records appended, fsyncs, renames the file over the log
// and rebuilds the index for the new log (Store.reindex).
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

// liveRecord is where a live document's latest record is in the log.
type liveRecord struct {
	id        string
	off, size int64
	seq       uint64
}

// compaction is a background compaction under way.
type compaction struct {
	live    []liveRecord // the snapshot, in the order of the documents' puts
	src     *os.File     // the log they are in
	mark    int64        // the log's size when live was taken
	seq     uint64
	stopped atomic.Bool // set by Close: give up
	// held is how long writers waited for it: the snapshot and the switch
	// (logged, and read by the compaction benchmark).
	held time.Duration
}

// startCompaction takes the snapshot and starts the goroutine that writes it.
// Called with writeMu held.
func (s *Store) startCompaction() {
	start := time.Now()
	live := make([]liveRecord, 0, len(s.idx.docs))
	for _, d := range s.idx.docs {
		live = append(live, liveRecord{id: d.id, off: d.off, size: d.recBytes, seq: d.seq})
	}
	slices.SortFunc(live, func(a, b liveRecord) int { return cmp.Compare(a.seq, b.seq) })
	c := &compaction{live: live, src: s.log.f, mark: s.log.size, seq: s.idx.seq}
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
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(logMagic)
	sizes := make(map[string]int64, len(c.live))
	offs := make(map[string]int64, len(c.live))
	size := logHeaderSize
	// The live records are copied as they are (frame and checksums): the
	// log's bytes before the mark never change, so no lock is needed, and
	// nothing is decoded or encoded again.
	for _, r := range c.live {
		if c.stopped.Load() {
			return errClosed
		}
		if n, err := io.Copy(w, io.NewSectionReader(c.src, r.off, r.size)); err != nil || n != r.size {
			return fmt.Errorf("copy the record of %q at offset %d: %d of %d bytes: %v", r.id, r.off, n, r.size, err)
		}
		sizes[r.id] = r.size
		offs[r.id] = size
		size += r.size
	}
	if err := w.Flush(); err != nil {
		return err
	}
	c.live = nil
	if err := s.hook(stageSnapshotWritten); err != nil {
		return err
	}

	// Catch up without a lock: copy the records appended since the mark, a
	// few rounds, so that the switch has little left to do, and fsync the
	// bulk of the new log.
	copied, end := c.mark, size
	for range maxCatchUpRounds {
		s.writeMu.Lock()
		if s.log == nil || c.stopped.Load() {
			s.writeMu.Unlock()
			return errClosed
		}
		lf, logEnd := s.log, s.log.size
		s.writeMu.Unlock()
		n, err := copyRange(f, end, lf.f, copied, logEnd)
		if err != nil {
			return err
		}
		copied, end = logEnd, end+n
		if n < catchUpBytes {
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
	s.reindexAfterCompaction(c, offs, sizes, size)
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
// once a round copied less than catchUpBytes.
const (
	maxCatchUpRounds = 4
	catchUpBytes     = 1 << 20
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

// reindexAfterCompaction rebuilds the index for the new log: documents put
// before the snapshot (seq ≤ c.seq) are at their snapshot record (offs, sizes),
// the others where their records were copied as they were, after the
// snapshot's end. Called with writeMu held.
func (s *Store) reindexAfterCompaction(c *compaction, offs, sizes map[string]int64, snapEnd int64) {
	idx := s.idx
	docs := make([]*docEntry, 0, len(idx.docs))
	for _, d := range idx.docs {
		docs = append(docs, d)
	}
	slices.SortFunc(docs, func(a, b *docEntry) int { return cmp.Compare(a.seq, b.seq) })
	ids := make([]string, len(docs))
	newOffs := make([]int64, len(docs))
	recSizes := make([]int64, len(docs))
	for i, d := range docs {
		ids[i], newOffs[i], recSizes[i] = d.id, snapEnd+(d.off-c.mark), d.recBytes
		if n, ok := sizes[d.id]; ok && d.seq <= c.seq {
			newOffs[i], recSizes[i] = offs[d.id], n
		}
	}
	s.reindex(ids, newOffs, recSizes)
}
