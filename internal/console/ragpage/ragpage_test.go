package ragpage_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/console"
	"github.com/arvenza/helix/internal/console/ragpage"
	"github.com/arvenza/helix/internal/rag"
)

type fakeSource struct {
	pipelines []ragpage.Pipeline
	arms      rag.Arms
	err       error

	mu       sync.Mutex
	asked    []string
	k        int
	filter   rag.Filter
	deadline time.Duration
}

func (f *fakeSource) Pipelines(context.Context) []ragpage.Pipeline { return f.pipelines }

func (f *fakeSource) Count(_ context.Context, id string) (rag.Stats, error) {
	if id == "broken" {
		return rag.Stats{}, errors.New("store closed")
	}
	return rag.Stats{Documents: 3, Chunks: 7}, nil
}

func (f *fakeSource) Arms(ctx context.Context, id, query string, k int, filter rag.Filter) (rag.Arms, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, query)
	f.k, f.filter = k, filter
	if dl, ok := ctx.Deadline(); ok {
		f.deadline = time.Until(dl)
	}
	return f.arms, true, f.err
}

func hit(id, text string, score float64) rag.Hit {
	return rag.Hit{Chunk: rag.Chunk{ID: id, DocID: id, Text: text, Title: "T " + id, Headings: []string{"H " + id},
		Metadata: map[string]any{"source": id + ".md"}}, Score: score}
}

