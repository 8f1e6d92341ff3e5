package embedded

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// waitSaved waits for the background save under way, if any, and returns the
// log offset the saved index covers.
func waitSaved(s *Store) int64 {
	s.saveWG.Wait()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return s.segCovered
}

// TestBackgroundSaveSparesTheReplayAfterACrash: once the log has grown by
// Options.IndexSaveBytes the index is saved in the background, so a store
// killed afterwards (its directory copied while open, as after kill -9)
// replays only the log after that save, and answers exactly like a store
// that replayed its whole log.
func TestBackgroundSaveSparesTheReplayAfterACrash(t *testing.T) {
	dir := t.TempDir()
	s, logs := open(t, dir, Options{NoSync: true, IndexSaveBytes: 1})
	c := newCorpus(9, 8)
	fillSegmentStore(t, s, c, 0, 80)
	covered := waitSaved(s)
	if covered <= logHeaderSize {
		t.Fatalf("no index saved in the background after 80 documents (logs %s)", logs.String())
	}
	// One more background save, of the whole log (the last one may have
	// started before the last writes), then no more: the tail after it is what
	// a crash costs.
	s.writeMu.Lock()
	s.startSave()
	s.writeMu.Unlock()
	covered = waitSaved(s)
	s.writeMu.Lock()
	if covered != s.log.validEnd {
		t.Errorf("the last background save covers %d of %d bytes", covered, s.log.validEnd)
	}
	s.saveBytes = 1 << 40
	s.writeMu.Unlock()
	for i := 80; i < 100; i++ {
		id := fmt.Sprint("doc", i)
		hash, cs, vecs := c.doc(id, 2)
		mustPut(t, s, id, hash, cs, vecs)
	}
	crashed := t.TempDir()
	copyStore(t, dir, crashed)
	want := results(t, s)

	var analysed atomic.Int64
	s2, logs2 := open(t, crashed, Options{NoSync: true, Analyzer: countingAnalyzer(&analysed)})
	if n := analysed.Load(); n == 0 || n > 20*2*2 {
		t.Fatalf("reopening after a crash analysed %d texts, want only the 20 documents after the save", n)
	}
	if got := results(t, s2); got != want {
		t.Fatalf("from the background save and the tail:\n%s\nwant\n%s", got, want)
	}
	s2.Close()
	os.Remove(segmentPath(crashed))
	analysed.Store(0)
	s3, _ := open(t, crashed, Options{NoSync: true, Analyzer: countingAnalyzer(&analysed)})
	if n := analysed.Load(); n <= 20*2*2 {
		t.Fatalf("a full replay analysed only %d texts", n)
	}
	if got := results(t, s3); got != want {
		t.Fatalf("replayed from the start:\n%s\nwant\n%s", got, want)
	}
	for _, l := range []string{logs.String(), logs2.String()} {
		if strings.Contains(l, "saved index") || strings.Contains(l, "saving the index failed") {
			t.Fatalf("unexpected log: %s", l)
		}
	}
}

// TestBackgroundSaveFollowsWritesAndCompactions: saves keep up with a store
// written to concurrently (deletes, replacements, compactions switching the
// log under a save), and whatever file is there when the store is copied is
// either refused as stale (a compaction replaced the log) or answers exactly
// like a full replay.
func TestBackgroundSaveFollowsWritesAndCompactions(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, Options{NoSync: true, IndexSaveBytes: 1, CompactMinGarbage: 1})
	c := newCorpus(10, 8)
	fillSegmentStore(t, s, c, 4000, 5)
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fillSegmentStore(t, s, newCorpus(uint64(20+w), 8), w*1000, 40)
		}()
	}
	for range 5 {
		results(t, s)
	}
	wg.Wait()
	// Most documents deleted: the log is mostly garbage, and compacted.
	for i := range 2000 {
		if err := s.Delete(ctx, fmt.Sprint("doc", i)); err != nil {
			t.Fatal(err)
		}
	}
	fillSegmentStore(t, s, c, 5000, 10)
	s.compactWG.Wait()
	s.writeMu.Lock()
	compacted := s.lastCompaction != nil
	s.writeMu.Unlock()
	if !compacted {
		t.Fatal("no compaction ran")
	}
	if waitSaved(s) <= logHeaderSize {
		t.Fatal("no index saved after the writes")
	}
	crashed := t.TempDir()
	copyStore(t, dir, crashed)
	want := results(t, s)
	s2, logs := open(t, crashed, Options{NoSync: true})
	if got := results(t, s2); got != want {
		t.Fatalf("after concurrent writes and compactions:\n%s\nwant\n%s", got, want)
	}
	if strings.Contains(logs.String(), "saved index cannot be used") {
		t.Fatalf("the last saved index does not apply: %s", logs.String())
	}
}

