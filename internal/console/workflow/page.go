package workflow

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/console"
	"github.com/arvenza/helix/internal/console/stepstats"
)

// Source is what the pages read of the application (pkg/app implements it).
type Source interface {
	// Graphs are the application's workflows, fixed while it runs.
	Graphs() []*Graph
	// Counts are the live counts of one workflow; ok is false when it is not
	// counted.
	Counts(kind, id string) (stepstats.Snapshot, bool)
	// YAML is the text of the element at p as written in its file.
	YAML(p config.Pos) (text string, truncated, ok bool)
}

// PageSize is how many workflows the list shows at once.
const PageSize = 50

// maxQuery bounds the filter text.
const maxQuery = 200

type pages struct {
	src    Source
	graphs []*Graph
	byID   map[string][]*Graph
	m      *console.Mux
}

// NewPage returns the Workflows page over src.
func NewPage(src Source) *console.Page {
	p := &pages{src: src, graphs: src.Graphs(), byID: map[string][]*Graph{}}
	for _, g := range p.graphs {
		p.byID[g.ID] = append(p.byID[g.ID], g)
	}
	return &console.Page{Path: "/workflows", Title: "Workflows", Order: 10, Nav: true, Mount: p.mount}
}

func (p *pages) mount(m *console.Mux) {
	p.m = m
	m.Get("/workflows", p.list)
	m.Get("/workflows/{id}", p.detail)
	m.Get("/workflows/{id}/counts", p.counts)
}

// href is the stable URL of a graph (and node, when n ≥ 0).
func (p *pages) href(g *Graph, n int) string {
	q := url.Values{}
	if len(p.byID[g.ID]) > 1 {
		q.Set("kind", g.Kind)
	}
	if n >= 0 {
		q.Set("node", strconv.Itoa(n))
	}
	u := p.m.URL("/workflows/"+url.PathEscape(g.ID), q)
	if n >= 0 {
		u += "#detail"
	}
	return u
}

// lookup finds the graph of id (and kind, when several entries share the id).
func (p *pages) lookup(r *http.Request) *Graph {
	gs := p.byID[r.PathValue("id")]
	kind := r.URL.Query().Get("kind")
	for _, g := range gs {
		if kind == "" || g.Kind == kind {
			return g
		}
	}
	return nil
}

// countText says a counter's state in words.
func countText(s stepstats.Summary) string {
	if s.Count == 0 {
		return "no runs yet"
	}
	return plural(s.Count, "run") + " · " + plural(s.Errors, "error") + " · p99 " + dur(s.P99)
}

func plural(n uint64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.FormatUint(n, 10) + " " + word + "s"
}

func dur(d time.Duration) string {
	f := console.FuncMap()["dur"].(func(time.Duration) string)
	return f(d)
}

type row struct {
	ID, Kind, Trigger, Href, Counts, P99 string
	Steps                                int
	Count, Errors                        uint64
}

type listData struct {
	Query      string
	Rows       []row
	From, To   int
	Total, All int
	Prev, Next string
}