func serve(t *testing.T, src ragpage.Source) *httptest.Server {
	t.Helper()
	m := console.NewMux(console.Options{Pages: []console.Page{ragpage.New(src)},
		Auth: console.AuthenticatorFunc(func(*http.Request) (console.Principal, error) {
			return console.Principal{Name: "ann", Role: console.RoleViewer}, nil
		})})
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The list shows each pipeline's store, counts, embedder and counters, and
// links to its playground; a store that cannot count says why.
func TestListShowsPipelines(t *testing.T) {
	t.Parallel()
	src := &fakeSource{pipelines: []ragpage.Pipeline{
		{ID: "docs", Store: "embedded", Embedder: "openai text-embedding-3-small", Strategy: "hybrid", Ingested: 12, Queries: 5, QueryErrors: 1},
		{ID: "broken", Store: "pgvector", Strategy: "keyword"},
	}}
	srv := serve(t, src)
	code, body := get(t, srv.URL+"/console/rag")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	for _, want := range []string{`href="/console/rag/docs"`, "openai text-embedding-3-small", `<td class="num">3</td><td class="num">7</td>`,
		"unknown: store closed", "none (keyword only)", "Showing 2 of 2 pipelines", `<td class="num">12</td>`} {
		if !strings.Contains(body, want) {
			t.Errorf("list has no %q", want)
		}
	}
}

// Many pipelines are paginated, with "showing N of M" and stable page links.
func TestListIsPaginated(t *testing.T) {
	t.Parallel()
	src := &fakeSource{}
	for i := range ragpage.PageSize*2 + 3 {
		src.pipelines = append(src.pipelines, ragpage.Pipeline{ID: fmt.Sprintf("p%03d", i), Store: "embedded", Strategy: "keyword"})
	}
	srv := serve(t, src)
	_, body := get(t, srv.URL+"/console/rag")
	if !strings.Contains(body, fmt.Sprintf("Showing %d of %d", ragpage.PageSize, len(src.pipelines))) || strings.Contains(body, "p050") ||
		!strings.Contains(body, `href="/console/rag?page=1"`) {
		t.Errorf("first page: %s", body)
	}
	_, body = get(t, srv.URL+"/console/rag?page=2")
	if !strings.Contains(body, "Showing 3 of") || !strings.Contains(body, "p102") || !strings.Contains(body, `rel="prev"`) {
		t.Errorf("last page: %s", body)
	}
	for _, bad := range []string{"3", "-1", "x", "99999999999999999999"} {
		if code, body := get(t, srv.URL+"/console/rag?page="+url.QueryEscape(bad)); code != 400 || !strings.Contains(body, "use a page number from 0 to 2") {
			t.Errorf("page=%s: %d %s", bad, code, body)
		}
	}
}

// A query shows the three rankings side by side, each passage with its rank
// in the others; the arms are cut to k.
func TestPlaygroundShowsThreeRankings(t *testing.T) {
	t.Parallel()
	a, b, c := hit("a", "alpha text", 2.5), hit("b", "beta text", 1.5), hit("c", "gamma text", 0.5)
	src := &fakeSource{pipelines: []ragpage.Pipeline{{ID: "docs", Store: "embedded", Embedder: "test", Strategy: "hybrid"}},
		arms: rag.Arms{Keyword: []rag.Hit{a, b, c}, Vector: []rag.Hit{c, a}, HasVector: true, Fused: rag.FuseRRF(2, []rag.Hit{c, a}, []rag.Hit{a, b, c})}}
	srv := serve(t, src)
	code, body := get(t, srv.URL+"/console/rag/docs?q=alpha&k=2")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	if src.k != 2 || src.deadline <= 0 || src.deadline > ragpage.QueryTimeout {
		t.Errorf("asked k=%d with deadline in %v", src.k, src.deadline)
	}
	for _, want := range []string{`id="arm-keyword"`, `id="arm-vector"`, `id="arm-fused"`, "Showing 2 of 3.", "Showing 2 of 2.",
		"keyword #1 · vector #2 · fused #1", "keyword #3 · vector #1 · fused #2", "a.md", "T a</strong> › H a", "score 2.5000"} {
		if !strings.Contains(body, want) {
			t.Errorf("playground has no %q", want)
		}
	}
	if n := strings.Count(body, "data-chunk="); n != 6 {
		t.Errorf("%d passages shown, want k=2 in each of 3 rankings", n)
	}
}

// A pipeline without a vector arm shows the keyword arm only, and says why.
func TestPlaygroundKeywordOnly(t *testing.T) {
	t.Parallel()
	src := &fakeSource{pipelines: []ragpage.Pipeline{{ID: "kw", Store: "embedded", Strategy: "keyword"}},
		arms: rag.Arms{Keyword: []rag.Hit{hit("a", "alpha", 1)}}}
	srv := serve(t, src)
	_, body := get(t, srv.URL+"/console/rag/kw?q=alpha")
	if !strings.Contains(body, `id="arm-keyword"`) || strings.Contains(body, `id="arm-vector"`) || strings.Contains(body, `id="arm-fused"`) ||
		!strings.Contains(body, "no rag-embed step") || strings.Contains(body, "vector not ranked") {
		t.Errorf("keyword only: %s", body)
	}
}

// Hostile and out-of-bound input is refused with what and how to fix it,
// never run, never echoed unescaped, never a panic.
func TestPlaygroundBoundsAndHostileInput(t *testing.T) {
	t.Parallel()
	src := &fakeSource{pipelines: []ragpage.Pipeline{{ID: "docs", Store: "embedded", Embedder: "test", Strategy: "hybrid"}}}
	srv := serve(t, src)
	for _, c := range []struct {
		query string
		code  int
		want  string
	}{
		{"q=x&k=0", 400, "show from 1 to 50 passages"},
		{"q=x&k=51", 400, "show from 1 to 50 passages"},
		{"q=x&k=" + url.QueryEscape("<b>9</b>"), 400, "&lt;b&gt;9&lt;/b&gt;"},
		{"q=" + strings.Repeat("a", ragpage.MaxQueryBytes+1), 400, "at most 1000 bytes"},
		{"q=%ff%fe", 400, "not valid UTF-8"},
		{"q=" + url.QueryEscape(`"><script>alert(1)</script>`), 200, `value="&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"`},
		{"q=%20%20", 200, `id="rag-q"`},
	} {
		code, body := get(t, srv.URL+"/console/rag/docs?"+c.query)
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("%.60s: %d, want %d and %q in %s", c.query, code, c.code, c.want, body)
		}
		if strings.Contains(body, "<script>alert") {
			t.Errorf("%.60s: the query is echoed unescaped", c.query)
		}
	}
	src.mu.Lock()
	if len(src.asked) != 1 { // only the script-like query is a query to run
		t.Errorf("ran %d queries: %q", len(src.asked), src.asked)
	}
	src.mu.Unlock()

	if code, body := get(t, srv.URL+"/console/rag/"+url.PathEscape("<img src=x>")); code != 404 || !strings.Contains(body, "no pipeline &#34;&lt;img src=x&gt;&#34;") {
		t.Errorf("unknown pipeline: %d %s", code, body)
	}
}

