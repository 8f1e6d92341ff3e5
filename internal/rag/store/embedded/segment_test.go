package embedded

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/textproc"
)

// countingAnalyzer is the English analyzer, counting the texts it analyses.
func countingAnalyzer(n *atomic.Int64) textproc.Analyzer {
	return textproc.AnalyzerFunc(func(text string) []string {
		n.Add(1)
		return textproc.English().Tokens(text)
	})
}

// fillSegmentStore puts docs documents (titles on some, metadata, vectors,
// a few replaced and deleted) into s, from document number from on.
func fillSegmentStore(t *testing.T, s *Store, c *corpus, from, docs int) {
	t.Helper()
	for i := from; i < from+docs; i++ {
		id := fmt.Sprint("doc", i)
		hash, cs, vecs := c.doc(id, 1+i%4)
		mustPut(t, s, id, hash, cs, vecs)
		if i%7 == 3 {
			hash, cs, vecs = c.doc(id, 2)
			mustPut(t, s, id, hash+"/again", cs, vecs)
		}
		if i%11 == 5 {
			if err := s.Delete(ctx, fmt.Sprint("doc", i-2)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// results is what a store answers: its documents, stats, and a fixed set of
// keyword and vector queries (ids, scores to the bit, chunk contents).
func results(t *testing.T, s *Store) string {
	t.Helper()
	var b strings.Builder
	docs, _ := s.Documents(ctx)
	st, _ := s.Stats(ctx)
	fmt.Fprintf(&b, "%d docs %v %+v\n", len(docs), docs, st)
	c := newCorpus(77, 8)
	for i := range 30 {
		var f rag.Filter
		if i%3 == 0 {
			f = rag.Filter{"parity": 1}
		}
		kw, err := s.SearchKeyword(ctx, c.text(1+i%6), 5+i, f)
		if err != nil {
			t.Fatal(err)
		}
		vec, err := s.SearchVector(ctx, c.vector(), 5, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range append(kw, vec...) {
			fmt.Fprintf(&b, "%s %x %q %q %v %v|", h.Chunk.ID, math.Float64bits(h.Score), h.Chunk.Text, h.Chunk.Title, h.Chunk.Metadata, h.Chunk.Headings)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func copyStore(t *testing.T, from, to string) {
	t.Helper()
	for _, name := range []string{"chunks.log", segmentName} {
		in, err := os.Open(filepath.Join(from, name))
		if err != nil {
			continue
		}
		out, err := os.Create(filepath.Join(to, name))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(out, in)
		in.Close()
		out.Close()
	}
}

// TestSavedIndexSparesTheReplay: Close saves the index beside the log, and
// the next open takes it from there, analysing only the records written after
// it; the store answers exactly as one that replayed its whole log.
func TestSavedIndexSparesTheReplay(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, Options{NoSync: true})
	c := newCorpus(5, 8)
	fillSegmentStore(t, s, c, 0, 60)
	s.Close()
	if _, err := os.Stat(segmentPath(dir)); err != nil {
		t.Fatalf("no saved index after Close: %v", err)
	}

	// Reopened: nothing analysed, then 20 more documents written, and the
	// store copied while open (the saved index covers only its first part,
	// as after a crash).
	var analysed atomic.Int64
	s, logs := open(t, dir, Options{NoSync: true, Analyzer: countingAnalyzer(&analysed)})
	if n := analysed.Load(); n != 0 {
		t.Fatalf("opening with a saved index analysed %d texts", n)
	}
	fillSegmentStore(t, s, c, 60, 20)
	crashed := t.TempDir()
	copyStore(t, dir, crashed)
	want := results(t, s)

	analysed.Store(0)
	s2, logs2 := open(t, crashed, Options{NoSync: true, Analyzer: countingAnalyzer(&analysed)})
	if n := analysed.Load(); n == 0 || n > 3*20*4 {
		t.Fatalf("opening with a saved index and 20 documents after it analysed %d texts", n)
	}
	if got := results(t, s2); got != want {
		t.Fatalf("with a saved index and a replayed tail:\n%s\nwant\n%s", got, want)
	}
	// The reference: the same log replayed from its start.
	s2.Close()
	os.Remove(segmentPath(crashed))
	s3, _ := open(t, crashed, Options{NoSync: true})
	if got := results(t, s3); got != want {
		t.Fatalf("replayed from the start:\n%s\nwant\n%s", got, want)
	}
	for _, l := range []string{logs.String(), logs2.String()} {
		if strings.Contains(l, "saved index") {
			t.Fatalf("unexpected log: %s", l)
		}
	}
}

// TestDamagedOrStaleSavedIndexIsRebuilt: a saved index that fails its
// checksum, or whose log changed under it, is reported and not used; the
// store replays its log and answers as if there had been none.
func TestDamagedOrStaleSavedIndexIsRebuilt(t *testing.T) {
	for _, tc := range []struct {
		name, file, reason string
		change             func(b []byte) []byte
	}{
		{"flipped bit in the index", segmentName, "fails its checksum", func(b []byte) []byte { b[len(b)/2] ^= 1; return b }},
		{"index cut short", segmentName, "checksum", func(b []byte) []byte { return b[:len(b)-100] }},
		{"log changed under the index", "chunks.log", "changed since it was saved", func(b []byte) []byte {
			i := strings.Index(string(b), "common ")
			b[i] = 'C'
			return b
		}},
		{"log replaced by a shorter one", "chunks.log", "the log was replaced or cut", func(b []byte) []byte { return b[:len(b)/2] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, _ := open(t, dir, Options{NoSync: true})
			fillSegmentStore(t, s, newCorpus(6, 8), 0, 40)
			s.Close()
			path := filepath.Join(dir, tc.file)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tc.change(b), 0o644); err != nil {
				t.Fatal(err)
			}
			ref := t.TempDir()
			copyStore(t, dir, ref)
			os.Remove(segmentPath(ref))

			s, logs := open(t, dir, Options{NoSync: true})
			if !strings.Contains(logs.String(), "saved index cannot be used") || !strings.Contains(logs.String(), tc.reason) {
				t.Fatalf("logs %q, want the saved index refused (%s)", logs.String(), tc.reason)
			}
			r, _ := open(t, ref, Options{NoSync: true})
			if got, want := results(t, s), results(t, r); got != want {
				t.Fatalf("with a refused index:\n%s\nwant\n%s", got, want)
			}
		})
	}
}
