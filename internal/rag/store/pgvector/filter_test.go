package pgvector

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arvenza/helix/internal/rag"
)

// Metadata and filters drawn from small pools, so that random filters hit
// random metadata often: nested objects, lists (mixed, nested), numbers,
// strings that look like numbers, booleans, nulls, missing fields and keys
// holding dots (alone and beside the nested object of the same path).
var (
	mdKeys   = []string{"a", "b", "n", "s", "l", "a.b", "o", "x.y", "it's", `back\slash`}
	mdNested = []string{"b", "c", "k", "y"}
	mdScalar = []any{0.0, 1.0, 2.0, 10.0, -1.5, 0.1, 1e21, 2024.0, "1", "10", "2", "", "a", "B", "b", "é", "zz",
		"2024-05-01", "true", true, false, nil}
	fFields = []string{"a", "b", "n", "s", "l", "a.b", "a.b.c", "a.c", "o.k", "o.k.y", "x.y", "x", "missing",
		"it's", `back\slash`, "l.0", "a.0"}
	fValues = []any{0, 1, 2, 10, -1.5, 0.1, 1e21, 2024, "1", "10", "2", "", "a", "B", "b", "é", "zz",
		"2024-05-01", "true", true, false, "1\x00", "a\x00b"}
)

func randomScalar(r *rand.Rand) any { return mdScalar[r.IntN(len(mdScalar))] }

func randomValue(r *rand.Rand, depth int) any {
	switch k := r.IntN(10); {
	case k < 6 || depth > 2:
		return randomScalar(r)
	case k < 8:
		n := r.IntN(4)
		l := make([]any, n)
		for i := range l {
			if r.IntN(6) == 0 {
				l[i] = randomValue(r, depth+1)
			} else {
				l[i] = randomScalar(r)
			}
		}
		return l
	default:
		m := map[string]any{}
		for range 1 + r.IntN(3) {
			m[mdNested[r.IntN(len(mdNested))]] = randomValue(r, depth+1)
		}
		return m
	}
}

func randomMetadata(r *rand.Rand) map[string]any {
	md := map[string]any{}
	for range r.IntN(6) {
		md[mdKeys[r.IntN(len(mdKeys))]] = randomValue(r, 0)
	}
	if r.IntN(3) == 0 {
		// A key holding dots beside the nested object of the same path: the
		// key takes precedence (unless it is null).
		md["a.b"] = randomValue(r, 1)
		md["a"] = map[string]any{"b": randomValue(r, 1), "c": randomScalar(r)}
	}
	return md
}

func randomFilter(r *rand.Rand, depth int) map[string]any {
	if depth < 3 && r.IntN(4) == 0 {
		ops := []string{rag.OpAnd, rag.OpOr, rag.OpNot}
		op := ops[r.IntN(len(ops))]
		if op == rag.OpNot {
			return map[string]any{op: randomFilter(r, depth+1)}
		}
		list := make([]any, 1+r.IntN(3))
		for i := range list {
			list[i] = randomFilter(r, depth+1)
		}
		return map[string]any{op: list}
	}
	f := map[string]any{}
	for range 1 + r.IntN(2) {
		field := fFields[r.IntN(len(fFields))]
		val := func() any { return fValues[r.IntN(len(fValues))] }
		switch k := r.IntN(12); k {
		case 0:
			f[field] = val()
		case 1:
			f[field] = map[string]any{"$exists": r.IntN(2) == 0}
		case 2, 3:
			ops := map[string]any{}
			for range 1 + r.IntN(2) {
				ops[[]string{"$gt", "$gte", "$lt", "$lte"}[r.IntN(4)]] = val()
			}
			f[field] = ops
		case 4, 5:
			n := r.IntN(12) // over and under the in-list's threshold
			l := make([]any, n)
			for i := range l {
				l[i] = val()
			}
			f[field] = map[string]any{[]string{"$in", "$nin"}[r.IntN(2)]: l}
		default:
			f[field] = map[string]any{[]string{"$eq", "$ne"}[r.IntN(2)]: val()}
		}
	}
	return f
}

