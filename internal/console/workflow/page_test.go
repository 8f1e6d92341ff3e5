package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/console"
	"github.com/arvenza/helix/internal/console/stepstats"
)

// testSource is the Source pkg/app builds, over a document in memory.
type testSource struct {
	graphs []*Graph
	files  *Files
	stats  *stepstats.Stats
}

func newTestSource(t testing.TB, name, text string) *testSource {
	t.Helper()
	cfg, err := config.LoadBytes(name, []byte(text))
	if cfg == nil {
		t.Fatalf("load: %v", err)
	}
	files := FilesFromBytes(map[string][]byte{name: []byte(text)})
	gs := Build(cfg, files)
	defs := make([]stepstats.Def, len(gs))
	for i, g := range gs {
		defs[i] = stepstats.Def{Kind: g.Kind, ID: g.ID, Steps: len(g.Steps), Nested: g.NestedPositions()}
	}
	return &testSource{graphs: gs, files: files, stats: stepstats.New(defs)}
}

func (s *testSource) Graphs() []*Graph { return s.graphs }
func (s *testSource) Counts(kind, id string) (stepstats.Snapshot, bool) {
	return s.stats.Get(kind, id)
}
func (s *testSource) YAML(p config.Pos) (string, bool, bool) { return s.files.Snippet(p) }

// run passes n exchanges through the tracer as the engine would, the last
// failing errs of them at step failAt.
func (s *testSource) run(kind, id string, steps, n, errs, failAt int) {
	for i := 0; i < n; i++ {
		ctx, end := s.stats.StartExchange(context.Background(), kind, id, "", nil)
		var err error
		for st := 0; st < steps; st++ {
			_, e := s.stats.StartStep(ctx, "", st, nil)
			if i >= n-errs && st == failAt {
				err = errors.New("boom")
				e(err)
				break
			}
			e(nil)
		}
		end(err)
	}
}

// serve mounts the page on a console mux with a test authenticator: a
// request without "Authorization: Bearer viewer" is refused.
func serve(t testing.TB, src Source) *httptest.Server {
	t.Helper()
	auth := console.AuthenticatorFunc(func(r *http.Request) (console.Principal, error) {
		if r.Header.Get("Authorization") != "Bearer viewer" {
			if c, err := r.Cookie("test"); err != nil || c.Value != "viewer" {
				return console.Principal{}, errors.New("no credentials")
			}
		}
		return console.Principal{Name: "tester", Role: console.RoleViewer}, nil
	})
	m := console.NewMux(console.Options{Auth: auth, Pages: []console.Page{*NewPage(src)}})
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	return srv
}

