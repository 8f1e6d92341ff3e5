package pgvector

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/rag/store/embedded"
	"github.com/arvenza/helix/internal/testtools"
)

// vocabulary for random chunks: a few common words (high df), many rare ones,
// stop words and inflections that the analyzer folds together.
var bm25Words = func() []string {
	w := []string{"the", "of", "and", "running", "runs", "run", "cells", "cell", "protein", "proteins",
		"Gene", "genes", "cancer", "study", "studies", "patients", "patient's"}
	for i := range 60 {
		w = append(w, fmt.Sprintf("word%d", i))
	}
	return w
}()

func randomText(r *rand.Rand, maxWords int) string {
	n := r.IntN(maxWords + 1)
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		// Skewed: low indexes (common words) far more often.
		b.WriteString(bm25Words[int(float64(len(bm25Words))*math.Pow(r.Float64(), 2.5))])
	}
	return b.String()
}

type bm25Doc struct {
	id     string
	chunks []rag.Chunk
}

func randomDoc(r *rand.Rand, id string) bm25Doc {
	d := bm25Doc{id: id}
	title := ""
	if r.IntN(3) > 0 {
		title = randomText(r, 5)
	}
	for i := range 1 + r.IntN(3) {
		c := chunk(id, i, randomText(r, 40), map[string]any{"group": fmt.Sprint(r.IntN(3))})
		c.Title = title
		d.chunks = append(d.chunks, c)
	}
	return d
}

