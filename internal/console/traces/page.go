package traces

import (
	"cmp"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/arvenza/helix/internal/console"
	"github.com/arvenza/helix/internal/tracing"
)

// tracesPerPage bounds the list: the page is the same size whatever the
// traffic.
const tracesPerPage = 50

// minBarWidth keeps a span too short to see at the trace's scale visible.
const minBarWidth = 0.4

// NewPage returns the Traces page: /traces (recent traces; ?exchange=ID goes
// to the trace of that exchange) and /traces/{traceID} (its waterfall). A nil
// store means tracing is off: the page then says how to switch it on.
func NewPage(s *Store) console.Page {
	p := &page{store: s}
	return console.Page{Path: "/traces", Title: "Traces", Order: 80, Nav: true, Mount: p.mount}
}

type page struct{ store *Store }

func (p *page) mount(m *console.Mux) {
	m.Get("/traces", func(w http.ResponseWriter, r *http.Request) { p.list(m, w, r) })
	m.Get("/traces/{id}", func(w http.ResponseWriter, r *http.Request) { p.trace(m, w, r) })
}

// Summary is a trace as the list shows it.
type Summary struct {
	ID, URL    string
	Root       string
	Workflow   string
	ExchangeID string
	Start      time.Time
	Duration   time.Duration
	// Status is "error" when a span failed, else "ok".
	Status string
	Spans  int
}

// roots are the spans whose parent is not in the trace (a remote caller's, or
// one not kept), earliest first.
func roots(t *Trace) []Span {
	ids := make(map[string]bool, len(t.Spans))
	for _, s := range t.Spans {
		ids[s.SpanID] = true
	}
	var out []Span
	for _, s := range t.Spans {
		if s.ParentID == "" || !ids[s.ParentID] {
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b Span) int { return a.Start.Compare(b.Start) })
	return out
}

func attr(s Span, key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value
		}
	}
	return ""
}

// Summarize describes t for the list.
func Summarize(t *Trace) Summary {
	sum := Summary{ID: t.ID, Spans: len(t.Spans) + t.Omitted, Status: "ok"}
	if len(t.Spans) == 0 {
		return sum
	}
	start, end := t.Spans[0].Start, t.Spans[0].End
	for _, s := range t.Spans {
		if s.Start.Before(start) {
			start = s.Start
		}
		if s.End.After(end) {
			end = s.End
		}
		if s.Status == "error" {
			sum.Status = "error"
		}
	}
	sum.Start, sum.Duration = start, end.Sub(start)
	rs := roots(t)
	sum.Root = rs[0].Name
	for _, s := range append(rs, t.Spans...) {
		if sum.Workflow == "" {
			sum.Workflow = attr(s, string(tracing.AttrWorkflowID))
		}
		if sum.ExchangeID == "" {
			sum.ExchangeID = attr(s, string(tracing.AttrExchangeID))
		}
	}
	return sum
}

type listData struct {
	On             bool
	Traces         []Summary
	From, To, Of   int
	Newer, Older   string
	Exchange       string
	ExchangeMissed bool
	Limits         Limits
}

func (p *page) list(m *console.Mux, w http.ResponseWriter, r *http.Request) {
	d := listData{On: p.store != nil}
	if !d.On {
		m.Render(w, r, console.View{Title: "Traces", Active: "/traces", Body: listTmpl, Data: d})
		return
	}
	d.Limits = p.store.Limits()
	q := r.URL.Query()
	if ex := q.Get("exchange"); ex != "" {
		if t, ok := p.store.ByExchange(ex); ok {
			http.Redirect(w, r, m.URL("/traces/"+t.ID), http.StatusSeeOther)
			return
		}
		d.Exchange, d.ExchangeMissed = ex, true
	}
	pageNo, _ := strconv.Atoi(q.Get("page"))
	all := p.store.Traces()
	d.Of = len(all)
	// A page number beyond the last (or not a number) shows the last (or the
	// first) page; computed so that no number overflows.
	pageNo = min(max(pageNo, 0), max(len(all)-1, 0)/tracesPerPage)
	from := pageNo * tracesPerPage
	to := min(from+tracesPerPage, len(all))
	for _, t := range all[from:to] {
		s := Summarize(t)
		s.URL = m.URL("/traces/" + t.ID)
		d.Traces = append(d.Traces, s)
	}
	d.From, d.To = from+1, to
	if pageNo > 0 {
		d.Newer = m.URL("/traces", url.Values{"page": {strconv.Itoa(pageNo - 1)}})
	}
	if to < len(all) {
		d.Older = m.URL("/traces", url.Values{"page": {strconv.Itoa(pageNo + 1)}})
	}
	m.Render(w, r, console.View{Title: "Traces", Active: "/traces", Body: listTmpl, Data: d})
}

