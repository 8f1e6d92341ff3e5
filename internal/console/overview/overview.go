// Package overview is the console's first page: every workflow, MCP server,
// agent, pipeline and connector of the application with its health, rate,
// errors and latency, read from the counters /metrics reads (the engine's
// Stats and the MCP, agent and RAG counters of the management snapshot) and
// from the exchange durations of [Latency].
package overview

import (
	"cmp"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/arvenza/helix/internal/console"
)

// Kind is what a row is.
type Kind string

// The kinds, in the order the page shows them.
const (
	KindWorkflow  Kind = "workflow"
	KindMCP       Kind = "mcp-server"
	KindAgent     Kind = "agent"
	KindPipeline  Kind = "pipeline"
	KindConnector Kind = "connector"
)

var kinds = []struct {
	Kind  Kind
	Title string
}{{KindWorkflow, "Workflows and tools"}, {KindMCP, "MCP servers"}, {KindAgent, "Agents"}, {KindPipeline, "RAG pipelines"}, {KindConnector, "Connectors"}}

// Row is one thing the application runs, with its counters since start.
type Row struct {
	Kind Kind
	ID   string
	// State is its health in a word ("running", "stopped", "in use").
	State string
	// Count and Errors are totals since start (exchanges, calls, runs,
	// queries); HasCount is false for rows without counters (connectors).
	Count, Errors uint64
	HasCount      bool
	// Detail is a short note ("tool", "http", "used by 3 workflows").
	Detail string
	// Link is the console page of the row ("/workflows/orders"), "" for none.
	Link string
}

// Source is what the page reads the application through (pkg/app).
type Source interface {
	Rows() []Row
}

// SourceFunc adapts a function to Source.
type SourceFunc func() []Row

// Rows calls f.
func (f SourceFunc) Rows() []Row { return f() }

// Window is the span rates and recent errors are computed over.
const Window = time.Minute

// sampleEvery is how often the sampler keeps the counters; a ring of
// Window/sampleEvery+1 samples spans the window.
const sampleEvery = 5 * time.Second

// Overview is the page's state: the counter samples rates come from.
type Overview struct {
	src     Source
	latency *Latency
	now     func() time.Time

	mu      sync.Mutex
	samples []sample // oldest first, at most ringSize
}

type sample struct {
	at     time.Time
	counts map[string][2]uint64 // kind/id → count, errors
}

const ringSize = int(Window/sampleEvery) + 1

// New returns the overview of src; latency may be nil (no p50/p99).
func New(src Source, latency *Latency) *Overview {
	return &Overview{src: src, latency: latency, now: time.Now}
}

// Run samples the counters every few seconds and rotates the latency
// window until stop is closed: the rates and percentiles of the last minute
// exist before anyone opens the page.
func (o *Overview) Run(stop <-chan struct{}) {
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	rotate := 0
	o.Sample()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			o.Sample()
			if rotate++; rotate*int(sampleEvery) >= int(Window/2) && o.latency != nil {
				rotate = 0
				o.latency.Rotate()
			}
		}
	}
}

// Sample keeps the current counters.
func (o *Overview) Sample() { o.sampleRows(o.src.Rows()) }