// TestFilterMatchesExpr is the differential test: for hundreds of seeded
// random filters over random metadata, the compiled SQL selects exactly the
// chunks Expr.Matches selects.
func TestFilterMatchesExpr(t *testing.T) {
	u := testDB(t)
	s := open(t, Options{DSN: u, Table: uniqueTable(t, u), Model: "m", Dimensions: 2})
	ctx := ctxT(t)
	r := rand.New(rand.NewPCG(32, 7))
	mds := map[string]map[string]any{}
	for d := range 40 {
		doc := fmt.Sprintf("doc%02d", d)
		var chunks []rag.Chunk
		var vecs [][]float32
		for i := range 10 {
			md := randomMetadata(r)
			c := chunk(doc, i, "text", md)
			mds[c.ID] = md
			chunks, vecs = append(chunks, c), append(vecs, []float32{1, float32(i)})
		}
		if err := s.Put(ctx, doc, "h", chunks, vecs); err != nil {
			t.Fatal(err)
		}
	}
	var nonEmpty, nonFull int
	const cases = 600
	for i := range cases {
		f := rag.Filter(randomFilter(r, 0))
		e, err := f.Parse()
		if err != nil {
			t.Fatalf("case %d: %s: %v", i, f, err)
		}
		var want []string
		for id, md := range mds {
			if e.Matches(md) {
				want = append(want, id)
			}
		}
		slices.Sort(want)
		cond, args, err := compileFilter(e, 0)
		if err != nil {
			t.Fatalf("case %d: %s: %v", i, f, err)
		}
		rows, err := s.pool.Query(ctx, "SELECT c.id FROM "+s.chunksT+" c WHERE "+cond+" ORDER BY c.id", args...)
		if err != nil {
			t.Fatalf("case %d: %s: %v\n%s", i, f, err, cond)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("case %d: %s: %v\n%s", i, f, err, cond)
		}
		if !slices.Equal(got, want) {
			var only []string
			for _, id := range got {
				if !slices.Contains(want, id) {
					only = append(only, fmt.Sprintf("SQL only %s %v", id, mds[id]))
				}
			}
			for _, id := range want {
				if !slices.Contains(got, id) {
					only = append(only, fmt.Sprintf("Matches only %s %v", id, mds[id]))
				}
			}
			t.Fatalf("case %d: %s: SQL selects %d chunks, Matches %d:\n%s\n%s", i, f, len(got), len(want), strings.Join(only[:min(5, len(only))], "\n"), cond)
		}
		if len(want) > 0 {
			nonEmpty++
		}
		if len(want) < len(mds) {
			nonFull++
		}
	}
	// The test means something only if the filters select varied sets.
	if nonEmpty < cases/4 || nonFull < cases/4 {
		t.Errorf("random filters too uniform: %d of %d select something, %d not everything", nonEmpty, cases, nonFull)
	}
}

// TestFilterTopK: under a selective filter (one chunk in 50, not a plain
// equality), both arms still return top_k hits, all of them matching.
func TestFilterTopK(t *testing.T) {
	u := testDB(t)
	s := open(t, Options{DSN: u, Table: uniqueTable(t, u), Model: "m", Dimensions: 8})
	ctx := ctxT(t)
	r := rand.New(rand.NewPCG(5, 6))
	for d := range 50 {
		doc := fmt.Sprintf("doc%02d", d)
		var chunks []rag.Chunk
		var vecs [][]float32
		for i := range 50 {
			md := map[string]any{"rank": d*50 + i, "tags": []any{fmt.Sprintf("t%d", i%7), "all"},
				"meta": map[string]any{"tier": []string{"gold", "silver", "bronze"}[i%3]}}
			chunks = append(chunks, chunk(doc, i, "alpha beta gamma "+strings.Repeat("delta ", i%5), md))
			vecs = append(vecs, randomVector(r, 8))
		}
		if err := s.Put(ctx, doc, "h", chunks, vecs); err != nil {
			t.Fatal(err)
		}
	}
	// rank % 50 is i: i in {0, 21} (t0, gold) → 2 per document; ranks ≥ 500 → 90 chunks.
	f := rag.Filter{"rank": map[string]any{"$gte": 500}, "tags": map[string]any{"$in": []any{"t0"}},
		"meta.tier": "gold", "$not": map[string]any{"tags": "none"}}
	e, err := f.Parse()
	if err != nil {
		t.Fatal(err)
	}
	const k = 20
	check := func(arm string, hits []rag.Hit, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", arm, err)
		}
		if len(hits) != k {
			t.Errorf("%s: %d hits, want %d", arm, len(hits), k)
		}
		for _, h := range hits {
			if !e.Matches(h.Chunk.Metadata) {
				t.Errorf("%s: hit %s (%v) outside the filter", arm, h.Chunk.ID, h.Chunk.Metadata)
			}
		}
	}
	hits, err := s.SearchVector(ctx, randomVector(r, 8), k, f)
	check("vector", hits, err)
	hits, err = s.SearchKeyword(ctx, "delta", k, f)
	check("keyword", hits, err)
}

