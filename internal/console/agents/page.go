package agents

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/arvenza/helix/internal/console"
)

// AgentInfo is one agent of the application as the page lists it: never a
// key or another secret.
type AgentInfo struct {
	ID, Type, Provider, Model string
	Tools                     []string
	// The /metrics counters of the agent.
	Runs, Errors, ToolCalls, InputTokens, OutputTokens uint64
}

// Source is what the page reads of the application (pkg/app implements it).
type Source interface {
	// Agents are the application's agents, in their order in the YAML.
	Agents() []AgentInfo
}

// Page sizes: the page is the same size whatever the traffic.
const (
	maxAgentsShown = 200
	runsPerPage    = 50
	// livePoll is how often a live transcript looks for news; it reads a
	// snapshot, so polling costs the running agent nothing.
	livePoll = 250 * time.Millisecond
	// maxLive bounds one live stream (a browser left open on a run that never
	// ends).
	maxLive = 30 * time.Minute
)

// NewPage returns the Agents page: /agents (the agents and recent runs) and
// /agents/runs/{id} (a transcript, live while the run is in progress).
func NewPage(src Source, rec *Recorder) console.Page {
	p := &page{src: src, rec: rec}
	return console.Page{Path: "/agents", Title: "Agents", Order: 50, Nav: true, Mount: p.mount}
}

type page struct {
	src Source
	rec *Recorder
}

func (p *page) mount(m *console.Mux) {
	m.Get("/agents", func(w http.ResponseWriter, r *http.Request) { p.list(m, w, r) })
	m.Get("/agents/runs/{id}", func(w http.ResponseWriter, r *http.Request) { p.run(m, w, r) })
	m.Get("/agents/runs/{id}/events", func(w http.ResponseWriter, r *http.Request) { p.events(m, w, r) })
}

type agentRow struct {
	AgentInfo
	RunsURL string
}

type runRow struct {
	*Run
	URL string
	// Excerpt is the start of the input, for the list.
	Excerpt string
}

// maxExcerpt is how much of a run's input the list shows.
const maxExcerpt = 120

type listData struct {
	Agents                []agentRow
	AgentsShown, AgentsOf int
	Filter                string
	Runs                  []runRow
	RunsFrom, RunsTo      int
	RunsOf                int
	Newer, Older, AllURL  string
	Kept                  int
	Limits                Limits
	Style                 string
}

func (p *page) list(m *console.Mux, w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	filter := q.Get("agent")
	pageNo, _ := strconv.Atoi(q.Get("page"))
	d := listData{Filter: filter, Limits: p.rec.Limits(), AllURL: m.URL("/agents"), Style: m.URL("/assets/agents.css")}
	all := p.src.Agents()
	d.AgentsOf = len(all)
	for _, a := range all[:min(len(all), maxAgentsShown)] {
		d.Agents = append(d.Agents, agentRow{AgentInfo: a, RunsURL: m.URL("/agents", url.Values{"agent": {a.ID}})})
	}
	d.AgentsShown = len(d.Agents)
	runs := p.rec.Runs()
	d.Kept = len(runs)
	if filter != "" {
		kept := runs[:0:0]
		for _, run := range runs {
			if run.Agent == filter {
				kept = append(kept, run)
			}
		}
		runs = kept
	}
	d.RunsOf = len(runs)
	// A page number beyond the last (or not a number) shows the last (or the
	// first) page; computed so that no number overflows.
	pageNo = min(max(pageNo, 0), max(len(runs)-1, 0)/runsPerPage)
	from := pageNo * runsPerPage
	to := min(from+runsPerPage, len(runs))
	for _, run := range runs[from:to] {
		ex := run.Input
		if len(ex) > maxExcerpt {
			ex = cut(ex, maxExcerpt, len(run.Input))
		}
		d.Runs = append(d.Runs, runRow{Run: run, URL: m.URL("/agents/runs/" + url.PathEscape(run.ID)), Excerpt: ex})
	}
	d.RunsFrom, d.RunsTo = from+1, to
	link := func(n int) string {
		v := url.Values{"page": {strconv.Itoa(n)}}
		if filter != "" {
			v.Set("agent", filter)
		}
		return m.URL("/agents", v)
	}
	if pageNo > 0 {
		d.Newer = link(pageNo - 1)
	}
	if to < len(runs) {
		d.Older = link(pageNo + 1)
	}
	m.Render(w, r, console.View{Title: "Agents", Active: "/agents", Body: listTmpl, Data: d})
}