func fetchPage(t testing.TB, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer viewer")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestDetailDrawsTheGraphWithCounts(t *testing.T) {
	t.Parallel()
	src := newTestSource(t, "b.yaml", branchy)
	src.run("workflow", "router", 4, 7, 2, 3)
	srv := serve(t, src)
	code, body := fetchPage(t, srv, "/console/workflows/router")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	for _, want := range []string{
		"<svg", `aria-label="step 1: choice 3 branches, at b.yaml:11:9, 7 runs · 0 errors · p99`,
		`aria-label="step 4: frobnicate, at b.yaml:32:9, 7 runs · 2 errors · p99`,
		`aria-label="trigger direct://in, at`, "7 runs · 2 errors",
		"when payload[&#34;amount&#34;] &gt;= 1000", // the edge label, escaped
		"otherwise", "branch 2 (parallel)", "for each element", "when a step fails",
		"redeliveries: 3", "dead letter", "answers status 503",
		`href="/console/workflows/dead"`, // the target's and dead letter's link
		`aria-label="log item, at b.yaml:31:15, no runs yet"`, `data-counts-url="/console/workflows/router/counts"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, `id="detail"`) {
		t.Error("a node detail without ?node=")
	}
}

// Nested steps (a split's, a choice branch's) are counted by their position,
// on the page and in the live JSON, each apart from the others.
func TestNestedNodesShowTheirOwnCounts(t *testing.T) {
	t.Parallel()
	src := newTestSource(t, "b.yaml", branchy)
	ctx, end := src.stats.StartExchange(context.Background(), "workflow", "router", "", nil)
	for i := 0; i < 3; i++ { // the split's log over three elements, the last failing
		_, e := src.stats.StartNestedStep(ctx, "b.yaml:31:15 log", nil)
		if i == 2 {
			e(errors.New("boom"))
		} else {
			e(nil)
		}
	}
	_, e := src.stats.StartNestedStep(ctx, "b.yaml:22:17 log", nil) // otherwise's log
	e(nil)
	end(nil)
	srv := serve(t, src)
	_, body := fetchPage(t, srv, "/console/workflows/router")
	for _, want := range []string{
		`aria-label="log item, at b.yaml:31:15, 3 runs · 1 error · p99 `,
		`aria-label="log other, at b.yaml:22:17, 1 run · 0 errors · p99 `,
		`aria-label="log big, at b.yaml:15:19, no runs yet"`,
		`aria-label="log one, at b.yaml:26:15, no runs yet"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, "not counted") {
		t.Error("a node of a counted workflow says it is not counted")
	}
	var item, other int = -1, -1
	for _, n := range src.graphs[0].Nodes {
		switch n.Pos.String() {
		case "b.yaml:31:15":
			item = n.N
		case "b.yaml:22:17":
			other = n.N
		}
	}
	_, js := fetchPage(t, srv, "/console/workflows/router/counts")
	var got countsJSON
	if err := json.Unmarshal([]byte(js), &got); err != nil {
		t.Fatalf("%v: %s", err, js)
	}
	if c := got.Nested[fmt.Sprint(item)]; c.Count != 3 || c.Errors != 1 || !strings.HasPrefix(c.Text, "3 runs · 1 error") {
		t.Errorf("nested[%d] (the split's log) = %+v", item, c)
	}
	if c := got.Nested[fmt.Sprint(other)]; c.Count != 1 || c.Errors != 0 {
		t.Errorf("nested[%d] (otherwise's log) = %+v", other, c)
	}
	if len(got.Nested) != len(src.graphs[0].NestedPositions()) {
		t.Errorf("nested has %d entries, want one per nested step (%d): %s", len(got.Nested), len(src.graphs[0].NestedPositions()), js)
	}
}

func TestNodeDetailShowsYAMLAsWrittenNeverTheSecret(t *testing.T) {
	const secret = "graph-page-secret-8d1f0a"
	t.Setenv("GRAPH_PAGE_SECRET", secret)
	text := "workflows:\n  - id: call\n    trigger: direct://call?token=${env:GRAPH_PAGE_SECRET}\n    steps:\n      - target:\n          uri: http://127.0.0.1:1/x?key=${env:GRAPH_PAGE_SECRET}\n      - log: \"${env:GRAPH_PAGE_SECRET}\"\n"
	src := newTestSource(t, "secret.yaml", text)
	srv := serve(t, src)
	var all strings.Builder
	for n := range src.graphs[0].Nodes {
		code, body := fetchPage(t, srv, fmt.Sprintf("/console/workflows/call?node=%d", n))
		if code != 200 {
			t.Fatalf("node %d: %d %s", n, code, body)
		}
		all.WriteString(body)
	}
	_, list := fetchPage(t, srv, "/console/workflows")
	_, js := fetchPage(t, srv, "/console/workflows/call/counts")
	all.WriteString(list + js)
	if strings.Contains(all.String(), secret) {
		t.Fatal("a page shows the resolved ${env:GRAPH_PAGE_SECRET}")
	}
	_, body := fetchPage(t, srv, "/console/workflows/call?node=1")
	if !strings.Contains(body, `id="node-where">secret.yaml:5:9<`) {
		t.Errorf("no file:line of the node:\n%s", body)
	}
	if !strings.Contains(body, "- target:\n    uri: http://127.0.0.1:1/x?key=${env:GRAPH_PAGE_SECRET}</pre>") {
		t.Errorf("the YAML is not shown as written:\n%s", body)
	}
	_, body = fetchPage(t, srv, "/console/workflows/call?node=2")
	if !strings.Contains(body, `- log: &#34;${env:GRAPH_PAGE_SECRET}&#34;</pre>`) {
		t.Errorf("log step YAML:\n%s", body)
	}
}

func TestBadRequestsSayWhat(t *testing.T) {
	t.Parallel()
	src := newTestSource(t, "b.yaml", branchy)
	srv := serve(t, src)
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/console/workflows/nope", 404, `no workflow, tool, agent or pipeline "nope"`},
		{"/console/workflows/router?node=999", 404, "router has nodes 0 to"},
		{"/console/workflows/router?node=-1", 404, "pick one on its graph"},
		{"/console/workflows/router?node=" + url.QueryEscape(strings.Repeat("<x>", 100)), 404, "…"},
		{"/console/workflows/router?kind=tool", 404, `(kind "tool")`},
		{"/console/workflows/nope/counts", 404, `"error":"no workflow \"nope\""`},
	} {
		code, body := fetchPage(t, srv, tc.path)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %q, want %d with %q", tc.path, code, body, tc.code, tc.want)
		}
	}
	// An error echoes what was asked as plain text, never as HTML.
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/console/workflows/router?node=%3Cscript%3E", nil)
	req.Header.Set("Authorization", "Bearer viewer")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("error page served as %q", ct)
	}
	// Unauthenticated: 401 before any page.
	resp, err = http.Get(srv.URL + "/console/workflows/router")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("unauthenticated: %d", resp.StatusCode)
	}
}

