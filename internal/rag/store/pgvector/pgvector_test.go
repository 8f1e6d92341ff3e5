package pgvector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arvenza/helix/internal/rag"
	"github.com/arvenza/helix/internal/testtools"
)

var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// testDB returns the test server's URL, skipping (or failing under
// HELIX_REQUIRE_TOOLS=1) when there is none or it lacks pgvector.
func testDB(t *testing.T) string {
	t.Helper()
	u := testtools.PostgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var available bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')").Scan(&available); err != nil {
		t.Fatal(err)
	}
	if !available {
		testtools.Missing(t, "the test PostgreSQL has no pgvector extension (scripts/setup-services.sh builds it)")
	}
	return u
}

// uniqueTable returns a table base name of the test's own, whose tables are dropped
// when it ends.
func uniqueTable(t *testing.T, u string) string {
	t.Helper()
	table := testtools.UniqueName("ragtest")
	dropTables(t, u, table)
	return table
}

func dropTables(t *testing.T, u, table string) {
	t.Cleanup(func() {
		testtools.PostgresExec(t, u, "DROP TABLE IF EXISTS "+
			pgx.Identifier{table + "_terms"}.Sanitize()+", "+
			pgx.Identifier{table + "_bm25_stats"}.Sanitize()+", "+
			pgx.Identifier{table + "_df"}.Sanitize()+", "+
			pgx.Identifier{table + "_chunks"}.Sanitize()+", "+
			pgx.Identifier{table + "_documents"}.Sanitize()+", "+
			pgx.Identifier{table + "_meta"}.Sanitize())
	})
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func open(t *testing.T, o Options) *Store {
	t.Helper()
	if o.Logger == nil {
		o.Logger = quietLogger
	}
	s, err := Open(ctxT(t), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func chunk(doc string, i int, text string, md map[string]any) rag.Chunk {
	return rag.Chunk{ID: fmt.Sprintf("%s#%d", doc, i), DocID: doc, Index: i, Text: text,
		Start: i * 100, End: i*100 + len(text), Headings: []string{"Guide", "Part " + fmt.Sprint(i)}, Metadata: md}
}

func ids(hits []rag.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Chunk.ID
	}
	return out
}

func TestTableName(t *testing.T) {
	cases := map[string]string{
		"doc-search": "helix_rag_doc_search_",
		"docs":       "helix_rag_docs",
		"A\"; DROP":  "helix_rag_a___drop_",
	}
	for id, prefix := range cases {
		got := TableName(id)
		if !strings.HasPrefix(got, prefix) || len(got) > MaxTableLen {
			t.Errorf("TableName(%q) = %q, want prefix %q and at most %d bytes", id, got, prefix, MaxTableLen)
		}
		for _, r := range got {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
				t.Errorf("TableName(%q) = %q holds %q", id, got, r)
			}
		}
	}
	if TableName("a-b") == TableName("a_b") {
		t.Error("distinct pipeline ids share a table")
	}
	long := strings.Repeat("x", 200)
	if got := TableName(long); len(got) > MaxTableLen || got == TableName(long+"y") {
		t.Errorf("long ids: %q", got)
	}
}

func TestOpenChecksOptions(t *testing.T) {
	ctx := ctxT(t)
	for name, o := range map[string]Options{
		"no table":   {DSN: "postgres://u@127.0.0.1:1/db"},
		"long table": {Table: strings.Repeat("t", MaxTableLen+1)},
		"bad config": {Table: "t", TextSearchConfig: "english'); DROP TABLE x; --"},
		"negative":   {Table: "t", Dimensions: -1},
	} {
		if _, err := Open(ctx, o); err == nil {
			t.Errorf("%s: Open succeeded", name)
		}
	}
}

// Connection errors name the server but never the password, whatever the DSN's form.
func TestErrorsHideThePassword(t *testing.T) {
	const secret = "s3cr3t-Pa55"
	ctx := ctxT(t)
	for _, dsn := range []string{
		"postgres://helix:" + secret + "@127.0.0.1:1/helix?connect_timeout=2",
		"postgres://helix:" + secret + "@127.0.0.1:notaport/helix",
		"host=127.0.0.1 port=1 user=helix password=" + secret + " connect_timeout=2",
		"host=127.0.0.1 port=1 user=helix password='" + secret + "' connect_timeout=2",
		"postgres://helix:" + secret + "@127.0.0.1:1/helix?sslmode=bogus",
	} {
		_, err := Open(ctx, Options{DSN: dsn, Table: "t", Logger: quietLogger})
		if err == nil {
			t.Fatalf("%s: Open succeeded", dsn)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error shows the password: %v", err)
		}
	}
	t.Setenv("DATABASE_URL", "postgres://helix:"+secret+"@127.0.0.1:1/helix?connect_timeout=2")
	if _, err := Open(ctx, Options{Table: "t", Logger: quietLogger}); err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("DATABASE_URL: %v", err)
	}
}

