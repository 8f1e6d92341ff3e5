package overview

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/console"
)

type fakeSource struct{ rows []Row }

func (f *fakeSource) Rows() []Row { return append([]Row(nil), f.rows...) }

func TestRatesAndRecentErrorsOverTheWindow(t *testing.T) {
	t.Parallel()
	src := &fakeSource{rows: []Row{{Kind: KindWorkflow, ID: "w", State: "running", Count: 100, Errors: 1, HasCount: true},
		{Kind: KindConnector, ID: "direct", State: "in use"}}}
	o := New(src, nil)
	now := time.Unix(1000, 0)
	o.now = func() time.Time { return now }
	m := console.NewMux(console.Options{})
	// Before any sample: no rate yet, and it says so.
	if s := o.data(m, nil); s[0].Rows[0].Rate != "—" {
		t.Fatalf("rate without a sample: %q", s[0].Rows[0].Rate)
	}
	o.Sample()
	now = now.Add(10 * time.Second)
	src.rows[0].Count, src.rows[0].Errors = 120, 4
	s := o.data(m, nil)
	w := s[0].Rows[0]
	if w.Rate != "2.0" || w.RecentErrors != "3" || w.Total != "120" || w.State != "running, failing" || w.Link != "" {
		t.Fatalf("workflow row %+v", w)
	}
	if c := s[1].Rows[0]; c.Rate != "—" || c.RecentErrors != "—" || c.State != "in use" {
		t.Fatalf("connector row %+v", c)
	}
	// A sample older than the window is not used.
	now = now.Add(2 * Window)
	if s := o.data(m, nil); s[0].Rows[0].Rate != "—" {
		t.Fatalf("rate from a sample older than the window: %q", s[0].Rows[0].Rate)
	}
}

func TestRingOfSamplesIsBounded(t *testing.T) {
	t.Parallel()
	o := New(&fakeSource{rows: []Row{{Kind: KindWorkflow, ID: "w", HasCount: true}}}, nil)
	for i := 0; i < 3*ringSize; i++ {
		o.Sample()
	}
	if len(o.samples) != ringSize {
		t.Fatalf("%d samples kept, want %d", len(o.samples), ringSize)
	}
}

func TestSectionsArePagedBusiestFirst(t *testing.T) {
	t.Parallel()
	src := &fakeSource{}
	for i := 0; i < 250; i++ {
		src.rows = append(src.rows, Row{Kind: KindWorkflow, ID: fmt.Sprintf("w%03d", i), Count: uint64(i), HasCount: true, Link: "/workflows/" + fmt.Sprint(i)})
	}
	src.rows = append(src.rows, Row{Kind: KindAgent, ID: "a", HasCount: true})
	lat := NewLatency()
	_, end := lat.StartExchange(context.Background(), "workflow", "w000", "", nil)
	end(nil)
	o := New(src, lat)
	m := console.NewMux(console.Options{})
	s := o.data(m, nil)
	if len(s) != 2 || s[0].Shown != PageSize || s[0].Total != 250 || s[0].Rows[0].ID != "w249" || s[0].Prev != "" ||
		s[0].Next != "/console/?kind=workflow&page=1" || s[0].Rows[0].Link != "/console/workflows/249" {
		t.Fatalf("first page: %+v", s[0])
	}
	last := o.data(m, url.Values{"kind": {"workflow"}, "page": {"2"}})
	if len(last) != 1 || last[0].Shown != 50 || last[0].Next != "" || last[0].Rows[49].ID != "w000" {
		t.Fatalf("last page: %+v", last)
	}
	// A row on a later page gets its console link and its latency as on the
	// first (they are computed for the rows shown only).
	if r := last[0].Rows[49]; r.Link != "/console/workflows/0" || r.P50 == "—" || r.P99 == "—" || last[0].Rows[0].P50 != "—" {
		t.Fatalf("last page's rows: %+v", last[0].Rows)
	}
	// Hostile page numbers are clamped, an unknown kind shows nothing.
	for _, p := range []string{"-5", "99999999999999999999", "x"} {
		if s := o.data(m, url.Values{"kind": {"workflow"}, "page": {p}}); len(s) != 1 || s[0].Shown == 0 {
			t.Errorf("page %q: %+v", p, s)
		}
	}
	if s := o.data(m, url.Values{"kind": {"<script>"}}); len(s) != 0 {
		t.Errorf("unknown kind: %+v", s)
	}
}

// The page renders inside the frame with the rows and a live endpoint; a
// hostile query string stays text.
func TestPageRenders(t *testing.T) {
	t.Parallel()
	src := &fakeSource{rows: []Row{{Kind: KindWorkflow, ID: `<img src=x onerror=alert(1)>`, State: "running", HasCount: true}}}
	o := New(src, NewLatency())
	m := console.NewMux(console.Options{Pages: []console.Page{o.Page()},
		Auth: console.AuthenticatorFunc(func(*http.Request) (console.Principal, error) { return console.Principal{Name: "t"}, nil })})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", `/console/?kind=workflow&x="><script>`, nil))
	body := rec.Body.String()
	if rec.Code != 200 || strings.Contains(body, "<img src=x") || strings.Contains(body, `"><script>`) ||
		!strings.Contains(body, "&lt;img src=x") || !strings.Contains(body, `data-live="/console/overview.json?kind=workflow`) {
		t.Fatalf("%d %s", rec.Code, body)
	}
}