// A failing or slow query is a page that says so, with no secret in it.
func TestPlaygroundQueryErrors(t *testing.T) {
	t.Parallel()
	src := &fakeSource{pipelines: []ragpage.Pipeline{{ID: "docs", Store: "pgvector", Strategy: "hybrid", Embedder: "openai m"}},
		err: errors.New(`embed the query: Post "https://api.example.com/v1?key=s3cr3t": 500`)}
	srv := serve(t, src)
	code, body := get(t, srv.URL+"/console/rag/docs?q=x")
	if code != http.StatusBadGateway || !strings.Contains(body, "the query failed: embed the query") || strings.Contains(body, "s3cr3t") {
		t.Errorf("failing query: %d %s", code, body)
	}
	src.err = fmt.Errorf("embed: %w", context.DeadlineExceeded)
	code, body = get(t, srv.URL+"/console/rag/docs?q=x")
	if code != http.StatusGatewayTimeout || !strings.Contains(body, "took longer than 10s") {
		t.Errorf("slow query: %d %s", code, body)
	}
}

// The playground takes a metadata filter (JSON) and passes it on; a filter
// that cannot be used is a 400 that says what is wrong where, never run, never
// echoed unescaped.
func TestPlaygroundFilter(t *testing.T) {
	t.Parallel()
	src := &fakeSource{pipelines: []ragpage.Pipeline{{ID: "docs", Store: "embedded", Strategy: "keyword"}},
		arms: rag.Arms{Keyword: []rag.Hit{hit("a", "alpha", 1)}}}
	srv := serve(t, src)
	code, body := get(t, srv.URL+"/console/rag/docs?q=alpha&filter="+url.QueryEscape(`{"lang": "en", "year": {"$gte": 2023}}`))
	src.mu.Lock()
	got := src.filter.String()
	src.mu.Unlock()
	if code != 200 || got != `{"lang":"en","year":{"$gte":2023}}` || !strings.Contains(body, `id="rag-filter"`) ||
		!strings.Contains(body, `value="{&#34;lang&#34;: &#34;en&#34;`) {
		t.Errorf("filter: %d, passed %s\n%s", code, got, body)
	}
	for _, c := range []struct{ filter, want string }{
		{`{"year": {"$gte": [1]}}`, "the filter cannot be used: filter.year.$gte: want a string, number or boolean, not a list"},
		{`{"x": {"$where": "1"}}`, `unknown operator &#34;$where&#34;`},
		{`not json`, "the filter is not JSON"},
		{`["a"]`, "the filter must be a JSON object"},
		{`{"<script>alert(1)</script>": {"$bad": 1}}`, "unknown operator"},
		{strings.Repeat(" ", ragpage.MaxFilterBytes) + "{}", "at most 4000 bytes"},
	} {
		code, body := get(t, srv.URL+"/console/rag/docs?q=alpha&filter="+url.QueryEscape(c.filter))
		if code != 400 || !strings.Contains(body, c.want) || strings.Contains(body, "<script>alert") {
			t.Errorf("filter %.40q: %d, want 400 and %q in %s", c.filter, code, c.want, body)
		}
	}
	src.mu.Lock()
	if len(src.asked) != 1 {
		t.Errorf("ran %d queries, want only the one with a good filter", len(src.asked))
	}
	src.mu.Unlock()
}
