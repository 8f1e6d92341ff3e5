package embedded

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/rag"
)

// The kill test's size: HELIX_RAG_KILL_CHUNKS chunks in all (about 1.5 per
// document), ingested over killRounds SIGKILLed runs and a last one that
// finishes. The default keeps it to seconds under -race; the scale run sets
// 1000000.
const (
	killChunksEnv   = "HELIX_RAG_KILL_CHUNKS"
	killChildEnv    = "HELIX_RAG_KILL_CHILD"
	killDefault     = 1500
	killRounds      = 3
	killPutters     = 8
	killBatchers    = 2
	killBatchDocs   = 32
	killWordsPerDoc = 12
)

// killDocs returns how many documents the kill test ingests.
func killDocs(t testing.TB) int {
	chunks := killDefault
	if v := os.Getenv(killChunksEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 10 {
			t.Fatalf("%s=%q: give a number of chunks, at least 10", killChunksEnv, v)
		}
		chunks = n
	}
	return chunks * 2 / 3
}

// killDoc is document i, the same in every process: 1 or 2 chunks, each with
// the document's own term (u<i>x) so that a keyword query finds exactly them.
func killDoc(i int) (id, hash string, cs []rag.Chunk) {
	rng := rand.New(rand.NewPCG(uint64(i), 7))
	id = "doc" + strconv.Itoa(i)
	cs = make([]rag.Chunk, 1+i%2)
	for j := range cs {
		var b strings.Builder
		fmt.Fprintf(&b, "u%dx", i)
		for range killWordsPerDoc {
			fmt.Fprintf(&b, " w%d", rng.IntN(5000))
		}
		cs[j] = rag.Chunk{DocID: id, Index: j, Text: b.String(), Metadata: map[string]any{"n": len(cs)}}
	}
	return id, "v" + strconv.Itoa(i) + "-" + strconv.Itoa(len(cs)), cs
}

// TestKill9MidIngestKeepsAcknowledgedDocuments runs an ingest in a child
// process (this test binary) with concurrent Puts and PutBatches sharing group
// commits; the child reports each document on its stdout after its Put
// returned. The child is SIGKILLed mid-ingest killRounds times and restarted
// (it goes on from the first unacknowledged document); after each kill, every
// acknowledged document must be present and intact, and every other document
// whole or absent. A last run finishes the ingest: all documents are there.
func TestKill9MidIngestKeepsAcknowledgedDocuments(t *testing.T) {
	if spec := os.Getenv(killChildEnv); spec != "" {
		killChild(spec)
		return
	}
	if testing.Short() {
		t.Skip("spawns processes")
	}
	total := killDocs(t)
	dir := t.TempDir()
	acked := make([]bool, total)
	from := 0
	for round := 0; round <= killRounds; round++ {
		final := round == killRounds
		cmd := exec.Command(os.Args[0], "-test.run=^TestKill9MidIngestKeepsAcknowledgedDocuments$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%d,%d", killChildEnv, dir, from, total))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill once the acknowledgements pass this round's share, after a
		// random further while, so the kill lands anywhere in a commit.
		target := total * (round + 1) / (killRounds + 1)
		var count atomic.Int64
		for _, a := range acked {
			if a {
				count.Add(1)
			}
		}
		reached := make(chan struct{})
		readDone := make(chan error, 1)
		go func() {
			r := bufio.NewReader(out)
			var once sync.Once
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					if err == io.EOF {
						err = nil
					}
					readDone <- err
					return
				}
				i, err := strconv.Atoi(strings.TrimSpace(line))
				if err != nil || i < 0 || i >= total {
					readDone <- fmt.Errorf("the child said %q", line)
					return
				}
				acked[i] = true
				if count.Add(1) >= int64(target) {
					once.Do(func() { close(reached) })
				}
			}
		}()
		if !final {
			select {
			case <-reached:
			case err := <-readDone:
				werr := cmd.Wait()
				if err == nil && werr == nil && count.Load() >= int64(total) {
					// A fast machine: the child stored every document before
					// this round's share was reached (an earlier round's child
					// had nearly finished). Nothing is left to kill; the store
					// is checked as after a last run.
					checkKilledStore(t, dir, round, acked, true)
					return
				}
				t.Fatalf("round %d: the child stopped before the kill: %v (%v)", round, err, werr)
			}
			time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
			cmd.Process.Signal(syscall.SIGKILL)
		}
		if err := <-readDone; err != nil {
			t.Fatal(err)
		}
		werr := cmd.Wait()
		if final && werr != nil {
			t.Fatalf("the last run failed: %v", werr)
		}
		from = checkKilledStore(t, dir, round, acked, final)
	}
}