// Bar is one span of the waterfall.
type Bar struct {
	Span
	Depth int
	// Offset and Width are percentages of the trace's duration, as text for
	// the bar's style.
	Offset, Width string
	// Indent is the name's indentation in em, by depth.
	Indent      string
	Duration    time.Duration
	ExchangeID  string
	ExchangeURL string
}

type traceData struct {
	Summary
	Bars     []Bar
	Omitted  int
	ListURL  string
	Style    string
	Exchange string
}

// Waterfall lays t's spans out: depth-first from the roots, children by
// start, each bar placed and sized in proportion to the trace's duration.
func Waterfall(t *Trace) []Bar {
	sum := Summarize(t)
	total := sum.Duration
	children := map[string][]Span{}
	for _, s := range t.Spans {
		children[s.ParentID] = append(children[s.ParentID], s)
	}
	for _, c := range children {
		slices.SortStableFunc(c, func(a, b Span) int { return cmp.Or(a.Start.Compare(b.Start), b.End.Compare(a.End)) })
	}
	var out []Bar
	seen := map[string]bool{}
	var walk func(s Span, depth int)
	walk = func(s Span, depth int) {
		if seen[s.SpanID] { // a malformed trace with a cycle or a repeated id
			return
		}
		seen[s.SpanID] = true
		b := Bar{Span: s, Depth: depth, Duration: s.End.Sub(s.Start), Indent: strconv.FormatFloat(float64(min(depth, 20))*0.9, 'f', 1, 64)}
		off, width := 0.0, 100.0
		if total > 0 {
			off = 100 * float64(s.Start.Sub(sum.Start)) / float64(total)
			width = 100 * float64(b.Duration) / float64(total)
		}
		off = min(max(off, 0), 100-minBarWidth)
		width = min(max(width, minBarWidth), 100-off)
		b.Offset, b.Width = strconv.FormatFloat(off, 'f', 2, 64), strconv.FormatFloat(width, 'f', 2, 64)
		b.ExchangeID = attr(s, string(tracing.AttrExchangeID))
		out = append(out, b)
		for _, c := range children[s.SpanID] {
			walk(c, depth+1)
		}
	}
	for _, r := range roots(t) {
		walk(r, 0)
	}
	// Spans no root leads to (a malformed trace whose parents form a cycle)
	// are still shown, at the top level.
	for _, s := range t.Spans {
		walk(s, 0)
	}
	return out
}

type missingData struct {
	ID      string
	ListURL string
	Limits  Limits
	On      bool
}

func (p *page) trace(m *console.Mux, w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if p.store == nil {
		m.Render(w, r, console.View{Title: "Traces", Active: "/traces", Body: listTmpl, Data: listData{}})
		return
	}
	t, ok := p.store.Trace(id)
	if !ok {
		m.Render(w, r, console.View{Title: "Trace not found", Active: "/traces", Body: missingTmpl,
			Data: missingData{ID: id, ListURL: m.URL("/traces"), Limits: p.store.Limits(), On: true}})
		return
	}
	d := traceData{Summary: Summarize(t), Bars: Waterfall(t), Omitted: t.Omitted, ListURL: m.URL("/traces"),
		Style: m.URL("/assets/traces.css")}
	for i := range d.Bars {
		if ex := d.Bars[i].ExchangeID; ex != "" {
			d.Bars[i].ExchangeURL = m.URL("/exchanges/" + url.PathEscape(ex))
		}
	}
	m.Render(w, r, console.View{Title: "Trace " + d.Root, Active: "/traces", Body: traceTmpl, Data: d})
}