// TestFilterHostile: field names and values with quotes, backslashes and SQL
// reach the server only as parameters; huge lists and deep nesting compile;
// what cannot be compiled is a clear error.
func TestFilterHostile(t *testing.T) {
	u := testDB(t)
	s := open(t, Options{DSN: u, Table: uniqueTable(t, u), Model: "m", Dimensions: 2})
	ctx := ctxT(t)
	hostile := []string{`x'); DROP TABLE ` + s.chunksT + `; --`, `"}' OR 1=1 --`, `a\'b`, `x$1`, `{a,b}`, `?|`, `\\`, `é'"`}
	var chunks []rag.Chunk
	var vecs [][]float32
	for i, h := range hostile {
		chunks = append(chunks, chunk("doc", i, "hostile text", map[string]any{h: h, "nest": map[string]any{h: i}}))
		vecs = append(vecs, []float32{1, float32(i)})
	}
	if err := s.Put(ctx, "doc", "h", chunks, vecs); err != nil {
		t.Fatal(err)
	}
	for i, h := range hostile {
		for _, f := range []rag.Filter{{h: h}, {h: map[string]any{"$gte": h, "$lte": h}}, {"nest." + h: i},
			{h: map[string]any{"$in": []any{h, "x"}}}} {
			e, err := f.Parse()
			if err != nil {
				t.Fatal(err)
			}
			cond, _, err := compileFilter(e, 0)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if strings.Contains(cond, h) || strings.Contains(cond, "DROP") {
				t.Errorf("%s: the field or value is in the SQL: %s", f, cond)
			}
			for _, search := range []func() ([]rag.Hit, error){
				func() ([]rag.Hit, error) { return s.SearchKeyword(ctx, "hostile", 10, f) },
				func() ([]rag.Hit, error) { return s.SearchVector(ctx, []float32{1, 0}, 10, f) },
			} {
				hits, err := search()
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				if len(hits) != 1 || hits[0].Chunk.Index != i {
					t.Errorf("%s: hits %v, want doc#%d", f, ids(hits), i)
				}
			}
		}
	}
	var n int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM "+s.chunksT).Scan(&n); err != nil || n != len(hostile) {
		t.Fatalf("the chunks table after hostile filters: %d rows, %v", n, err)
	}

	// A thousand values, sixteen levels: compiled and evaluated.
	in := make([]any, rag.MaxFilterList)
	for i := range in {
		in[i] = fmt.Sprint(i)
	}
	in[999] = hostile[3]
	deep := rag.Filter{hostile[3]: map[string]any{"$in": in}}
	for range rag.MaxFilterDepth - 1 {
		deep = rag.Filter{"$not": map[string]any{"$not": map[string]any(deep)}}
		if _, err := deep.Parse(); err != nil {
			deep = deep["$not"].(map[string]any)["$not"].(map[string]any)
			break
		}
	}
	if hits, err := s.SearchKeyword(ctx, "hostile", 10, deep); err != nil || len(hits) != 1 || hits[0].Chunk.Index != 3 {
		t.Errorf("deep filter with a 1,000-value $in: %v, %v", ids(hits), err)
	}

	// NUL in a value: stored text never holds one, so it equals nothing and
	// orders as its bytes do.
	for _, c := range []struct {
		f    rag.Filter
		want int
	}{
		{rag.Filter{hostile[2]: "a\\'b\x00"}, 0},
		{rag.Filter{hostile[2]: map[string]any{"$gt": "a\\'b\x00"}}, 0},
		{rag.Filter{hostile[2]: map[string]any{"$lt": "a\\'b\x00"}}, 1},
		{rag.Filter{hostile[2]: map[string]any{"$ne": "a\\'b\x00"}}, len(hostile)},
	} {
		if hits, err := s.SearchKeyword(ctx, "hostile", 10, c.f); err != nil || len(hits) != c.want {
			t.Errorf("%q: %v, %v; want %d hits", c.f, ids(hits), err, c.want)
		}
	}

	// Invalid UTF-8 cannot be sent as text: a clear error, from both arms.
	bad := rag.Filter{"k": "caf\xe9"}
	if _, err := s.SearchKeyword(ctx, "hostile", 10, bad); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("invalid UTF-8 value: %v", err)
	}
	if _, err := s.SearchVector(ctx, []float32{1, 0}, 10, bad); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("invalid UTF-8 value: %v", err)
	}
}

