package embedded

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/rag"
)

// corpus makes synthetic documents from a fixed seed: Zipf-distributed words
// from a made-up vocabulary, like real text in the way BM25 cares about.
type corpus struct {
	rng   *rand.Rand
	zipf  *rand.Zipf
	vocab []string
	dim   int
}

func newCorpus(seed uint64, dim int) *corpus {
	rng := rand.New(rand.NewPCG(seed, seed))
	c := &corpus{rng: rng, dim: dim, zipf: rand.NewZipf(rng, 1.1, 2, 19_999)}
	const letters = "abcdefghijklmnoprstuvw"
	for range 20_000 {
		n := 3 + rng.IntN(7)
		b := make([]byte, n)
		for i := range b {
			b[i] = letters[rng.IntN(len(letters))]
		}
		c.vocab = append(c.vocab, string(b))
	}
	return c
}

func (c *corpus) text(words int) string {
	var b strings.Builder
	for i := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(c.vocab[c.zipf.Uint64()])
	}
	return b.String()
}

func (c *corpus) vector() []float32 {
	v := make([]float32, c.dim)
	for i := range v {
		v[i] = float32(c.rng.NormFloat64())
	}
	return v
}

// doc makes a document of n chunks (with vectors when the corpus has a
// dimension) whose hash records n, so a reader can check it is whole. Documents
// of an even number of chunks have a title, the others none.
func (c *corpus) doc(id string, n int) (string, []rag.Chunk, [][]float32) {
	var vecs [][]float32
	var title string
	if n%2 == 0 {
		title = c.text(1 + n)
	}
	cs := make([]rag.Chunk, n)
	for i := range cs {
		cs[i] = rag.Chunk{DocID: id, Index: i, Text: "common " + c.text(40), Title: title, Metadata: map[string]any{"chunks": n, "parity": i % 2}}
		if c.dim > 0 {
			vecs = append(vecs, c.vector())
		}
	}
	return "chunks=" + strconv.Itoa(n), cs, vecs
}

// snapshot runs a fixed set of queries, for comparing a store before and after
// a restart.
func snapshot(t *testing.T, s *Store, c *corpus) [][]rag.Hit {
	t.Helper()
	var out [][]rag.Hit
	for i := range 20 {
		hits, err := s.SearchKeyword(ctx, c.text(4), 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, hits)
		if i%2 == 0 {
			hits, err = s.SearchKeyword(ctx, c.text(3), 10, rag.Filter{"parity": 1})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, hits)
		}
		if c.dim > 0 {
			hits, err := s.SearchVector(ctx, c.vector(), 10, nil)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, hits)
		}
	}
	return out
}

func TestRestartGivesIdenticalResults(t *testing.T) {
	for _, compact := range []bool{false, true} {
		t.Run(fmt.Sprintf("compact=%v", compact), func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{NoSync: true}
			if compact {
				opts.CompactMinGarbage = 1
			}
			s, logs := open(t, dir, opts)
			c := newCorpus(1, 16)
			for i := range 200 {
				id := fmt.Sprintf("doc%d", i%120) // some are replaced
				hash, cs, vecs := c.doc(id, 1+i%4)
				mustPut(t, s, id, hash, cs, vecs)
				if i%17 == 0 {
					s.Delete(ctx, fmt.Sprintf("doc%d", i/3))
				}
			}
			s.settle()
			if compact && !strings.Contains(logs.String(), "compacted the log") {
				t.Fatalf("no compaction happened; logs:\n%s", logs)
			}
			before := snapshot(t, s, newCorpus(2, 16))
			docsBefore, _ := s.Documents(ctx)
			statsBefore, _ := s.Stats(ctx)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, logs = open(t, dir, opts)
			after := snapshot(t, s, newCorpus(2, 16))
			docsAfter, _ := s.Documents(ctx)
			statsAfter, _ := s.Stats(ctx)
			if !reflect.DeepEqual(docsBefore, docsAfter) || statsBefore != statsAfter {
				t.Fatalf("documents or stats changed: %v → %v", statsBefore, statsAfter)
			}
			if !reflect.DeepEqual(before, after) {
				t.Fatal("search results changed across the restart")
			}
			if logs.String() != "" {
				t.Fatalf("a clean reopen logged: %s", logs)
			}
		})
	}
}

func TestCompactionShrinksTheLog(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, Options{NoSync: true, CompactMinGarbage: 50 << 10})
	c := newCorpus(3, 8)
	for i := range 300 {
		hash, cs, vecs := c.doc("same", 3)
		mustPut(t, s, "same", hash+strconv.Itoa(i), cs, vecs)
	}
	s.settle()
	st, _ := os.Stat(logPath(dir))
	if st.Size() > 200<<10 {
		t.Fatalf("log is %d bytes for one live document", st.Size())
	}
	if stats, _ := s.Stats(ctx); stats != (rag.Stats{Documents: 1, Chunks: 3}) {
		t.Fatalf("stats %+v", stats)
	}
	if _, err := os.Stat(logPath(dir) + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temporary file left: %v", err)
	}
}

// A torn or corrupt record costs only itself: see recover_test.go.
func TestTornHeaderStartsAFreshStore(t *testing.T) {
	// A crash while the store was being created.
	dir2 := t.TempDir()
	os.WriteFile(logPath(dir2), []byte(logMagic[:3]), 0o644)
	s2, _ := open(t, dir2, Options{})
	mustPut(t, s2, "a", "1", chunks("a", nil, "x"), nil)
}

