package embedded

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"sync/atomic"
)

// Background compaction. When the log holds more replaced or deleted bytes than
// live ones, a writer (holding writeMu, so the index and the log agree) takes a
// snapshot: a put record per live document and the log's size at that moment,
// the mark. A goroutine then writes the snapshot to chunks.log.tmp without any
// lock, while writers append to the log and readers query. The switch takes
// writeMu again, briefly: it copies the records appended after the mark, as
// they are, to the end of the temporary file, fsyncs it, renames it over the
// log and rebuilds the index's log accounting (and drops its tombstones).
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
}

// startCompaction takes the snapshot and starts the goroutine that writes it.
// Called with writeMu held.
func (s *Store) startCompaction() {
	recs, err := s.idx.docRecords()
	if err != nil {
		s.logger.Warn("rag store: compacting the log failed; it stays as it is", "dir", s.dir, "error", err)
		return
	}
	c := &compaction{recs: recs, mark: s.log.size, seq: s.idx.seq}
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
	sizes := make(map[string]int64, len(c.recs))
	offs := make(map[string]int64, len(c.recs))
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
		offs[r.docID] = size
		size += int64(len(buf))
	}
	c.recs = nil // the snapshot's chunks can go before the switch
	if err := w.Flush(); err != nil {
		return err
	}
	if err := s.hook(stageSnapshotWritten); err != nil {
		return err
	}

	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.log == nil || c.stopped.Load() {
		return errClosed
	}
	// The records written since the mark, as they are: they are valid (each
	// was appended whole, or cut back when its write failed).
	tail := s.log.size - c.mark
	if _, err := f.Seek(size, io.SeekStart); err != nil {
		return err
	}
	if n, err := io.Copy(f, io.NewSectionReader(s.log.f, c.mark, tail)); err != nil || n != tail {
		return fmt.Errorf("copy the %d bytes written during the compaction: %d copied: %v", tail, n, err)
	}
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
	s.log = &logFile{f: f, path: s.log.path, size: size + tail, validEnd: size + tail}
	s.reindexAfterCompaction(c, offs, sizes, size)
	s.logger.Info("rag store: compacted the log", "dir", s.dir, "bytes_before", before, "bytes_after", s.log.size)
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