func TestWrongPasswordAgainstTheServer(t *testing.T) {
	u := testDB(t)
	const secret = "not-the-password-42"
	bad := strings.Replace(u, "helix:helix@", "helix:"+secret+"@", 1)
	if bad == u {
		t.Skip("the test URL has no helix:helix credentials to replace")
	}
	_, err := Open(ctxT(t), Options{DSN: bad, Table: uniqueTable(t, u), Logger: quietLogger})
	if err == nil {
		t.Fatal("Open with a wrong password succeeded")
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("the error shows the password: %v", err)
	}
}

func TestMigrationsIdempotentAndConcurrent(t *testing.T) {
	u := testDB(t)
	table := uniqueTable(t, u)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			s, err := Open(ctxT(t), Options{DSN: u, Table: table, Model: "m", Dimensions: 3, Logger: quietLogger})
			if err == nil {
				err = s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("concurrent Open: %v", err)
		}
	}
	// And again, sequentially, with data in place.
	s := open(t, Options{DSN: u, Table: table, Model: "m", Dimensions: 3})
	if err := s.Put(ctxT(t), "d", "h", []rag.Chunk{chunk("d", 0, "hello", nil)}, [][]float32{{1, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	s2 := open(t, Options{DSN: u, Table: table, Model: "m"})
	if st, err := s2.Stats(ctxT(t)); err != nil || st != (rag.Stats{Documents: 1, Chunks: 1}) {
		t.Fatalf("stats after reopen: %+v %v", st, err)
	}
	if s2.cachedDims() != 3 {
		t.Errorf("dimensions after reopen: %d", s2.cachedDims())
	}
}

func TestPutReplaceDelete(t *testing.T) {
	u := testDB(t)
	s := open(t, Options{DSN: u, Table: uniqueTable(t, u), Model: "m"})
	ctx := ctxT(t)
	md := map[string]any{"lang": "en", "year": 2024.0, "source": "a.md"}
	if err := s.Put(ctx, "a", "h1", []rag.Chunk{chunk("a", 0, "alpha one", md), chunk("a", 1, "alpha two", md)},
		[][]float32{{1, 0}, {0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "b", "hb", []rag.Chunk{chunk("b", 0, "beta", nil)}, [][]float32{{1, 1}}); err != nil {
		t.Fatal(err)
	}
	docs, err := s.Documents(ctx)
	if err != nil || len(docs) != 2 || docs["a"] != "h1" || docs["b"] != "hb" {
		t.Fatalf("Documents = %v, %v", docs, err)
	}
	hits, err := s.SearchVector(ctx, []float32{1, 0}, 10, nil)
	if err != nil || len(hits) != 3 {
		t.Fatalf("SearchVector = %v, %v", hits, err)
	}
	got := hits[0]
	want := chunk("a", 0, "alpha one", md)
	if got.Chunk.ID != want.ID || got.Chunk.DocID != "a" || got.Chunk.Text != want.Text || got.Chunk.Start != want.Start ||
		got.Chunk.End != want.End || fmt.Sprint(got.Chunk.Headings) != fmt.Sprint(want.Headings) ||
		fmt.Sprint(got.Chunk.Metadata) != fmt.Sprint(md) || math.Abs(got.Score-1) > 1e-6 {
		t.Errorf("top hit = %+v, want %+v with score 1", got, want)
	}

	// Replace: fewer chunks, new hash, the old ones gone.
	if err := s.Put(ctx, "a", "h2", []rag.Chunk{chunk("a", 0, "alpha replaced", md)}, [][]float32{{1, 0}}); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Stats(ctx); st != (rag.Stats{Documents: 2, Chunks: 2}) {
		t.Errorf("stats after replace = %+v", st)
	}
	if docs, _ := s.Documents(ctx); docs["a"] != "h2" {
		t.Errorf("hash after replace = %q", docs["a"])
	}
	if hits, _ := s.SearchKeyword(ctx, "two", 10, nil); len(hits) != 0 {
		t.Errorf("old chunk still found: %v", ids(hits))
	}

	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "never-stored"); err != nil {
		t.Errorf("deleting an unknown document: %v", err)
	}
	if st, _ := s.Stats(ctx); st != (rag.Stats{Documents: 1, Chunks: 1}) {
		t.Errorf("stats after delete = %+v", st)
	}

	// Bad input is an error, not a panic.
	if err := s.Put(ctx, "c", "h", []rag.Chunk{chunk("c", 0, "x", nil)}, [][]float32{{1, 0}, {0, 1}}); err == nil {
		t.Error("more vectors than chunks accepted")
	}
	if err := s.Put(ctx, "c", "h", []rag.Chunk{chunk("c", 0, "x", nil)}, [][]float32{{1, 0, 0}}); err == nil || !strings.Contains(err.Error(), "re-ingest") {
		t.Errorf("a vector of another dimension: %v", err)
	}
	if _, err := s.SearchVector(ctx, []float32{1, 0, 0}, 3, nil); err == nil {
		t.Error("a query vector of another dimension accepted")
	}
	// Text PostgreSQL cannot hold is cleaned, not refused.
	weird := map[string]any{"k\x00": "v\x00", "bad": "\xff"}
	if err := s.Put(ctx, "w", "h", []rag.Chunk{chunk("w", 0, "nul\x00byte \xff", weird)}, [][]float32{{0, 1}}); err != nil {
		t.Errorf("NUL and invalid UTF-8: %v", err)
	}
}

func TestNoVectors(t *testing.T) {
	u := testDB(t)
	s := open(t, Options{DSN: u, Table: uniqueTable(t, u)})
	ctx := ctxT(t)
	if _, err := s.SearchVector(ctx, []float32{1}, 3, nil); !errors.Is(err, rag.ErrNoVectors) {
		t.Errorf("empty store: %v, want ErrNoVectors", err)
	}
	if err := s.Put(ctx, "a", "h", []rag.Chunk{chunk("a", 0, "runners running", nil)}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SearchVector(ctx, []float32{1}, 3, nil); !errors.Is(err, rag.ErrNoVectors) {
		t.Errorf("store without vectors: %v, want ErrNoVectors", err)
	}
	hits, err := rag.Retrieve(ctx, s, nil, rag.Query{Text: "run"})
	if err != nil || len(hits) != 1 {
		t.Errorf("keyword retrieval without an embedder: %v, %v", hits, err)
	}
}

// The dimension is fixed by the first Put with vectors, then checked.
func TestDimensionsFromFirstPut(t *testing.T) {
	u := testDB(t)
	table := uniqueTable(t, u)
	s := open(t, Options{DSN: u, Table: table, Model: "m"})
	ctx := ctxT(t)
	if err := s.Put(ctx, "a", "h", []rag.Chunk{chunk("a", 0, "no vector yet", nil)}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "b", "h", []rag.Chunk{chunk("b", 0, "x", nil)}, [][]float32{{0.5, 0.5, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	hits, err := s.SearchVector(ctx, []float32{1, 1, 0, 0}, 5, nil)
	if err != nil || len(hits) != 1 || hits[0].Chunk.DocID != "b" {
		t.Fatalf("SearchVector = %v, %v", hits, err)
	}
	// Another replica that had opened before the dimension was known.
	other := open(t, Options{DSN: u, Table: table, Model: "m"})
	if err := other.Put(ctx, "c", "h", []rag.Chunk{chunk("c", 0, "y", nil)}, [][]float32{{1, 2, 3}}); err == nil {
		t.Error("a second dimension accepted")
	}
	var typ string
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, `SELECT format_type(atttypid, atttypmod) FROM pg_attribute
		WHERE attrelid = $1::regclass AND attname = 'embedding'`, pgx.Identifier{table + "_chunks"}.Sanitize()).Scan(&typ); err != nil {
		t.Fatal(err)
	}
	if typ != "vector(4)" {
		t.Errorf("embedding column type = %q, want vector(4)", typ)
	}
}

func TestModelOrDimensionMismatchOnReopen(t *testing.T) {
	u := testDB(t)
	table := uniqueTable(t, u)
	s := open(t, Options{DSN: u, Table: table, Model: "openai:text-embedding-3-small", Dimensions: 4})
	if err := s.Put(ctxT(t), "a", "h", []rag.Chunk{chunk("a", 0, "x", nil)}, [][]float32{{1, 0, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]Options{
		"model":     {Model: "onnx:minilm", Dimensions: 4},
		"dimension": {Model: "openai:text-embedding-3-small", Dimensions: 8},
		"embedder":  {},
		"config":    {Model: "openai:text-embedding-3-small", TextSearchConfig: "simple"},
	} {
		o.DSN, o.Table, o.Logger = u, table, quietLogger
		_, err := Open(ctxT(t), o)
		if err == nil {
			t.Errorf("%s mismatch: Open succeeded", name)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "re-ingest") || !strings.Contains(msg, "DROP TABLE") {
			t.Errorf("%s mismatch: %v (should say how to re-ingest)", name, err)
		}
	}
	open(t, Options{DSN: u, Table: table, Model: "openai:text-embedding-3-small"}) // same model: fine
}

func TestHostileTableNames(t *testing.T) {
	u := testDB(t)
	victim := testtools.UniqueName("victim")
	testtools.PostgresExec(t, u, "CREATE TABLE "+victim+" (id int)")
	t.Cleanup(func() { testtools.PostgresExec(t, u, "DROP TABLE IF EXISTS "+victim) })
	hostile := `a"; DROP TABLE ` + victim + `; --`
	for _, table := range []string{TableName(hostile), hostile[:min(len(hostile), MaxTableLen)]} {
		dropTables(t, u, table)
		s := open(t, Options{DSN: u, Table: table, Model: "m", TextSearchConfig: "english"})
		ctx := ctxT(t)
		if err := s.Put(ctx, hostile, hostile, []rag.Chunk{chunk(hostile, 0, "drop table", map[string]any{hostile: hostile})}, [][]float32{{1, 0}}); err != nil {
			t.Fatalf("%q: %v", table, err)
		}
		if hits, err := s.SearchKeyword(ctx, hostile+"' | !", 5, rag.Filter{hostile: hostile}); err != nil || len(hits) != 1 {
			t.Errorf("%q: keyword search = %v, %v", table, hits, err)
		}
		if hits, err := s.SearchVector(ctx, []float32{1, 0}, 5, rag.Filter{hostile: hostile}); err != nil || len(hits) != 1 {
			t.Errorf("%q: vector search = %v, %v", table, hits, err)
		}
		if err := s.Delete(ctx, hostile); err != nil {
			t.Error(err)
		}
	}
	testtools.PostgresExec(t, u, "SELECT count(*) FROM "+victim) // still there
}

func TestKeywordSearch(t *testing.T) {
	u := testDB(t)
	s := open(t, Options{DSN: u, Table: uniqueTable(t, u)})
	ctx := ctxT(t)
	put := func(doc, text string, md map[string]any) {
		t.Helper()
		if err := s.Put(ctx, doc, "h", []rag.Chunk{chunk(doc, 0, text, md)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	put("run", "She runs every morning before work.", map[string]any{"lang": "en", "year": 2023})
	put("cat", "Cats sleep most of the day.", map[string]any{"lang": "en", "year": 2024})
	put("both", "The cat runs, the cat sleeps, the cat runs again.", map[string]any{"lang": "fr", "year": 2024})
	put("none", "Completely unrelated prose about databases.", nil)

	hits, err := s.SearchKeyword(ctx, "running", 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(hits); len(got) != 2 || !contains(got, "run#0") || !contains(got, "both#0") {
		t.Errorf("stemmed match: %v, want run#0 and both#0", got)
	}
	// A natural-language question: terms are ORed, stop words dropped, and the
	// chunk with the most query terms ranks first.
	hits, err = s.SearchKeyword(ctx, "Which cats are running?", 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(hits); len(got) != 3 || got[0] != "both#0" {
		t.Errorf("OR query: %v, want both#0 first among 3", got)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Score > hits[i-1].Score {
			t.Errorf("not best first: %v", hits)
		}
	}
	if hits, _ := s.SearchKeyword(ctx, "cats running", 1, nil); len(hits) != 1 {
		t.Errorf("limit: %d hits", len(hits))
	}
	// Filters: strings and numbers (as numbers).
	if got := ids(mustKeyword(t, s, "cat", rag.Filter{"lang": "en"})); fmt.Sprint(got) != "[cat#0]" {
		t.Errorf("filter lang=en: %v", got)
	}
	if got := ids(mustKeyword(t, s, "runs", rag.Filter{"year": 2023})); fmt.Sprint(got) != "[run#0]" {
		t.Errorf("filter year=2023: %v", got)
	}
	if got := ids(mustKeyword(t, s, "runs", rag.Filter{"year": "2023"})); len(got) != 0 {
		t.Errorf("a string does not equal a number: %v", got)
	}
	// Only stop words, punctuation or tsquery syntax: no hits, no error.
	for _, q := range []string{"the of and", "", "!!! & | :* ''", `\'`} {
		if hits, err := s.SearchKeyword(ctx, q, 5, nil); err != nil || len(hits) != 0 {
			t.Errorf("query %q: %v, %v", q, ids(hits), err)
		}
	}
}

func mustKeyword(t *testing.T, s *Store, q string, f rag.Filter) []rag.Hit {
	t.Helper()
	hits, err := s.SearchKeyword(ctxT(t), q, 10, f)
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func randomVector(r *rand.Rand, dims int) []float32 {
	v := make([]float32, dims)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

// Vector search agrees with brute-force cosine similarity, with and without a
// filter that keeps a tenth of the chunks, both as the planner chooses (a
// sequential scan at this size: exact) and through the HNSW index (sequential scans
// disabled): there a filter needs the iterative scan to honour LIMIT.
func TestVectorSearchMatchesBruteForce(t *testing.T) {
	u := testDB(t)
	for _, forceIndex := range []bool{false, true} {
		t.Run(fmt.Sprintf("forceIndex=%v", forceIndex), func(t *testing.T) {
			cfg, err := pgxpool.ParseConfig(u)
			if err != nil {
				t.Fatal(err)
			}
			if forceIndex {
				// Bitmap scans too: a filter could otherwise use the metadata index and sort.
				cfg.ConnConfig.RuntimeParams["enable_seqscan"] = "off"
				cfg.ConnConfig.RuntimeParams["enable_bitmapscan"] = "off"
			}
			pool, err := pgxpool.NewWithConfig(ctxT(t), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pool.Close)
			s := open(t, Options{Pool: pool, Table: uniqueTable(t, u), Model: "m", Dimensions: 16})
			if forceIndex {
				rows, _ := pool.Query(ctxT(t), "EXPLAIN SELECT 1 FROM "+s.chunksT+" ORDER BY embedding <=> '[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]' LIMIT 5")
				lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
				if err != nil {
					t.Fatal(err)
				}
				if plan := strings.Join(lines, "\n"); !strings.Contains(plan, "embedding_idx") {
					t.Fatalf("the HNSW index is not used: %s", plan)
				}
			}
			checkAgainstBruteForce(t, s)
		})
	}
}

func checkAgainstBruteForce(t *testing.T, s *Store) {
	const dims, docs, perDoc = 16, 20, 10
	ctx := ctxT(t)
	r := rand.New(rand.NewPCG(1, 2))
	type stored struct {
		id    string
		group string
		vec   []float32
	}
	var all []stored
	for d := range docs {
		doc := fmt.Sprintf("doc%02d", d)
		var chunks []rag.Chunk
		var vecs [][]float32
		for i := range perDoc {
			g := fmt.Sprintf("g%d", i)
			c := chunk(doc, i, "text", map[string]any{"group": g})
			v := randomVector(r, dims)
			chunks, vecs = append(chunks, c), append(vecs, v)
			all = append(all, stored{c.ID, g, v})
		}
		if err := s.Put(ctx, doc, "h", chunks, vecs); err != nil {
			t.Fatal(err)
		}
	}
	const k = 10
	for _, filter := range []rag.Filter{nil, {"group": "g3"}} {
		var found, total int
		for range 10 {
			q := randomVector(r, dims)
			var want []stored
			for _, c := range all {
				if filter == nil || c.group == filter["group"] {
					want = append(want, c)
				}
			}
			sort.Slice(want, func(i, j int) bool { return cosine(q, want[i].vec) > cosine(q, want[j].vec) })
			want = want[:k]
			hits, err := s.SearchVector(ctx, q, k, filter)
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) != k {
				t.Fatalf("filter %v: %d hits, want %d (LIMIT must be honoured with a filter)", filter, len(hits), k)
			}
			byID := map[string][]float32{}
			for _, c := range all {
				byID[c.id] = c.vec
			}
			for i, h := range hits {
				if filter != nil && h.Chunk.Metadata["group"] != filter["group"] {
					t.Errorf("hit %s outside the filter", h.Chunk.ID)
				}
				if exact := cosine(q, byID[h.Chunk.ID]); math.Abs(exact-h.Score) > 1e-4 {
					t.Errorf("hit %s scores %f, cosine is %f", h.Chunk.ID, h.Score, exact)
				}
				if i > 0 && h.Score > hits[i-1].Score {
					t.Errorf("not best first at %d", i)
				}
			}
			got := map[string]bool{}
			for _, h := range hits {
				got[h.Chunk.ID] = true
			}
			for _, w := range want {
				if got[w.id] {
					found++
				}
			}
			total += k
		}
		if recall := float64(found) / float64(total); recall < 0.9 {
			t.Errorf("filter %v: top-%d recall %.2f, want >= 0.9", filter, k, recall)
		}
	}
}

// Queries during puts see whole documents: the old chunks or the new ones.
func TestConcurrentPutAndSearch(t *testing.T) {
	u := testDB(t)
	s := open(t, Options{DSN: u, Table: uniqueTable(t, u), Model: "m", Dimensions: 2})
	ctx := ctxT(t)
	const versions = 15
	put := func(doc string, v int) error {
		chunks := []rag.Chunk{
			chunk(doc, 0, fmt.Sprintf("version%d alpha", v), map[string]any{"v": v}),
			chunk(doc, 1, fmt.Sprintf("version%d beta", v), map[string]any{"v": v}),
		}
		return s.Put(ctx, doc, fmt.Sprint(v), chunks, [][]float32{{1, float32(v)}, {float32(v), 1}})
	}
	if err := put("shared", 0); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for v := 1; v <= versions; v++ {
				if err := put("shared", v); err != nil {
					errs <- err
					return
				}
				if err := put(fmt.Sprintf("own%d", w), v); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				hits, err := s.SearchKeyword(ctx, "alpha beta", 10, rag.Filter{})
				if err == nil {
					perVersion := map[any]int{}
					for _, h := range hits {
						if h.Chunk.DocID == "shared" {
							perVersion[h.Chunk.Metadata["v"]]++
						}
					}
					if len(perVersion) != 1 {
						err = fmt.Errorf("a query saw a half-replaced document: %v", perVersion)
					}
				}
				if err == nil {
					_, err = s.SearchVector(ctx, []float32{1, 1}, 5, nil)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(done)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st, err := s.Stats(ctx); err != nil || st != (rag.Stats{Documents: 3, Chunks: 6}) {
		t.Errorf("stats = %+v, %v", st, err)
	}
}

// A pool shared with other users: the store registers the vector type on its
// connections and leaves the pool open at Close.
func TestSharedPool(t *testing.T) {
	u := testDB(t)
	ctx := ctxT(t)
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s := open(t, Options{Pool: pool, Table: uniqueTable(t, u), Model: "m"})
	if err := s.Put(ctx, "a", "h", []rag.Chunk{chunk("a", 0, "shared pools", nil)}, [][]float32{{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	if hits, err := s.SearchVector(ctx, []float32{1, 2, 3}, 1, nil); err != nil || len(hits) != 1 {
		t.Fatalf("SearchVector = %v, %v", hits, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pool.Ping(ctx); err != nil {
		t.Errorf("Close closed a shared pool: %v", err)
	}
}

// Replicas opened before the dimension was known put their first vectors at once:
// one fixes the dimension, the others agree with it.
func TestConcurrentFirstVectors(t *testing.T) {
	u := testDB(t)
	table := uniqueTable(t, u)
	stores := make([]*Store, 3)
	for i := range stores {
		stores[i] = open(t, Options{DSN: u, Table: table, Model: "m"})
	}
	ctx := ctxT(t)
	var wg sync.WaitGroup
	errs := make([]error, len(stores))
	for i, s := range stores {
		wg.Go(func() {
			doc := fmt.Sprintf("d%d", i)
			errs[i] = s.Put(ctx, doc, "h", []rag.Chunk{chunk(doc, 0, "x", nil)}, [][]float32{{1, float32(i), 0}})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
	for i, s := range stores {
		if hits, err := s.SearchVector(ctx, []float32{1, 0, 0}, 5, nil); err != nil || len(hits) != 3 {
			t.Errorf("replica %d: SearchVector = %v, %v", i, ids(hits), err)
		}
	}
}

func TestCancelledContext(t *testing.T) {
	u := testDB(t)
	s := open(t, Options{DSN: u, Table: uniqueTable(t, u)})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.SearchKeyword(ctx, "x", 3, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("SearchKeyword with a cancelled context: %v", err)
	}
	if err := s.Put(ctx, "a", "h", nil, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a cancelled context: %v", err)
	}
}