// TestKilledIngestLeavesWholeDocuments runs an ingest in a child process (this
// test binary, re-executed), kills it at a random moment, and checks that every
// document is either whole or absent.
func TestKilledIngestLeavesWholeDocuments(t *testing.T) {
	if dir := os.Getenv("HELIX_EMBEDDED_INGEST_CHILD"); dir != "" {
		ingestUntilKilled(dir)
		return
	}
	if testing.Short() {
		t.Skip("spawns a process")
	}
	dir := t.TempDir()
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKilledIngestLeavesWholeDocuments$")
		cmd.Env = append(os.Environ(), "HELIX_EMBEDDED_INGEST_CHILD="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait until the child ingests, then let it run a random while: the
		// point is to kill it at an arbitrary moment of a write or compaction.
		line, _ := bufio.NewReader(out).ReadString('\n')
		if line != "ingesting\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child said %q", line)
		}
		time.Sleep(time.Duration(20+rand.IntN(200)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()

		s, logs := open(t, dir, Options{})
		docs, _ := s.Documents(ctx)
		stats, _ := s.Stats(ctx)
		hits, err := s.SearchKeyword(ctx, "common", 1<<20, nil)
		if err != nil {
			t.Fatal(err)
		}
		ones := []float32{1, 1, 1, 1, 1, 1, 1, 1}
		vhits, err := s.SearchVector(ctx, ones, 1<<20, nil)
		if err != nil && len(docs) > 0 {
			t.Fatal(err)
		}
		perDoc := map[string]int{}
		for _, h := range hits {
			perDoc[h.Chunk.DocID]++
		}
		total := 0
		for id, hash := range docs {
			n, _ := strconv.Atoi(strings.TrimPrefix(hash, "chunks="))
			if perDoc[id] != n {
				t.Fatalf("round %d: %s has %d chunks, its hash says %d", round, id, perDoc[id], n)
			}
			total += n
		}
		if len(perDoc) > len(docs) || stats.Chunks != total || len(hits) != total || len(vhits) != total {
			t.Fatalf("round %d: %d documents, %d chunks found, stats %+v", round, len(docs), len(hits), stats)
		}
		t.Logf("round %d: %d documents, %d chunks; recovery: %s", round, len(docs), total, strings.TrimSpace(logs.String()))
		s.Close()
	}
}

func ingestUntilKilled(dir string) {
	// Small compaction threshold: kills land in compactions too.
	s, err := Open(dir, Options{CompactMinGarbage: 64 << 10, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	c := newCorpus(uint64(time.Now().UnixNano()), 8)
	for i := 0; ; i++ {
		id := fmt.Sprintf("doc%d", c.rng.IntN(40))
		if i%9 == 8 {
			if err := s.Delete(ctx, id); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			continue
		}
		hash, cs, vecs := c.doc(id, 1+c.rng.IntN(6))
		if err := s.Put(ctx, id, hash, cs, vecs); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if i == 0 {
			fmt.Println("ingesting")
		}
	}
}

// TestConcurrentIngestAndQuery checks that a query never sees half a document:
// each document's hits all come from one version, and all of that version's
// chunks are there.
func TestConcurrentIngestAndQuery(t *testing.T) {
	s, _ := open(t, t.TempDir(), Options{NoSync: true, CompactMinGarbage: 32 << 10})
	c := newCorpus(5, 8)
	type version struct {
		hash string
		cs   []rag.Chunk
		vecs [][]float32
	}
	// Prepared up front: the corpus is not safe for concurrent use.
	var versions []version
	for v := range 300 {
		id := fmt.Sprintf("doc%d", v%10)
		hash, cs, vecs := c.doc(id, 1+v%5)
		for i := range cs {
			cs[i].Metadata["version"] = v
		}
		versions = append(versions, version{hash, cs, vecs})
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	check := func(hits []rag.Hit) error {
		type seen struct{ version, count, want int }
		byDoc := map[string]*seen{}
		for _, h := range hits {
			v, want := h.Chunk.Metadata["version"].(int), h.Chunk.Metadata["chunks"].(int)
			d := byDoc[h.Chunk.DocID]
			if d == nil {
				d = &seen{version: v, want: want}
				byDoc[h.Chunk.DocID] = d
			}
			if d.version != v {
				return fmt.Errorf("%s: chunks of versions %d and %d at once", h.Chunk.DocID, d.version, v)
			}
			d.count++
		}
		for id, d := range byDoc {
			if d.count != d.want {
				return fmt.Errorf("%s version %d: %d of its %d chunks", id, d.version, d.count, d.want)
			}
		}
		// Documents 0-4 are replaced but never deleted: a replacement must not
		// make them vanish for a moment.
		for i := range 5 {
			if id := fmt.Sprintf("doc%d", i); byDoc[id] == nil {
				return fmt.Errorf("%s is missing while being replaced", id)
			}
		}
		return nil
	}
	for v, ver := range versions[:10] {
		mustPut(t, s, fmt.Sprintf("doc%d", v), ver.hash, ver.cs, ver.vecs)
	}
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := make([]float32, 8)
			q[r] = 1
			for !done.Load() {
				hits, err := s.SearchKeyword(ctx, "common", 1000, nil)
				if err == nil {
					err = check(hits)
				}
				if err == nil {
					hits, err = s.SearchVector(ctx, q, 1000, nil)
					if errors.Is(err, rag.ErrNoVectors) {
						err = nil
					} else if err == nil {
						err = check(hits)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for v, ver := range versions[10:] {
		v += 10
		id := fmt.Sprintf("doc%d", v%10)
		if v%10 >= 5 && v%3 == 0 {
			if err := s.Delete(ctx, id); err != nil {
				t.Fatal(err)
			}
			continue
		}
		mustPut(t, s, id, ver.hash, ver.cs, ver.vecs)
	}
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