// TestCompileFilterRefusesMalformedExprs: an Expr not made by Parse is an
// error, never a panic.
func TestCompileFilterRefusesMalformedExprs(t *testing.T) {
	for name, e := range map[string]*rag.Expr{
		"unknown op":       {Op: "$regex", Field: "a", Path: []string{"a"}, Value: "x"},
		"not without kids": {Op: rag.OpNot},
		"and without kids": {Op: rag.OpAnd},
		"nil kid":          {Op: rag.OpOr, Kids: []*rag.Expr{nil, nil}},
		"no path":          {Op: rag.OpEq, Field: "a", Value: "x"},
		"odd value":        {Op: rag.OpEq, Field: "a", Path: []string{"a"}, Value: []int{1}},
		"exists non-bool":  {Op: rag.OpExists, Field: "a", Path: []string{"a"}, Value: "yes"},
		"nil value":        {Op: rag.OpGt, Field: "a", Path: []string{"a"}},
	} {
		if _, _, err := compileFilter(e, 0); err == nil {
			t.Errorf("%s: compiled", name)
		}
	}
	// Too many parameters for one statement.
	kids := make([]*rag.Expr, 0, 30000)
	for i := range 30000 {
		kids = append(kids, &rag.Expr{Op: rag.OpEq, Field: "a.b", Path: []string{"a", "b"}, Value: float64(i)})
	}
	if _, _, err := compileFilter(&rag.Expr{Op: rag.OpOr, Kids: kids}, 0); err == nil || !strings.Contains(err.Error(), "parameters") {
		t.Errorf("65,535 parameters: %v", err)
	}
}

// TestFilterUsesTheMetadataIndex: on 5,000 chunks, a selective equality (and
// a short $in, and either ANDed with a range) can be answered through the GIN
// index on metadata; ranges and long $in lists cannot. The plans and both
// arms' times are logged (go test -v).
func TestFilterUsesTheMetadataIndex(t *testing.T) {
	u := testDB(t)
	s := open(t, Options{DSN: u, Table: uniqueTable(t, u), Model: "m", Dimensions: 8})
	ctx := ctxT(t)
	r := rand.New(rand.NewPCG(8, 9))
	const docs, perDoc = 100, 50
	for d := range docs {
		doc := fmt.Sprintf("doc%03d", d)
		var chunks []rag.Chunk
		var vecs [][]float32
		for i := range perDoc {
			md := map[string]any{"tenant": fmt.Sprintf("t%d", d), "year": 2000 + i%25, "tags": []any{fmt.Sprintf("x%d", i%10), "common"},
				"author": map[string]any{"name": fmt.Sprintf("n%d", (d*perDoc+i)%400)}}
			chunks = append(chunks, chunk(doc, i, "alpha beta "+strings.Repeat("gamma ", i%4), md))
			vecs = append(vecs, randomVector(r, 8))
		}
		if err := s.Put(ctx, doc, "h", chunks, vecs); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.pool.Exec(ctx, "ANALYZE "+s.chunksT); err != nil {
		t.Fatal(err)
	}
	in := make([]any, 20)
	for i := range in {
		in[i] = fmt.Sprintf("n%d", i)
	}
	for _, c := range []struct {
		f     rag.Filter
		index bool // the plan must use the metadata index
	}{
		{rag.Filter{"tenant": "t7"}, true},
		{rag.Filter{"author.name": "n5"}, true},
		{rag.Filter{"tenant": map[string]any{"$in": []any{"t1", "t2"}}}, true},
		{rag.Filter{"tenant": "t7", "year": map[string]any{"$gte": 2020}, "tags": map[string]any{"$nin": []any{"x1"}}}, true},
		{rag.Filter{"author.name": map[string]any{"$in": in}}, false},
		{rag.Filter{"year": map[string]any{"$gt": 2023}}, false},
	} {
		cond, args, err := s.compileSearchFilter(c.f, 0)
		if err != nil {
			t.Fatal(err)
		}
		explain := func(seqscan bool) string {
			tx, err := s.pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			if !seqscan {
				if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
					t.Fatal(err)
				}
			}
			rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF) SELECT c.doc_id, c.idx FROM "+s.chunksT+" c WHERE "+cond, args...)
			if err != nil {
				t.Fatal(err)
			}
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			return strings.Join(lines, "\n")
		}
		t.Logf("%s, as planned:\n%s", c.f, explain(true))
		// At this size a sequential scan costs about a millisecond and the
		// planner may prefer it; without it, an indexable condition uses the index.
		if plan := explain(false); c.index != strings.Contains(plan, "_chunks_metadata_idx") {
			t.Errorf("%s: metadata index used %v, want %v:\n%s", c.f, !c.index, c.index, plan)
		} else if c.index {
			t.Logf("without sequential scans:\n%s", plan)
		}
		for _, arm := range []func() ([]rag.Hit, error){
			func() ([]rag.Hit, error) { return s.SearchKeyword(ctx, "gamma", 10, c.f) },
			func() ([]rag.Hit, error) { return s.SearchVector(ctx, randomVector(r, 8), 10, c.f) },
		} {
			start := time.Now()
			hits, err := arm()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("  %d hits in %v", len(hits), time.Since(start))
		}
	}
}