func (o *Overview) sampleRows(rows []Row) {
	s := sample{at: o.now(), counts: make(map[string][2]uint64, len(rows))}
	for _, r := range rows {
		if r.HasCount {
			s.counts[string(r.Kind)+"/"+r.ID] = [2]uint64{r.Count, r.Errors}
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.samples) == ringSize {
		copy(o.samples, o.samples[1:])
		o.samples = o.samples[:ringSize-1]
	}
	o.samples = append(o.samples, s)
}

// View is one row as the page shows it.
type View struct {
	Kind                 Kind   `json:"kind"`
	ID                   string `json:"id"`
	Key                  string `json:"key"`
	State                string `json:"state"`
	Detail               string `json:"detail,omitempty"`
	Link                 string `json:"link,omitempty"`
	Rate                 string `json:"rate"`
	Total                string `json:"total"`
	Errors               string `json:"errors"`
	RecentErrors         string `json:"recent_errors"`
	P50                  string `json:"p50"`
	P99                  string `json:"p99"`
	rate                 float64
	total                uint64
	hasCount, hasLatency bool
}

// Section is the rows of one kind, capped.
type Section struct {
	Kind         Kind   `json:"kind"`
	Title        string `json:"title"`
	Rows         []View `json:"rows"`
	Shown, Total int
	// Page, Prev and Next page through a section with more rows than a page.
	Page       int    `json:"-"`
	Prev, Next string `json:"-"`
	// Latency says whether the section has p50/p99 columns.
	Latency bool `json:"-"`
}

// PageSize is the most rows a section shows at once.
const PageSize = 100

// data computes the sections: rates over the window from the oldest sample
// in it to now (a fresh sample), busiest first.
func (o *Overview) data(m *console.Mux, q url.Values) []Section {
	rows := o.src.Rows()
	now := o.now()
	o.mu.Lock()
	var base *sample
	for i := range o.samples {
		if now.Sub(o.samples[i].at) <= Window+sampleEvery && now.Sub(o.samples[i].at) > 0 {
			base = &o.samples[i]
			break
		}
	}
	o.mu.Unlock()
	byKind := map[Kind][]View{}
	for _, r := range rows {
		v := View{Kind: r.Kind, ID: r.ID, Key: string(r.Kind) + "/" + r.ID, State: r.State, Detail: r.Detail,
			hasCount: r.HasCount, total: r.Count, Rate: "—", Total: "—", Errors: "—", RecentErrors: "—", P50: "—", P99: "—"}
		v.Link = r.Link // made a console URL once the row is on the page shown
		if r.HasCount {
			v.Total, v.Errors = strconv.FormatUint(r.Count, 10), strconv.FormatUint(r.Errors, 10)
			if base != nil {
				if was, ok := base.counts[v.Key]; ok && r.Count >= was[0] {
					secs := now.Sub(base.at).Seconds()
					v.rate = float64(r.Count-was[0]) / secs
					v.Rate = strconv.FormatFloat(v.rate, 'f', 1, 64)
					recent := r.Errors - min(was[1], r.Errors)
					v.RecentErrors = strconv.FormatUint(recent, 10)
					if recent > 0 {
						v.State += ", failing"
					}
				}
			}
		}
		byKind[r.Kind] = append(byKind[r.Kind], v)
	}
	only := Kind(q.Get("kind"))
	page, _ := strconv.Atoi(q.Get("page"))
	var out []Section
	for _, k := range kinds {
		vs := byKind[k.Kind]
		if len(vs) == 0 || (only != "" && only != k.Kind) {
			continue
		}
		slices.SortFunc(vs, func(a, b View) int {
			if c := cmp.Compare(b.rate, a.rate); c != 0 {
				return c
			}
			if c := cmp.Compare(b.total, a.total); c != 0 {
				return c
			}
			return cmp.Compare(a.ID, b.ID)
		})
		s := Section{Kind: k.Kind, Title: k.Title, Total: len(vs), Latency: o.latency != nil && k.Kind == KindWorkflow}
		p := 0
		if only == k.Kind {
			p = max(0, min(page, (len(vs)-1)/PageSize))
		}
		from, to := p*PageSize, min((p+1)*PageSize, len(vs))
		s.Rows, s.Shown, s.Page = vs[from:to], to-from, p
		// Links and latency quantiles (a sort of each workflow's window) only
		// for the rows shown: with a thousand workflows most are on other pages.
		for i := range s.Rows {
			v := &s.Rows[i]
			if v.Link != "" {
				v.Link = m.URL(v.Link)
			}
			if o.latency != nil && v.Kind == KindWorkflow {
				v.hasLatency = true
				if p50, p99, n := o.latency.Quantiles(v.ID); n > 0 {
					v.P50, v.P99 = fmtDur(p50), fmtDur(p99)
				}
			}
		}
		if p > 0 {
			s.Prev = m.URL("/", url.Values{"kind": {string(k.Kind)}, "page": {strconv.Itoa(p - 1)}})
		}
		if to < len(vs) {
			s.Next = m.URL("/", url.Values{"kind": {string(k.Kind)}, "page": {strconv.Itoa(p + 1)}})
		}
		out = append(out, s)
	}
	return out
}

func fmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(100 * time.Microsecond).String()
	default:
		return d.Round(10 * time.Millisecond).String()
	}
}

// Page returns the overview page ("/", with /overview.json for the live
// refresh).
func (o *Overview) Page() console.Page {
	return console.Page{Path: "/", Title: "Overview", Order: 0, Nav: true, Mount: func(m *console.Mux) {
		m.Get("/", func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			m.Render(w, r, console.View{Title: "Overview", Active: "/", Body: page,
				Data: pageData{Sections: o.data(m, q), Live: m.URL("/overview.json", q), Kind: q.Get("kind"), All: m.URL("/"), Window: Window}})
		})
		m.Get("/overview.json", func(w http.ResponseWriter, r *http.Request) {
			m.JSON(w, http.StatusOK, map[string]any{"sections": o.data(m, r.URL.Query())})
		})
	}}
}

type pageData struct {
	Sections  []Section
	Live, All string
	Kind      string
	Window    time.Duration
}