// turnView is a model turn with the results of its calls beside them.
type turnView struct {
	Entry
	Calls []callView
	// Stray are results whose call is not in the turn (omitted entries).
	Stray []Entry
}

type callView struct {
	Call
	Arguments string // indented when it is JSON
	Result    *Entry
}

type runData struct {
	*Run
	Turns     []turnView
	Orphans   []Entry
	EventsURL string
	ListURL   string
	AgentURL  string
	Script    string
	Style     string
}

func (p *page) view(m *console.Mux, run *Run) runData {
	d := runData{Run: run, EventsURL: m.URL("/agents/runs/" + url.PathEscape(run.ID) + "/events"),
		ListURL: m.URL("/agents"), AgentURL: m.URL("/agents", url.Values{"agent": {run.Agent}}),
		Script: m.URL("/assets/agents.js"), Style: m.URL("/assets/agents.css")}
	for _, e := range run.Entries {
		switch e.Kind {
		case KindTurn:
			tv := turnView{Entry: e}
			for _, c := range e.Calls {
				tv.Calls = append(tv.Calls, callView{Call: c, Arguments: indentJSON(c.Arguments)})
			}
			d.Turns = append(d.Turns, tv)
		case KindTool:
			if len(d.Turns) == 0 {
				d.Orphans = append(d.Orphans, e)
				continue
			}
			tv := &d.Turns[len(d.Turns)-1]
			placed := false
			for i := range tv.Calls {
				if tv.Calls[i].Result == nil && tv.Calls[i].ID == e.CallID {
					res := e
					tv.Calls[i].Result = &res
					placed = true
					break
				}
			}
			if !placed {
				tv.Stray = append(tv.Stray, e)
			}
		}
	}
	return d
}

// indentJSON indents arguments that are JSON, for reading; others stay as
// the model wrote them.
func indentJSON(s string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(s), "", "  ") != nil {
		return s
	}
	return b.String()
}

type missingData struct {
	ID      string
	ListURL string
	Limits  Limits
}

func (p *page) run(m *console.Mux, w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	run, ok := p.rec.Run(id)
	if !ok {
		m.Render(w, r, console.View{Title: "Agent run not found", Active: "/agents", Body: missingTmpl,
			Data: missingData{ID: id, ListURL: m.URL("/agents"), Limits: p.rec.Limits()}})
		return
	}
	m.Render(w, r, console.View{Title: "Agent run " + run.ID + " (" + run.Agent + ")", Active: "/agents", Body: runTmpl, Data: p.view(m, run)})
}

// events streams the transcript while the run is in progress: a "transcript"
// event with the rendered transcript whenever it changed, and "end" when the
// run ended (or is no longer kept).
func (p *page) events(m *console.Mux, w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, ok := p.rec.Run(id); !ok {
		http.Error(w, "no agent run "+strconv.Quote(id)+" is kept", http.StatusNotFound)
		return
	}
	s := m.SSE(w)
	if s == nil {
		return
	}
	tick := time.NewTicker(livePoll)
	defer tick.Stop()
	deadline := time.NewTimer(maxLive)
	defer deadline.Stop()
	var sent uint64
	for {
		run, ok := p.rec.Run(id)
		if !ok {
			_ = s.Send("end", []byte("evicted"))
			return
		}
		if run.Version != sent {
			var b bytes.Buffer
			if err := runTmpl.ExecuteTemplate(&b, "transcript", p.view(m, run)); err != nil {
				return
			}
			if s.Send("transcript", b.Bytes()) != nil {
				return
			}
			sent = run.Version
		}
		if !run.Running() {
			_ = s.Send("end", []byte(run.State()))
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-deadline.C:
			_ = s.Send("end", []byte("timeout"))
			return
		case <-tick.C:
		}
	}
}