func (p *pages) list(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if len(q) > maxQuery {
		q = q[:maxQuery]
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	var match []*Graph
	lq := strings.ToLower(q)
	for _, g := range p.graphs {
		if lq == "" || strings.Contains(strings.ToLower(g.ID), lq) || strings.Contains(strings.ToLower(g.Trigger), lq) ||
			strings.Contains(g.Kind, lq) || strings.Contains(strings.ToLower(g.Description), lq) {
			match = append(match, g)
		}
	}
	pages := max(1, (len(match)+PageSize-1)/PageSize)
	page = min(max(page, 1), pages)
	from, to := (page-1)*PageSize, min(page*PageSize, len(match))
	d := listData{Query: q, From: from + 1, To: to, Total: len(match), All: len(p.graphs)}
	if len(match) == 0 {
		d.From = 0
	}
	for _, g := range match[from:to] {
		rw := row{ID: g.ID, Kind: g.Kind, Trigger: g.Trigger, Href: p.href(g, -1), Steps: len(g.Steps), Counts: "not counted", P99: "–"}
		if s, ok := p.src.Counts(g.Kind, g.ID); ok {
			rw.Count, rw.Errors, rw.Counts = s.Exchange.Count, s.Exchange.Errors, countText(s.Exchange)
			if s.Exchange.Count > 0 {
				rw.P99 = dur(s.Exchange.P99)
			}
		}
		d.Rows = append(d.Rows, rw)
	}
	link := func(n int) string {
		v := url.Values{}
		if q != "" {
			v.Set("q", q)
		}
		v.Set("page", strconv.Itoa(n))
		return p.m.URL("/workflows", v)
	}
	if page > 1 {
		d.Prev = link(page - 1)
	}
	if page < pages {
		d.Next = link(page + 1)
	}
	p.m.Render(w, r, console.View{Title: "Workflows", Active: "/workflows", Body: listTmpl, Data: d})
}

// nodeView is a node as the page draws it.
type nodeView struct {
	N                    int
	Kind, Label, Short   string
	Where, Path, Href    string
	Counts, Aria, What   string
	Top, No              int
	Errors               bool
	Box                  Box
	Link, LinkID         string
	TextX, KindY, LabelY int
	CountY               int
	Selected             bool
	// Nested is true for a counted nested step: its live counts are under its
	// N in the JSON's nested.
	Nested bool
}

type detailView struct {
	Kind, ID, Description, Trigger, Where string
	Counts                                string
	CountsURL                             string
	Drawing                               *Drawing
	Nodes                                 []nodeView
	FailureY                              int
	Selected                              *nodeView
	YAML                                  string
	YAMLOK, Truncated                     bool
	Asset                                 string
}

func (p *pages) detail(w http.ResponseWriter, r *http.Request) {
	g := p.lookup(r)
	if g == nil {
		http.Error(w, fmt.Sprintf("no workflow, tool, agent or pipeline %q (kind %q): see the list at %s", r.PathValue("id"), r.URL.Query().Get("kind"), p.m.URL("/workflows")), http.StatusNotFound)
		return
	}
	snap, counted := p.src.Counts(g.Kind, g.ID)
	d := &detailView{Kind: g.Kind, ID: g.ID, Description: g.Description, Trigger: g.Trigger, Where: g.Pos.String(),
		Drawing: Layout(g), Asset: p.m.Base() + "/assets/"}
	d.FailureY = d.Drawing.FailureY
	cq := url.Values{}
	if len(p.byID[g.ID]) > 1 {
		cq.Set("kind", g.Kind)
	}
	d.CountsURL = p.m.URL("/workflows/"+url.PathEscape(g.ID)+"/counts", cq)
	d.Counts = "not counted"
	if counted {
		d.Counts = countText(snap.Exchange)
	}
	sel := -1
	if s := r.URL.Query().Get("node"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n >= len(g.Nodes) {
			http.Error(w, fmt.Sprintf("node=%q: %s has nodes 0 to %d; pick one on its graph at %s", shorten(s, 40), g.ID, len(g.Nodes)-1, p.href(g, -1)), http.StatusNotFound)
			return
		}
		sel = n
	}
	for _, n := range g.Nodes {
		v := p.nodeView(g, n, d.Drawing.Boxes[n.N], snap, counted)
		v.Selected = n.N == sel
		d.Nodes = append(d.Nodes, v)
	}
	if sel >= 0 {
		d.Selected = &d.Nodes[sel]
		d.YAML, d.Truncated, d.YAMLOK = p.src.YAML(g.Nodes[sel].Pos)
	}
	p.m.Render(w, r, console.View{Title: g.Kind + " " + g.ID, Active: "/workflows", Body: detailTmpl, Data: d})
}

func (p *pages) nodeView(g *Graph, n *Node, b Box, snap stepstats.Snapshot, counted bool) nodeView {
	v := nodeView{N: n.N, Kind: n.Kind, Label: n.Label, Short: shorten(n.Label, 29), Where: n.Pos.String(), Path: n.Path,
		Href: p.href(g, n.N), Top: n.Top, No: n.Top + 1, Box: b, TextX: b.X + 10, KindY: b.Y + 18, LabelY: b.Y + 35, CountY: b.Y + 51}
	switch {
	case n.Kind == "trigger" && counted:
		v.Counts, v.Errors = countText(snap.Exchange), snap.Exchange.Errors > 0
	case n.Top >= 0 && counted && n.Top < len(snap.Steps):
		v.Counts, v.Errors = countText(snap.Steps[n.Top]), snap.Steps[n.Top].Errors > 0
	case n.Nested && counted:
		if c, ok := snap.Nested[n.Pos.String()]; ok {
			v.Counts, v.Errors, v.Nested = countText(c), c.Errors > 0, true
		} else {
			v.Counts = "not counted"
		}
	case n.Top >= 0 || n.Kind == "trigger" || n.Nested:
		v.Counts = "not counted"
	case len(g.Failure) > 0 && isFailure(g, n):
		v.Counts = "runs on failure"
	default:
		v.Counts = "not counted"
	}
	if n.Link != "" {
		for _, t := range p.byID[n.Link] {
			if t.Kind == "workflow" {
				v.Link, v.LinkID = p.href(t, -1), n.Link
			}
		}
	}
	what := n.Kind
	if n.Top >= 0 {
		what = "step " + strconv.Itoa(n.Top+1) + ": " + n.Kind
	}
	if n.Label != "" {
		what += " " + n.Label
	}
	v.What = what + ", at " + v.Where
	v.Aria = v.What + ", " + v.Counts
	return v
}

func isFailure(g *Graph, n *Node) bool {
	for _, f := range g.Failure {
		if f == n {
			return true
		}
		for _, b := range f.Branches {
			for _, s := range b.Steps {
				if s == n {
					return true
				}
			}
		}
	}
	return false
}

// countsJSON is what workflow.js polls.
type countsJSON struct {
	Exchange stepCount   `json:"exchange"`
	Steps    []stepCount `json:"steps"`
	// Nested are the counts of the nested steps, by node number (the N of
	// the node's link); nodes at one position (a YAML alias) share counts.
	Nested map[string]stepCount `json:"nested,omitempty"`
}

type stepCount struct {
	Count  uint64 `json:"count"`
	Errors uint64 `json:"errors"`
	P50    string `json:"p50"`
	P99    string `json:"p99"`
	Text   string `json:"text"`
}

func toCount(s stepstats.Summary) stepCount {
	return stepCount{Count: s.Count, Errors: s.Errors, P50: dur(s.P50), P99: dur(s.P99), Text: countText(s)}
}

func (p *pages) counts(w http.ResponseWriter, r *http.Request) {
	g := p.lookup(r)
	if g == nil {
		p.m.JSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no workflow %q", r.PathValue("id"))})
		return
	}
	snap, ok := p.src.Counts(g.Kind, g.ID)
	if !ok {
		p.m.JSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("%s %q is not counted", g.Kind, g.ID)})
		return
	}
	out := countsJSON{Exchange: toCount(snap.Exchange), Steps: make([]stepCount, len(snap.Steps))}
	for i, s := range snap.Steps {
		out.Steps[i] = toCount(s)
	}
	for _, n := range g.Nodes {
		if !n.Nested {
			continue
		}
		if c, ok := snap.Nested[n.Pos.String()]; ok {
			if out.Nested == nil {
				out.Nested = map[string]stepCount{}
			}
			out.Nested[strconv.Itoa(n.N)] = toCount(c)
		}
	}
	p.m.JSON(w, http.StatusOK, out)
}