func TestCountsEndpoint(t *testing.T) {
	t.Parallel()
	src := newTestSource(t, "b.yaml", branchy)
	srv := serve(t, src)
	src.run("workflow", "router", 4, 5, 1, 1)
	code, body := fetchPage(t, srv, "/console/workflows/router/counts")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var c countsJSON
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		t.Fatal(err)
	}
	if c.Exchange.Count != 5 || c.Exchange.Errors != 1 || len(c.Steps) != 4 || c.Steps[1].Errors != 1 || c.Steps[2].Count != 4 {
		t.Fatalf("counts = %+v", c)
	}
	if c.Steps[1].Text != "5 runs · 1 error · p99 "+c.Steps[1].P99 {
		t.Errorf("text = %q", c.Steps[1].Text)
	}
}

// A thousand workflows: the list shows a page of them, says how many, and
// filters on the server.
func TestListIsPaginatedAndFiltered(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("workflows:\n")
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&b, "  - id: wf-%04d\n    trigger: direct://in-%04d\n    steps:\n      - log: x\n", i, i)
	}
	src := newTestSource(t, "many.yaml", b.String())
	src.run("workflow", "wf-0007", 1, 3, 1, 0)
	srv := serve(t, src)
	_, body := fetchPage(t, srv, "/console/workflows")
	if !strings.Contains(body, "Showing 1–50 of 1000.") || strings.Count(body, "<tr>") != 51 {
		t.Errorf("first page: showing %q, %d rows", between(body, `id="wf-showing">`, "<"), strings.Count(body, "<tr>")-1)
	}
	if !strings.Contains(body, `href="/console/workflows?page=2" rel="next"`) {
		t.Error("no link to the next page")
	}
	if !strings.Contains(body, `<span class="bad">1 errors</span>`) && !strings.Contains(body, `1 errors`) {
		t.Error("wf-0007's error is not shown")
	}
	_, body = fetchPage(t, srv, "/console/workflows?page=20")
	if !strings.Contains(body, "Showing 951–1000 of 1000.") || strings.Contains(body, `rel="next"`) {
		t.Errorf("last page: %q", between(body, `id="wf-showing">`, "<"))
	}
	for _, hostile := range []string{"?page=99999", "?page=-3", "?page=abc", "?q=" + url.QueryEscape(strings.Repeat("é", 5000))} {
		if code, _ := fetchPage(t, srv, "/console/workflows"+hostile); code != 200 {
			t.Errorf("%s: %d", hostile, code)
		}
	}
	_, body = fetchPage(t, srv, "/console/workflows?q=in-099")
	if !strings.Contains(body, "Showing 1–10 of 10 (1000 in all).") || !strings.Contains(body, "wf-0990") || strings.Contains(body, "wf-0007") {
		t.Errorf("filter: %q", between(body, `id="wf-showing">`, "<"))
	}
	_, body = fetchPage(t, srv, "/console/workflows?q="+url.QueryEscape(`"><script>`))
	if strings.Contains(body, `"><script>`) || !strings.Contains(body, "No match") {
		t.Error("the filter is echoed unescaped, or matched")
	}
}

func between(s, a, b string) string {
	i := strings.Index(s, a)
	if i < 0 {
		return ""
	}
	s = s[i+len(a):]
	if j := strings.Index(s, b); j >= 0 {
		return s[:j]
	}
	return s
}

func BenchmarkDetailPage(b *testing.B) {
	src := newTestSource(b, "b.yaml", branchy)
	srv := serve(b, src)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fetchPage(b, srv, "/console/workflows/router?node=3")
	}
}

// The list of a thousand workflows, filtered, as the console renders it.
func BenchmarkListPageOfAThousand(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("workflows:\n")
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&sb, "  - id: wf-%04d\n    trigger: direct://in-%04d\n    steps:\n      - log: x\n      - target: direct://in-%04d\n", i, i, (i+1)%1000)
	}
	src := newTestSource(b, "many.yaml", sb.String())
	srv := serve(b, src)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fetchPage(b, srv, "/console/workflows?q=wf-0&page=3")
	}
}
