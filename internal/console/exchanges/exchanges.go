// Package exchanges is the console's Exchanges pages: /exchanges, the latest
// captured exchanges with filters (workflow, status, principal) and a live
// feed (SSE) that adds new ones as they end; /exchanges/{id}, one exchange's
// headers and body before and after each step, its error with the step path
// and the timing of each step; and the replay of a captured exchange's input
// by an operator.
//
// It reads internal/console/capture through Source and replays through
// Replayer, both implemented in pkg/app (console_exchanges.go).
package exchanges

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
	"unicode/utf8"

	"github.com/arvenza/helix/internal/console"
	"github.com/arvenza/helix/internal/console/capture"
)

// Source is what the pages read: the capture.
type Source interface {
	List(f capture.Filter, limit int) ([]*capture.Exchange, int)
	Get(id string) *capture.Exchange
	Subscribe(buf int) *capture.Subscription
	Stats() capture.Stats
	Workflows(limit int) []string
	Options() capture.Options
}

// Replayer re-sends a captured exchange's input into its workflow and
// returns the capture id of the new exchange.
type Replayer interface {
	Replay(ctx context.Context, rec *capture.Exchange, by string) (string, error)
}

// Limits of the pages: everything shown is capped, whatever the traffic.
const (
	// ListLimit is how many exchanges /exchanges shows (and the feed keeps).
	ListLimit = 100
	// feedBuffer is how many exchanges a live feed may fall behind by before
	// it misses some (and says so).
	feedBuffer = 64
	// maxFilter bounds a filter value from the query string.
	maxFilter = 200
	// replayTimeout bounds a replay run in the operator's request.
	replayTimeout = 30 * time.Second
	// workflowChoices caps the workflow filter's suggestions.
	workflowChoices = 50
)

// Page returns the Exchanges page over src; replay may be nil (no replay).
func Page(src Source, replay Replayer) *console.Page {
	h := &handlers{src: src, replay: replay}
	return &console.Page{Path: "/exchanges", Title: "Exchanges", Order: 40, Nav: true, Mount: h.mount}
}

type handlers struct {
	src    Source
	replay Replayer
	m      *console.Mux
}

func (h *handlers) mount(m *console.Mux) {
	h.m = m
	m.Get("/exchanges", h.list)
	m.Get("/exchanges/feed", h.feed)
	m.Get("/exchanges/{id}", h.detail)
	m.Post("/exchanges/{id}/replay", h.doReplay)
}

//go:embed list.html
var listText string

//go:embed detail.html
var detailText string

var (
	listTmpl   = console.PageTemplate("exchanges", listText)
	detailTmpl = console.PageTemplate("exchange", detailText)
)

// filterOf reads the filter from the query string; an error names the
// parameter and what it accepts.
func filterOf(q url.Values) (capture.Filter, error) {
	f := capture.Filter{Workflow: q.Get("workflow"), Status: q.Get("status"), Principal: q.Get("principal")}
	for name, v := range map[string]string{"workflow": f.Workflow, "principal": f.Principal} {
		if len(v) > maxFilter || !utf8.ValidString(v) {
			return capture.Filter{}, fmt.Errorf("the %s filter must be valid text of at most %d bytes", name, maxFilter)
		}
	}
	switch f.Status {
	case "", capture.StatusOK, capture.StatusFailed:
	default:
		return capture.Filter{}, fmt.Errorf("the status filter must be %q or %q (or left out for both), not %q",
			capture.StatusOK, capture.StatusFailed, console.Clip(f.Status, 40))
	}
	return f, nil
}

// Row is one exchange in the list and in the feed's events.
type Row struct {
	ID        string `json:"id"`
	URL       string `json:"url"`
	Workflow  string `json:"workflow"`
	Kind      string `json:"kind"`
	Status    string `json:"status"`
	Principal string `json:"principal"`
	Start     string `json:"start"`
	Duration  string `json:"duration"`
	Error     string `json:"error,omitempty"`
	Replay    bool   `json:"replay,omitempty"`
}

func (h *handlers) row(e *capture.Exchange) Row {
	return Row{ID: e.ID, URL: h.m.URL("/exchanges/" + e.ID), Workflow: e.Workflow, Kind: e.Kind, Status: e.Status,
		Principal: e.Principal, Start: e.Start.UTC().Format("15:04:05.000"), Duration: fmtDur(e.Duration()),
		Error: console.Clip(e.Error, 200), Replay: e.ReplayOf != ""}
}

func fmtDur(d time.Duration) string {
	return console.FuncMap()["dur"].(func(time.Duration) string)(d)
}

type listData struct {
	Filter    capture.Filter
	Error     string
	Rows      []Row
	Total     int
	Stats     capture.Stats
	Sample    float64
	PerSecond int
	Workflows []string
	FeedURL   string
	ClearURL  string
	Script    string
	Limit     int
}

func (h *handlers) list(w http.ResponseWriter, r *http.Request) {
	d := listData{Stats: h.src.Stats(), Workflows: h.src.Workflows(workflowChoices), ClearURL: h.m.URL("/exchanges"),
		Script: h.m.URL("/assets/exchanges.js"), Limit: ListLimit}
	o := h.src.Options()
	d.Sample, d.PerSecond = o.Sample, o.PerSecond
	f, err := filterOf(r.URL.Query())
	status := http.StatusOK
	if err != nil {
		d.Error, status = err.Error(), http.StatusBadRequest
	} else {
		d.Filter = f
		list, total := h.src.List(f, ListLimit)
		d.Total = total
		for _, e := range list {
			d.Rows = append(d.Rows, h.row(e))
		}
		d.FeedURL = h.m.URL("/exchanges/feed", query(f))
	}
	writeStatus(w, status)
	h.m.Render(w, r, console.View{Title: "Exchanges", Active: "/exchanges", Body: listTmpl, Data: d})
}