// checkKilledStore opens the store after a kill and checks it against the
// acknowledgements; it returns the first document not acknowledged.
func checkKilledStore(t *testing.T, dir string, round int, acked []bool, final bool) int {
	t.Helper()
	start := time.Now()
	s, logs := open(t, dir, Options{})
	defer s.Close()
	opened := time.Since(start)
	docs, err := s.Documents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nAcked, extra, chunks := 0, 0, 0
	first := -1
	for i, a := range acked {
		id, hash, want := killDoc(i)
		got, present := docs[id]
		if a {
			nAcked++
		} else if first < 0 {
			first = i
		}
		if a && !present {
			t.Fatalf("round %d: %s was acknowledged and is missing after the kill", round, id)
		}
		if final && !present {
			t.Fatalf("after the last run: %s is missing", id)
		}
		if !present {
			continue
		}
		if !a {
			extra++
		}
		if got != hash {
			t.Fatalf("round %d: %s has hash %q, want %q", round, id, got, hash)
		}
		// Only this document's chunks hold its own term: all of them must
		// come back, as they were put.
		hits, err := s.SearchKeyword(ctx, want[0].Text[:strings.IndexByte(want[0].Text, ' ')], 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != len(want) {
			t.Fatalf("round %d: %s has %d chunks, want %d", round, id, len(hits), len(want))
		}
		for _, h := range hits {
			if h.Chunk.DocID != id || h.Chunk.Text != want[h.Chunk.Index].Text {
				t.Fatalf("round %d: %s's chunk %d is not as put: %+v", round, id, h.Chunk.Index, h.Chunk)
			}
		}
		chunks += len(want)
	}
	if len(docs) != nAcked+extra {
		t.Fatalf("round %d: the store holds %d documents, %d of them known", round, len(docs), nAcked+extra)
	}
	if st, _ := s.Stats(ctx); st.Chunks != chunks {
		t.Fatalf("round %d: stats say %d chunks, the documents hold %d", round, st.Chunks, chunks)
	}
	t.Logf("round %d: %d acknowledged documents present, %d more not yet acknowledged, %d chunks; open took %v; %s",
		round, nAcked, extra, chunks, opened.Round(time.Millisecond), strings.TrimSpace(logs.String()))
	if first < 0 {
		first = len(acked)
	}
	return first
}

// killChild ingests documents from..total-1 of spec "dir,from,total" with
// killPutters goroutines calling Put and killBatchers calling PutBatch, and
// writes each document's number on stdout once its write returned.
func killChild(spec string) {
	parts := strings.Split(spec, ",")
	from, _ := strconv.Atoi(parts[1])
	total, _ := strconv.Atoi(parts[2])
	s, err := Open(parts[0], Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var outMu sync.Mutex
	out := bufio.NewWriterSize(os.Stdout, 4096)
	ack := func(is ...int) {
		outMu.Lock()
		defer outMu.Unlock()
		for _, i := range is {
			out.WriteString(strconv.Itoa(i))
			out.WriteByte('\n')
		}
		out.Flush()
	}
	die := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var next atomic.Int64
	next.Store(int64(from))
	var wg sync.WaitGroup
	for range killPutters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < total; i = int(next.Add(1) - 1) {
				id, hash, cs := killDoc(i)
				if err := s.Put(ctx, id, hash, cs, nil); err != nil {
					die(err)
				}
				ack(i)
			}
		}()
	}
	for range killBatchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				first := int(next.Add(killBatchDocs) - killBatchDocs)
				if first >= total {
					return
				}
				var docs []rag.PutDoc
				var nums []int
				for i := first; i < min(first+killBatchDocs, total); i++ {
					id, hash, cs := killDoc(i)
					docs = append(docs, rag.PutDoc{ID: id, Hash: hash, Chunks: cs})
					nums = append(nums, i)
				}
				for _, err := range s.PutBatch(ctx, docs) {
					if err != nil {
						die(err)
					}
				}
				ack(nums...)
			}
		}()
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		die(err)
	}
	os.Exit(0) // before the test framework writes to stdout
}
