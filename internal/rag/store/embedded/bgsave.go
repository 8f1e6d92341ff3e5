package embedded

import (
	"maps"
	"os"
	"slices"
)

// Saving the index in the background. Close saves the index (segment.go), but
// a store that is killed never closes: its next open would replay its whole
// log. So a writer that finds the log grown by Options.IndexSaveBytes since
// the last save (and by a quarter of what that save covered, so that a large
// store is not rewritten at every few writes), or that switched a compaction's
// new log in, starts a save: under writeMu it takes a frozen view of the index
// (index.frozen: copies of what writers change in place, the rest shared), and
// a goroutine writes that view to keyword.idx.tmp and fsyncs it with no lock
// held, while writers append and readers query. It then takes writeMu to
// rename the file over keyword.idx, unless a compaction replaced the log
// meanwhile (the view is of the old log: the file is dropped). A crash at any
// point leaves the old saved index or the new one; the next open replays only
// the log after the one it finds.

// DefaultIndexSaveBytes is the log growth after which the index is saved in
// the background.
const DefaultIndexSaveBytes = 64 << 20

// saveStage names the points of a save at which tests look at the directory
// (saveHook).
type saveStage string

const (
	saveWritten saveStage = "temporary file written" // not synced
	saveSynced  saveStage = "temporary file synced"  // not renamed
	saveRenamed saveStage = "renamed"                // the directory not synced
)

// saveHook, when set (by tests), runs at each stage of a background save.
var saveHook func(s *Store, stage saveStage)

func (s *Store) saveHook(stage saveStage) {
	if s != nil && saveHook != nil {
		saveHook(s, stage)
	}
}

// maybeSaveIndex starts a background save when the log has grown enough since
// the last one and none is under way. Called with writeMu held.
func (s *Store) maybeSaveIndex() {
	l := s.log
	if l == nil || l.legacy || s.saving || s.saveStopped || s.saveBytes < 0 {
		return
	}
	covered := max(s.segCovered, logHeaderSize)
	if grown := l.validEnd - covered; grown <= 0 || grown < s.saveBytes || grown < (covered-logHeaderSize)/4 {
		return
	}
	s.startSave()
}

// startSave freezes the index and starts the goroutine that saves it. Called
// with writeMu held.
func (s *Store) startSave() {
	l := s.log
	// The log is read (for its checksum) through a descriptor of the save's
	// own: a compaction may close the log's meanwhile.
	src, err := os.Open(l.path)
	if err != nil {
		s.logger.Warn("rag store: saving the index failed; the next open replays the log", "dir", s.dir, "error", err)
		return
	}
	x := s.idx
	view := x.frozen()
	covered := l.validEnd
	damage := damageBefore(l, covered)
	prev := checksummed{}
	if s.segCovered > 0 {
		prev = checksummed{n: s.segCovered, sum: s.segSum}
	}
	s.saving = true
	s.saveWG.Add(1)
	go func() {
		defer s.saveWG.Done()
		sum, err := writeSegmentTemp(s, s.dir, view, covered, damage, src, prev)
		src.Close()
		s.writeMu.Lock()
		s.saving = false
		switch {
		case err != nil:
			s.writeMu.Unlock()
			s.logger.Warn("rag store: saving the index failed; the next open replays the log", "dir", s.dir, "error", err)
			return
		case s.idx != x || s.log == nil || s.segCovered >= covered:
			// A compaction replaced the log (the view is of the old one: the
			// new index is saved instead), or the store is closing.
			os.Remove(segmentPath(s.dir) + ".tmp")
			if s.idx != x && s.log != nil && !s.saveStopped {
				s.startSave()
			}
			s.writeMu.Unlock()
			return
		}
		if err := os.Rename(segmentPath(s.dir)+".tmp", segmentPath(s.dir)); err != nil {
			os.Remove(segmentPath(s.dir) + ".tmp")
			s.writeMu.Unlock()
			s.logger.Warn("rag store: saving the index failed; the next open replays the log", "dir", s.dir, "error", err)
			return
		}
		s.segCovered, s.segSum = covered, sum
		s.writeMu.Unlock()
		s.saveHook(saveRenamed)
		if err := syncDir(s.dir); err != nil {
			s.logger.Warn("rag store: the saved index may not survive a machine crash", "dir", s.dir, "error", err)
		}
	}()
}

// damageBefore returns l's damaged stretches before end.
func damageBefore(l *logFile, end int64) []Damage {
	var out []Damage
	for _, d := range l.damage {
		if d.Offset < end {
			out = append(out, d)
		}
	}
	return out
}

// frozen returns a view of x that writers do not change, for saving without a
// lock: what they change in place (the chunks' entries, the document
// frequencies, the documents' map) is copied; what they only append to (the
// posting lists, the terms, the vectors) is shared up to its present length, and the documents' entries, which never
// change once made, are shared. Called with writeMu held.
func (x *index) frozen() *index {
	y := &index{
		dim: x.dim, liveChunks: x.liveChunks, liveLength: x.liveLength,
		liveTitled: x.liveTitled, liveTitleLength: x.liveTitleLength,
		liveBytes: x.liveBytes, seq: x.seq, framed: x.framed,
		chunks: slices.Clone(x.chunks),
		vecs:   x.vecs.frozen(),
		terms:  x.terms[:len(x.terms):len(x.terms)],
		df:     slices.Clone(x.df),
		tdf:    slices.Clone(x.tdf),
		docs:   maps.Clone(x.docs),
	}
	y.postings = frozenPostings(x.postings)
	y.tpostings = frozenPostings(x.tpostings)
	return y
}

// frozenPostings copies the lists' headers. Their contents are shared: a
// list's sealed blocks and its tail's postings never change once written (a
// posting is appended past them, and sealing starts a new tail).
func frozenPostings(ps []postingList) []postingList {
	out := make([]postingList, len(ps))
	for i := range ps {
		p := &ps[i]
		out[i] = postingList{blocks: p.blocks[:len(p.blocks):len(p.blocks)], data: p.data[:len(p.data):len(p.data)], tail: p.tail[:len(p.tail):len(p.tail)]}
	}
	return out
}