func query(f capture.Filter) url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"workflow": f.Workflow, "status": f.Status, "principal": f.Principal} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q
}

// feed streams the exchanges that end from now on and match the filter, as
// "exchange" events (a Row in JSON); "missed" events say how many the reader
// fell behind by. The stream ends with the request or the capture.
func (h *handlers) feed(w http.ResponseWriter, r *http.Request) {
	f, err := filterOf(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	sub := h.src.Subscribe(feedBuffer)
	defer sub.Close()
	sse := h.m.SSE(w)
	if sse == nil {
		return
	}
	if sse.Send("ready", []byte(`{}`)) != nil {
		return
	}
	// A comment line now and then finds a reader that went away while no
	// exchange matched.
	tick := time.NewTicker(15 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-sub.Done():
			return
		case <-tick.C:
			if sse.Send("ping", []byte(`{}`)) != nil {
				return
			}
		case e := <-sub.C():
			if n := sub.Missed(); n > 0 {
				if sse.Send("missed", fmt.Appendf(nil, `{"count":%d}`, n)) != nil {
					return
				}
			}
			if !f.Match(e) {
				continue
			}
			b, err := json.Marshal(h.row(e))
			if err != nil || sse.Send("exchange", b) != nil {
				return
			}
		}
	}
}

// stepView is one step with the snapshot before it.
type stepView struct {
	capture.Step
	Before capture.Snapshot
	Failed bool
}

type detailData struct {
	X     *capture.Exchange
	Steps []stepView
	WorkflowURL, ReplayOfURL,
	ReplayURL string
	Operator  bool
	CanReplay bool
	Error     string
}

func (h *handlers) detail(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	e := h.src.Get(id)
	if e == nil {
		writeStatus(w, http.StatusNotFound)
		h.m.Render(w, r, console.View{Title: "Exchange not found", Active: "/exchanges", Body: notFoundTmpl,
			Data: map[string]string{"ID": console.Clip(id, 40), "List": h.m.URL("/exchanges")}})
		return
	}
	h.renderDetail(w, r, e, "", http.StatusOK)
}

func (h *handlers) renderDetail(w http.ResponseWriter, r *http.Request, e *capture.Exchange, msg string, status int) {
	p, _ := console.PrincipalFrom(r.Context())
	d := detailData{X: e, WorkflowURL: h.m.URL("/workflows/" + url.PathEscape(e.Workflow)),
		ReplayURL: h.m.URL("/exchanges/" + e.ID + "/replay"), Operator: p.Role >= console.RoleOperator,
		CanReplay: h.replay != nil && e.Replayable(), Error: msg}
	if e.ReplayOf != "" {
		d.ReplayOfURL = h.m.URL("/exchanges/" + e.ReplayOf)
	}
	before := e.Input
	for _, s := range e.Steps {
		d.Steps = append(d.Steps, stepView{Step: s, Before: before, Failed: s.Error != ""})
		before = s.After
	}
	writeStatus(w, status)
	h.m.Render(w, r, console.View{Title: "Exchange " + e.ID, Active: "/exchanges", Body: detailTmpl, Data: d})
}

var notFoundTmpl = console.PageTemplate("notfound", `<p role="alert">No captured exchange {{.ID}}: the capture keeps the newest exchanges within its memory budget, so an older one may have been evicted, or Helix restarted since.</p>
<p><a href="{{.List}}">Back to the exchanges</a></p>`)

// doReplay re-sends a captured exchange's input into its workflow and sends
// the operator to the new exchange's page (303), or shows why it could not.
func (h *handlers) doReplay(w http.ResponseWriter, r *http.Request) {
	e := h.src.Get(r.PathValue("id"))
	if e == nil {
		writeStatus(w, http.StatusNotFound)
		h.m.Render(w, r, console.View{Title: "Exchange not found", Active: "/exchanges", Body: notFoundTmpl,
			Data: map[string]string{"ID": console.Clip(r.PathValue("id"), 40), "List": h.m.URL("/exchanges")}})
		return
	}
	if h.replay == nil {
		h.renderDetail(w, r, e, "Replay is not available in this application.", http.StatusNotImplemented)
		return
	}
	if !e.Replayable() {
		h.renderDetail(w, r, e, "This exchange cannot be replayed: "+e.NotReplayable+".", http.StatusConflict)
		return
	}
	p, _ := console.PrincipalFrom(r.Context())
	ctx, cancel := context.WithTimeout(r.Context(), replayTimeout)
	defer cancel()
	id, err := h.replay.Replay(ctx, e, p.Name)
	if id == "" {
		msg := "The replay did not start"
		if err != nil {
			msg += ": " + err.Error()
		}
		h.renderDetail(w, r, e, msg+".", http.StatusInternalServerError)
		return
	}
	// The replay ran (it may have failed: its page says how).
	http.Redirect(w, r, h.m.URL("/exchanges/"+id, url.Values{"replayed": {e.ID}}), http.StatusSeeOther)
}

// writeStatus sets a page's status other than 200 (Render writes the body).
func writeStatus(w http.ResponseWriter, status int) {
	if status == http.StatusOK {
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
}
