package embedded

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/arvenza/helix/internal/rag"
)

// hookSync replaces the log's fsync for one test.
func hookSync(t *testing.T, f func(*os.File) error) {
	t.Helper()
	prev := syncFile
	syncFile = f
	t.Cleanup(func() { syncFile = prev })
}

// queued returns how many writes wait for a group commit.
func (s *Store) queued() int {
	s.queueMu.Lock()
	defer s.queueMu.Unlock()
	return len(s.queue)
}

// blockFirstSync makes the next fsync wait until release is closed, and
// counts fsyncs. entered is closed once the first fsync began.
func blockFirstSync(t *testing.T) (syncs *atomic.Int32, entered, release chan struct{}) {
	syncs = &atomic.Int32{}
	entered, release = make(chan struct{}), make(chan struct{})
	hookSync(t, func(f *os.File) error {
		if syncs.Add(1) == 1 {
			close(entered)
			<-release
		}
		return f.Sync()
	})
	return syncs, entered, release
}

// putWhileBlocked starts one Put that blocks in its fsync, then n more that
// queue behind it, and waits until all n are queued.
func putWhileBlocked(t *testing.T, s *Store, entered chan struct{}, n int) (errs []error, wait func()) {
	t.Helper()
	var wg sync.WaitGroup
	errs = make([]error, n+1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs[0] = s.Put(ctx, "first", "h", chunks("first", nil, "first words"), nil)
	}()
	<-entered
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("d%d", i)
			errs[i+1] = s.Put(ctx, id, "h", chunks(id, nil, "shared words "+id), nil)
		}()
	}
	for s.queued() < n {
		// Each Put queues before it waits for writeMu; the wait is short.
		runtime.Gosched()
	}
	return errs, wg.Wait
}

// TestGroupCommitSharesFsyncs: Puts that arrive while an fsync is under way
// are committed together by one write and one fsync, and each is acknowledged
// only after it.
func TestGroupCommitSharesFsyncs(t *testing.T) {
	syncs, entered, release := blockFirstSync(t)
	s, _ := open(t, t.TempDir(), Options{})
	errs, wait := putWhileBlocked(t, s, entered, 10)
	close(release)
	wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	if n := syncs.Load(); n != 2 {
		t.Fatalf("%d fsyncs for 11 puts, want 2 (one for the first, one for the 10 that queued behind it)", n)
	}
	if st, _ := s.Stats(ctx); st.Documents != 11 {
		t.Fatalf("%d documents, want 11", st.Documents)
	}
	dir := s.Dir()
	s.Close()
	s2, _ := open(t, dir, Options{})
	if st, _ := s2.Stats(ctx); st.Documents != 11 {
		t.Fatalf("after reopening: %d documents, want 11", st.Documents)
	}
}

// TestFailedFsyncFailsTheWholeGroup: when a group's fsync fails, every Put of
// the group gets the error, none of them is in the store (now or after a
// restart), the log holds no partial record, and the next writes succeed.
func TestFailedFsyncFailsTheWholeGroup(t *testing.T) {
	var calls atomic.Int32
	entered, release := make(chan struct{}), make(chan struct{})
	hookSync(t, func(f *os.File) error {
		switch calls.Add(1) {
		case 1:
			close(entered)
			<-release
		case 2:
			return errors.New("injected fsync failure")
		}
		return f.Sync()
	})
	dir := t.TempDir()
	s, _ := open(t, dir, Options{})
	errs, wait := putWhileBlocked(t, s, entered, 6)
	close(release)
	wait()
	if errs[0] != nil {
		t.Fatalf("the first put (its own group) failed: %v", errs[0])
	}
	for i, err := range errs[1:] {
		if err == nil || !strings.Contains(err.Error(), "injected fsync failure") {
			t.Fatalf("put %d of the failed group: %v, want the fsync's error", i+1, err)
		}
	}
	check := func(s *Store, when string) {
		t.Helper()
		docs, _ := s.Documents(ctx)
		if len(docs) != 2 || docs["first"] == "" || docs["after"] == "" {
			t.Fatalf("%s: documents %v, want first and after only", when, docs)
		}
		hits, _ := s.SearchKeyword(ctx, "shared", 100, nil)
		if len(hits) != 0 {
			t.Fatalf("%s: a failed put is searchable: %v", when, ids(hits))
		}
	}
	mustPut(t, s, "after", "h", chunks("after", nil, "after words"), nil)
	check(s, "before a restart")
	s.Close()
	rep, err := Verify(dir)
	if err != nil || len(rep.Damage) != 0 || rep.Records != 2 {
		t.Fatalf("verify: %+v, %v; want 2 records and no damage", rep, err)
	}
	s2, _ := open(t, dir, Options{})
	check(s2, "after a restart")
}