// TestInterruptedSaveLeavesOldOrNewIndex: a save killed at any of its stages
// (the temporary file partly written, written but not synced, synced but not
// renamed, renamed but the directory not synced) leaves the old saved index or
// the new one, and the store opened from what is left answers exactly like a
// full replay of its log.
func TestInterruptedSaveLeavesOldOrNewIndex(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, Options{NoSync: true, IndexSaveBytes: 1 << 40})
	c := newCorpus(11, 8)
	fillSegmentStore(t, s, c, 0, 40)
	s.writeMu.Lock()
	s.saveIndex()
	old := s.segCovered
	s.writeMu.Unlock()
	fillSegmentStore(t, s, c, 40, 30)

	type snap struct {
		stage saveStage
		dir   string
	}
	var snaps []snap
	saveHook = func(st *Store, stage saveStage) {
		if st != s {
			return
		}
		d := t.TempDir()
		copyStore(t, dir, d)
		if b, err := os.ReadFile(segmentPath(dir) + ".tmp"); err == nil {
			os.WriteFile(segmentPath(d)+".tmp", b, 0o644)
		}
		snaps = append(snaps, snap{stage, d})
	}
	t.Cleanup(func() { saveHook = nil })
	s.writeMu.Lock()
	s.startSave()
	s.writeMu.Unlock()
	newCovered := waitSaved(s)
	saveHook = nil
	if newCovered <= old {
		t.Fatalf("the background save covers %d, the old one %d", newCovered, old)
	}
	if len(snaps) != 3 {
		t.Fatalf("%d stages seen, want 3", len(snaps))
	}
	// And the temporary file cut anywhere, beside the old index.
	tmp, err := os.ReadFile(segmentPath(snaps[0].dir) + ".tmp")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, len(tmp) / 3, len(tmp) - 1} {
		d := t.TempDir()
		copyStore(t, snaps[0].dir, d)
		os.WriteFile(segmentPath(d)+".tmp", tmp[:n], 0o644)
		snaps = append(snaps, snap{saveStage(fmt.Sprintf("temporary file cut at %d", n)), d})
	}
	for _, sn := range snaps {
		ref := t.TempDir()
		copyStore(t, sn.dir, ref)
		os.Remove(segmentPath(ref))
		r, _ := open(t, ref, Options{NoSync: true})
		want := results(t, r)
		r.Close()
		s2, logs := open(t, sn.dir, Options{NoSync: true})
		s2.writeMu.Lock()
		got := s2.segCovered
		s2.writeMu.Unlock()
		if got != old && got != newCovered {
			t.Fatalf("%s: the saved index covers %d, want the old %d or the new %d (logs %s)", sn.stage, got, old, newCovered, logs.String())
		}
		if res := results(t, s2); res != want {
			t.Fatalf("%s:\n%s\nwant\n%s", sn.stage, res, want)
		}
		s2.Close()
		if _, err := os.Stat(filepath.Join(sn.dir, segmentName+".tmp")); err == nil {
			t.Fatalf("%s: the temporary file is left after an open", sn.stage)
		}
	}
}