// TestBM25MatchesTheEmbeddedStore fills the PostgreSQL store and the embedded
// store with the same random corpus — then replaces and deletes some of it — and
// checks that every query ranks the same chunks with the same scores in both:
// the same analyzer, idf, length normalisation and two-field combination.
func TestBM25MatchesTheEmbeddedStore(t *testing.T) {
	u := testDB(t)
	s := open(t, Options{DSN: u, Table: uniqueTable(t, u)})
	e, err := embedded.Open(t.TempDir(), embedded.Options{NoSync: true, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := ctxT(t)
	r := rand.New(rand.NewPCG(7, 32))
	put := func(d bm25Doc) {
		t.Helper()
		if err := s.Put(ctx, d.id, "h", d.chunks, nil); err != nil {
			t.Fatal(err)
		}
		if err := e.Put(ctx, d.id, "h", d.chunks, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 120 {
		put(randomDoc(r, fmt.Sprintf("doc%03d", i)))
	}
	for i := range 30 { // replaced: old terms and counts must be gone
		put(randomDoc(r, fmt.Sprintf("doc%03d", r.IntN(120))))
		_ = i
	}
	for range 20 {
		id := fmt.Sprintf("doc%03d", r.IntN(120))
		if err := s.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := e.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	compare := func(q string, f rag.Filter) {
		t.Helper()
		got, err := s.SearchKeyword(ctx, q, 1000, f)
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		want, err := e.SearchKeyword(ctx, q, 1000, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%q %v: %d hits, the embedded store %d", q, f, len(got), len(want))
		}
		// Tie order differs (doc id here, insertion order there): compare
		// scores by chunk and the score sequence.
		wantScore := map[string]float64{}
		for _, h := range want {
			wantScore[h.Chunk.ID] = h.Score
		}
		for i, h := range got {
			w, ok := wantScore[h.Chunk.ID]
			if !ok || math.Abs(h.Score-w) > 1e-9*math.Max(1, w) {
				t.Fatalf("%q %v: %s scored %v, the embedded store %v (found %v)", q, f, h.Chunk.ID, h.Score, w, ok)
			}
			if math.Abs(h.Score-want[i].Score) > 1e-9*math.Max(1, h.Score) {
				t.Fatalf("%q: rank %d scored %v, the embedded store's %v", q, i, h.Score, want[i].Score)
			}
		}
	}
	for range 60 {
		q := randomText(r, 6)
		compare(q, nil)
		compare(q, rag.Filter{"group": "1"})
	}
	compare("protein protein gene", nil) // a repeated query term counts twice
	compare("word59 nothing-like-this", nil)

	// Small n: the search stops reading the common terms' postings early
	// (MaxScore), and still ranks the n best as the exhaustive scoring does.
	pruned := prunedSearches.Load()
	for range 60 {
		q := randomText(r, 8)
		for _, k := range []int{1, 3, 10} {
			for _, f := range []rag.Filter{nil, {"group": "2"}} {
				got, err := s.SearchKeyword(ctx, q, k, f)
				if err != nil {
					t.Fatal(err)
				}
				want, _ := e.SearchKeyword(ctx, q, k, f)
				if len(got) != len(want) {
					t.Fatalf("%q n=%d %v: %d hits, embedded %d", q, k, f, len(got), len(want))
				}
				for i := range got {
					if math.Abs(got[i].Score-want[i].Score) > 1e-9*math.Max(1, want[i].Score) {
						t.Fatalf("%q n=%d %v: rank %d %s=%v, embedded %s=%v", q, k, f, i, got[i].Chunk.ID, got[i].Score, want[i].Chunk.ID, want[i].Score)
					}
				}
			}
		}
	}
	if prunedSearches.Load() == pruned {
		t.Error("no search was pruned: the MaxScore path went untested")
	}

	// The top n are the first n of the full ranking.
	all, _ := s.SearchKeyword(ctx, "cell protein", 1000, nil)
	top, _ := s.SearchKeyword(ctx, "cell protein", 5, nil)
	if len(all) < 5 || fmt.Sprint(ids(top)) != fmt.Sprint(ids(all[:5])) {
		t.Fatalf("top 5 %v, full ranking %v", ids(top), ids(all))
	}
	checkStats(t, s)
}

// checkStats recounts the collection statistics from the chunks and terms and
// compares them with the maintained ones.
func checkStats(t *testing.T, s *Store) {
	t.Helper()
	ctx := ctxT(t)
	var kept, counted [4]int64
	if err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(chunks),0), coalesce(sum(length),0), coalesce(sum(titled),0), coalesce(sum(title_length),0) FROM `+s.statsT).
		Scan(&kept[0], &kept[1], &kept[2], &kept[3]); err != nil {
		t.Fatal(err)
	}
	if err := s.pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(text_len),0), count(*) FILTER (WHERE title_len > 0), coalesce(sum(title_len),0) FROM `+s.chunksT).
		Scan(&counted[0], &counted[1], &counted[2], &counted[3]); err != nil {
		t.Fatal(err)
	}
	if kept != counted {
		t.Fatalf("BM25 statistics %v, the chunks count %v", kept, counted)
	}
	var dfDiff int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM (
		SELECT term, sum(df) AS df, sum(title_df) AS tdf FROM `+s.dfT+` GROUP BY term HAVING sum(df) <> 0 OR sum(title_df) <> 0) kept
		FULL JOIN (SELECT term, count(*) FILTER (WHERE tf > 0) AS df, count(*) FILTER (WHERE title_tf > 0) AS tdf FROM `+s.termsT+` GROUP BY term) counted
		USING (term) WHERE kept.df IS DISTINCT FROM counted.df OR kept.tdf IS DISTINCT FROM counted.tdf`).Scan(&dfDiff); err != nil || dfDiff != 0 {
		t.Fatalf("terms whose kept document frequencies differ from the postings: %d, %v", dfDiff, err)
	}
	var orphans int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM `+s.termsT+` t WHERE NOT EXISTS (SELECT 1 FROM `+s.chunksT+` c WHERE c.doc_id = t.doc_id AND c.idx = t.idx)`).Scan(&orphans); err != nil || orphans != 0 {
		t.Fatalf("terms without a chunk: %d, %v", orphans, err)
	}
}

// TestBM25StatisticsUnderConcurrentWriters has writers put, replace and delete
// overlapping documents at once: no update of the collection counts is lost.
func TestBM25StatisticsUnderConcurrentWriters(t *testing.T) {
	u := testDB(t)
	s := open(t, Options{DSN: u, Table: uniqueTable(t, u)})
	ctx := ctxT(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 99))
			for range 40 {
				id := fmt.Sprintf("doc%02d", r.IntN(25))
				var err error
				if r.IntN(5) == 0 {
					err = s.Delete(ctx, id)
				} else {
					err = s.Put(ctx, id, "h", randomDoc(r, id).chunks, nil)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkStats(t, s)
	if hits, err := s.SearchKeyword(ctx, "protein cells", 3, nil); err != nil || len(hits) == 0 {
		t.Fatalf("search after the writers: %v, %v", hits, err)
	}
}

// TestUpgradeFromSchemaVersion2 opens tables written by the ts_rank version
// (no terms, no lengths): the chunks are analysed on open, and the ranking is
// then the one of a store filled from scratch.
func TestUpgradeFromSchemaVersion2(t *testing.T) {
	u := testDB(t)
	oldTable, newTable := uniqueTable(t, u), uniqueTable(t, u)
	old := open(t, Options{DSN: u, Table: oldTable})
	fresh := open(t, Options{DSN: u, Table: newTable})
	ctx := ctxT(t)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 50 {
		d := randomDoc(r, fmt.Sprintf("doc%02d", i))
		for _, st := range []*Store{old, fresh} {
			if err := st.Put(ctx, d.id, "h", d.chunks, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	old.Close()
	// Back to what schema version 2 held.
	t.Logf("table %s", oldTable)
	testtools.PostgresExec(t, u, "DROP TABLE "+pgx.Identifier{oldTable + "_terms"}.Sanitize()+", "+pgx.Identifier{oldTable + "_bm25_stats"}.Sanitize()+", "+pgx.Identifier{oldTable + "_df"}.Sanitize()+
		"; ALTER TABLE "+pgx.Identifier{oldTable + "_chunks"}.Sanitize()+" DROP COLUMN text_len, DROP COLUMN title_len"+
		"; UPDATE "+pgx.Identifier{oldTable + "_meta"}.Sanitize()+" SET schema_version = 2")

	for range 2 { // the second open finds the upgraded tables
		up := open(t, Options{DSN: u, Table: oldTable})
		if m, err := readMetaOf(t, up); err != nil || m.version != schemaVersion {
			t.Fatalf("meta after the upgrade: %+v, %v", m, err)
		}
		checkStats(t, up)
		for range 20 {
			q := randomText(r, 5)
			a, err1 := up.SearchKeyword(ctx, q, 20, nil)
			b, err2 := fresh.SearchKeyword(ctx, q, 20, nil)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if fmt.Sprint(scoresOf(a)) != fmt.Sprint(scoresOf(b)) {
				t.Fatalf("%q: upgraded %v, fresh %v", q, scoresOf(a), scoresOf(b))
			}
		}
		up.Close()
	}
}

func scoresOf(hits []rag.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = fmt.Sprintf("%s=%.9f", h.Chunk.ID, h.Score)
	}
	sort.Strings(out)
	return out
}

// TestBM25HostileQueries: very long queries, NUL bytes, invalid UTF-8 and
// SQL or tsquery syntax are terms like any other (parameters, never SQL text),
// ranked as the embedded store ranks them.
func TestBM25HostileQueries(t *testing.T) {
	u := testDB(t)
	s := open(t, Options{DSN: u, Table: uniqueTable(t, u)})
	e, err := embedded.Open(t.TempDir(), embedded.Options{NoSync: true, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := ctxT(t)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 40 {
		d := randomDoc(r, fmt.Sprintf("doc%02d", i))
		if i == 0 {
			d.chunks[0].Text += " robert'); DROP TABLE students;-- o'brien \\x00"
		}
		if err := s.Put(ctx, d.id, "h", d.chunks, nil); err != nil {
			t.Fatal(err)
		}
		if err := e.Put(ctx, d.id, "h", d.chunks, nil); err != nil {
			t.Fatal(err)
		}
	}
	var long strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&long, "word%d term%d ", i%70, i)
	}
	for _, q := range []string{long.String(), "robert'); DROP TABLE students;--", "o'brien \x00 \xff\xfe cells", "' | & ! :*", strings.Repeat("protein ", 10000)} {
		got, err := s.SearchKeyword(ctx, q, 5, nil)
		if err != nil {
			t.Fatalf("%.40q: %v", q, err)
		}
		want, _ := e.SearchKeyword(ctx, q, 5, nil)
		if len(got) != len(want) {
			t.Fatalf("%.40q: %d hits, embedded %d", q, len(got), len(want))
		}
		for i := range got {
			if math.Abs(got[i].Score-want[i].Score) > 1e-9*math.Max(1, want[i].Score) {
				t.Fatalf("%.40q: rank %d %v, embedded %v", q, i, got[i].Score, want[i].Score)
			}
		}
	}
	if st, err := s.Stats(ctx); err != nil || st.Documents != 40 {
		t.Fatalf("stats after the hostile queries: %+v, %v", st, err)
	}
}