// TestFailedWriteFailsTheGroupAndCutsIt: a write that fails after writing part
// of a group leaves no partial record behind.
func TestFailedWriteFailsTheGroupAndCutsIt(t *testing.T) {
	prev := writeAt
	var fail atomic.Bool
	writeAt = func(f *os.File, b []byte, off int64) error {
		if fail.Load() {
			f.WriteAt(b[:len(b)/2], off) // torn: half of it reaches the file
			return errors.New("injected write failure")
		}
		return prev(f, b, off)
	}
	t.Cleanup(func() { writeAt = prev })
	dir := t.TempDir()
	s, _ := open(t, dir, Options{})
	mustPut(t, s, "a", "h", chunks("a", nil, "alpha"), nil)
	fail.Store(true)
	errs := s.PutBatch(ctx, []rag.PutDoc{
		{ID: "b", Hash: "h", Chunks: chunks("b", nil, "beta")},
		{ID: "c", Hash: "h", Chunks: chunks("c", nil, "gamma")},
	})
	for i, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "injected write failure") {
			t.Fatalf("doc %d: %v, want the write's error", i, err)
		}
	}
	fail.Store(false)
	mustPut(t, s, "d", "h", chunks("d", nil, "delta"), nil)
	s.Close()
	rep, err := Verify(dir)
	if err != nil || len(rep.Damage) != 0 || rep.Records != 2 {
		t.Fatalf("verify: %+v, %v; want 2 records (a, d) and no damage", rep, err)
	}
}

// TestPutBatch: each document of a batch succeeds or fails on its own merits,
// in order: a bad document fails alone, a put and a delete of the same
// document in one group keep their order, and a vector dimension set by an
// earlier document of the group is enforced on the later ones.
func TestPutBatch(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, Options{})
	var _ rag.BatchStore = s
	mustPut(t, s, "old", "h", chunks("old", nil, "old text"), nil)
	errs := s.PutBatch(ctx, []rag.PutDoc{
		{ID: "a", Hash: "ha", Chunks: chunks("a", nil, "alpha one", "alpha two"), Vectors: [][]float32{{1, 0, 0}, {0, 1, 0}}},
		{ID: "", Hash: "h", Chunks: chunks("", nil, "no id")},
		{ID: "b", Hash: "hb", Chunks: chunks("b", nil, "beta"), Vectors: [][]float32{{1, 0}}},
		{ID: "c", Hash: "hc", Chunks: chunks("c", nil, "gamma")},
		{ID: "old", Hash: "h2", Chunks: chunks("old", nil, "new text")},
	})
	if errs[0] != nil || errs[3] != nil || errs[4] != nil {
		t.Fatalf("valid documents failed: %v", errs)
	}
	if errs[1] == nil || !strings.Contains(errs[1].Error(), "document id is empty") {
		t.Fatalf("empty id: %v", errs[1])
	}
	if errs[2] == nil || !strings.Contains(errs[2].Error(), "2 dimensions") {
		t.Fatalf("wrong dimension in the same batch: %v", errs[2])
	}
	check := func(s *Store) {
		t.Helper()
		docs, _ := s.Documents(ctx)
		want := map[string]string{"a": "ha", "c": "hc", "old": "h2"}
		if fmt.Sprint(docs) != fmt.Sprint(want) {
			t.Fatalf("documents %v, want %v", docs, want)
		}
		if hits, _ := s.SearchKeyword(ctx, "old text", 10, nil); len(hits) != 1 || hits[0].Chunk.Text != "new text" {
			t.Fatalf("replaced document: %v", hits)
		}
	}
	check(s)
	s.Close()
	s2, _ := open(t, dir, Options{})
	check(s2)

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	for _, err := range s2.PutBatch(canceled, []rag.PutDoc{{ID: "x", Chunks: chunks("x", nil, "x")}}) {
		if !errors.Is(err, canceled.Err()) {
			t.Fatalf("canceled batch: %v", err)
		}
	}
}

// TestConcurrentPutsAndDeletesOfOneDocument: puts and deletes of the same
// documents from many goroutines, grouped in any way, leave the store exactly
// as the log replays it.
func TestConcurrentPutsAndDeletesOfOneDocument(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, Options{CompactMinGarbage: 4 << 10})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 60 {
				id := fmt.Sprintf("doc%d", i%5)
				var err error
				if (i+g)%4 == 0 {
					err = s.Delete(ctx, id)
				} else {
					err = s.Put(ctx, id, fmt.Sprintf("g%d-%d", g, i), chunks(id, nil, "some words", "more words"), nil)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	before, _ := s.Documents(ctx)
	stats, _ := s.Stats(ctx)
	s.Close()
	s2, _ := open(t, dir, Options{})
	after, _ := s2.Documents(ctx)
	stats2, _ := s2.Stats(ctx)
	if fmt.Sprint(before) != fmt.Sprint(after) || stats != stats2 {
		t.Fatalf("in memory %v %+v, replayed %v %+v", before, stats, after, stats2)
	}
	if stats.Chunks != 2*stats.Documents {
		t.Fatalf("stats %+v: a document lost or gained chunks", stats)
	}
}
