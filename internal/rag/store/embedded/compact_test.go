package embedded

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/rag"
)

// settle waits for background compactions until the log needs none: what a
// test that checks a compaction's outcome waits for.
func (s *Store) settle() {
	for {
		s.writeMu.Lock()
		if s.compacting == nil && s.log != nil {
			s.maybeCompact()
		}
		c := s.compacting
		s.writeMu.Unlock()
		if c == nil {
			return
		}
		s.compactWG.Wait()
	}
}

// compactionFixture fills a store whose log is mostly garbage (each of 20
// documents replaced 10 times), so that the next write starts a background
// compaction, and returns the documents' hashes.
func compactionFixture(t *testing.T, dir string) (*Store, *syncBuffer, map[string]string) {
	t.Helper()
	s, logs := open(t, dir, Options{CompactMinGarbage: 1 << 40})
	c := newCorpus(9, 4)
	want := map[string]string{}
	for v := range 10 {
		batch := make([]rag.PutDoc, 20)
		for i := range batch {
			id := fmt.Sprintf("doc%d", i)
			hash, cs, vecs := c.doc(id, 1+i%3)
			hash += fmt.Sprintf("/v%d", v)
			batch[i] = rag.PutDoc{ID: id, Hash: hash, Chunks: cs, Vectors: vecs}
			want[id] = hash
		}
		for _, err := range s.PutBatch(ctx, batch) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	s.minGarb = 1 // the next write compacts
	return s, logs, want
}

// checkDocs checks that s holds exactly want, each document whole.
func checkDocs(t *testing.T, s *Store, want map[string]string, when string) {
	t.Helper()
	docs, err := s.Documents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(docs, want) {
		t.Fatalf("%s: documents %v, want %v", when, docs, want)
	}
	hits, err := s.SearchKeyword(ctx, "common", 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	perDoc := map[string]int{}
	for _, h := range hits {
		perDoc[h.Chunk.DocID]++
	}
	for id, hash := range want {
		n, _ := strconv.Atoi(strings.TrimPrefix(strings.Split(hash, "/")[0], "chunks="))
		if perDoc[id] != n {
			t.Fatalf("%s: %s has %d chunks, want %d", when, id, perDoc[id], n)
		}
	}
}

// writeDuringCompaction is what the tests write while a compaction is paused
// after writing its snapshot: a new document, a replacement and a delete.
func writeDuringCompaction(s *Store, want map[string]string) error {
	c := newCorpus(10, 4)
	hash, cs, vecs := c.doc("new", 2)
	if err := s.Put(ctx, "new", hash, cs, vecs); err != nil {
		return err
	}
	want["new"] = hash
	hash, cs, vecs = c.doc("doc3", 3)
	if err := s.Put(ctx, "doc3", hash+"/during", cs, vecs); err != nil {
		return err
	}
	want["doc3"] = hash + "/during"
	if err := s.Delete(ctx, "doc4"); err != nil {
		return err
	}
	delete(want, "doc4")
	return nil
}

func setCompactHook(t *testing.T, f func(s *Store, stage compactStage) error) {
	t.Helper()
	compactHook = f
	t.Cleanup(func() { compactHook = nil })
}

// TestBackgroundCompactionLetsWritesContinue: while a compaction writes its
// snapshot, Puts, Deletes and queries go on; the switch keeps what they wrote,
// and the log shrinks.
func TestBackgroundCompactionLetsWritesContinue(t *testing.T) {
	dir := t.TempDir()
	s, logs, want := compactionFixture(t, dir)
	paused, resume := make(chan struct{}), make(chan struct{})
	setCompactHook(t, func(_ *Store, stage compactStage) error {
		if stage == stageSnapshotWritten {
			close(paused)
			<-resume
		}
		return nil
	})
	before, _ := os.Stat(logPath(dir))
	want["doc0"] = "chunks=1/trigger"
	mustPut(t, s, "doc0", want["doc0"], chunks("doc0", nil, "common start"), nil)
	<-paused
	// The compaction holds no lock now: these must not wait for it.
	wrote := make(chan error, 1)
	go func() { wrote <- writeDuringCompaction(s, want) }()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("writes waited for the compaction")
	}
	checkDocs(t, s, want, "during the compaction")
	close(resume)
	s.settle()
	if !strings.Contains(logs.String(), "compacted the log") {
		t.Fatalf("no compaction; logs:\n%s", logs)
	}
	after, _ := os.Stat(logPath(dir))
	if after.Size() >= before.Size()/3 {
		t.Fatalf("the log went from %d to %d bytes", before.Size(), after.Size())
	}
	checkDocs(t, s, want, "after the compaction")
	// The index's log accounting follows the new log: garbage is what was
	// replaced or deleted during the compaction only.
	s.writeMu.Lock()
	garbage := s.log.size - logHeaderSize - s.idx.liveBytes
	s.writeMu.Unlock()
	if garbage < 0 || garbage > 4<<10 {
		t.Fatalf("%d bytes counted as garbage after the compaction", garbage)
	}
	s.Close()
	if _, err := os.Stat(logPath(dir) + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temporary file left: %v", err)
	}
	s2, logs2 := open(t, dir, Options{})
	checkDocs(t, s2, want, "reopened")
	if logs2.String() != "" {
		t.Fatalf("a clean reopen logged: %s", logs2)
	}
}

// copyDir copies the files of dir (a crash's image of it: what a process
// killed at this moment leaves) into a new directory.
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestCrashOrFailureDuringCompaction: at each stage of a background
// compaction, (1) a crash (the directory's files as they are then) leaves a
// store that opens with every acknowledged document whole, and (2) a failure
// there leaves the store working, with the same documents, now and after a
// restart, and no temporary file once it is closed.
func TestCrashOrFailureDuringCompaction(t *testing.T) {
	for _, stage := range []compactStage{stageSnapshotWritten, stageTailCopied, stageRenamed} {
		t.Run(string(stage), func(t *testing.T) {
			dir := t.TempDir()
			s, logs, want := compactionFixture(t, dir)
			var image string
			var imageWant map[string]string
			hookErr := make(chan error, 1)
			setCompactHook(t, func(s *Store, at compactStage) error {
				if at == stageSnapshotWritten {
					// Writes land between the snapshot and the switch.
					if err := writeDuringCompaction(s, want); err != nil {
						hookErr <- err
					}
				}
				if at != stage {
					return nil
				}
				image, imageWant = copyDir(t, dir), maps.Clone(want)
				return errors.New("injected compaction failure")
			})
			hash, cs, vecs := newCorpus(11, 4).doc("trigger", 1)
			want["trigger"] = hash // before the compaction's goroutine reads want
			mustPut(t, s, "trigger", hash, cs, vecs)
			s.compactWG.Wait()
			select {
			case err := <-hookErr:
				t.Fatal(err)
			default:
			}
			if image == "" {
				t.Fatalf("the compaction did not reach %q; logs:\n%s", stage, logs)
			}
			if !strings.Contains(logs.String(), "injected compaction failure") {
				t.Fatalf("the failure was not logged:\n%s", logs)
			}

			crashed, _ := open(t, image, Options{})
			checkDocs(t, crashed, imageWant, "the crash image")
			crashed.Close()

			checkDocs(t, s, want, "after the failure")
			compactHook = nil
			hash, cs, vecs = newCorpus(12, 4).doc("later", 2)
			mustPut(t, s, "later", hash, cs, vecs)
			want["later"] = hash
			s.settle()
			checkDocs(t, s, want, "after a later compaction")
			s.Close()
			if _, err := os.Stat(logPath(dir) + ".tmp"); !os.IsNotExist(err) {
				t.Fatalf("temporary file left: %v", err)
			}
			s2, _ := open(t, dir, Options{})
			checkDocs(t, s2, want, "reopened")
		})
	}
}

// TestCloseStopsACompaction: closing a store while a compaction writes its
// snapshot stops it, removes its temporary file and keeps the log.
func TestCloseStopsACompaction(t *testing.T) {
	dir := t.TempDir()
	s, _, want := compactionFixture(t, dir)
	paused, resume := make(chan struct{}), make(chan struct{})
	setCompactHook(t, func(_ *Store, stage compactStage) error {
		if stage == stageSnapshotWritten {
			close(paused)
			<-resume
		}
		return nil
	})
	hash, cs, vecs := newCorpus(11, 4).doc("trigger", 1)
	mustPut(t, s, "trigger", hash, cs, vecs)
	want["trigger"] = hash
	<-paused
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	// Close waits for the compaction, which waits for resume.
	for {
		s.mu.RLock()
		done := s.closed
		s.mu.RUnlock()
		if done {
			break
		}
		runtime.Gosched()
	}
	close(resume)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(logPath(dir) + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temporary file left: %v", err)
	}
	s2, _ := open(t, dir, Options{})
	checkDocs(t, s2, want, "reopened")
}
