// Package runs is the console's Runs page: the application's durable runs
// (internal/durable), listed with state and workflow filters, and one run's
// steps, waits and result; operators resume, cancel, approve and reject runs
// from it through the same durable.Runs operations the helix runs CLI uses,
// with the same checks.
package runs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/arvenza/helix/internal/console"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/redact"
	"github.com/arvenza/helix/pkg/exchange"
)

// Bounds of the page.
const (
	// PageSize is the runs listed per page.
	PageSize = 50
	// MaxSteps is the step records shown of one run (its latest).
	MaxSteps = 200
	// MaxResultBytes is what is shown of a run's result.
	MaxResultBytes = 4096
	// MaxCheckpointBytes is what is shown of one step's checkpoint.
	MaxCheckpointBytes = 2048
	// MaxDataBytes bounds the JSON an operator sends with a decision.
	MaxDataBytes = 64 << 10
	// storeTimeout bounds one call to the store (PostgreSQL may be remote).
	storeTimeout = 10 * time.Second
)

// Source is what the page reads the application through (pkg/app implements
// it).
type Source interface {
	// Runs is the durable store; nil when nothing in the application is
	// durable (or it has not started).
	Runs() durable.Runs
}

// Checkpointer is a store that also shows what each step checkpointed
// (durable.Runtime does).
type Checkpointer interface {
	Checkpoints(ctx context.Context, runID string) ([]durable.Checkpoint, error)
}

// New returns the page.
func New(src Source) console.Page {
	h := &handler{src: src}
	return console.Page{Path: "/runs", Title: "Runs", Order: 70, Nav: true, Mount: func(m *console.Mux) {
		h.m = m
		m.Get("/runs", h.list)
		m.Get("/runs/{id}", h.show)
		m.Post("/runs/{id}/resume", h.act("resume"))
		m.Post("/runs/{id}/cancel", h.act("cancel"))
		m.Post("/runs/{id}/approve", h.act("approve"))
		m.Post("/runs/{id}/reject", h.act("reject"))
	}}
}

type handler struct {
	src Source
	m   *console.Mux
}

var states = []durable.State{durable.StateWorking, durable.StateInputRequired, durable.StateWaiting,
	durable.StateCompleted, durable.StateFailed, durable.StateCancelled}

func knownState(s durable.State) bool {
	for _, k := range states {
		if k == s {
			return true
		}
	}
	return false
}

type stateLink struct {
	Name   string
	URL    string
	Count  int
	Counts bool
	Active bool
}

type runRow struct {
	durable.Run
	URL      string
	WaitText string
}

type listData struct {
	NoStore   bool
	States    []stateLink
	AllURL    string
	Workflow  string
	State     string
	Runs      []runRow
	Shown     int
	Total     int // -1: unknown
	Next      string
	First     string
	Paged     bool
	FormState string
}

func (h *handler) list(w http.ResponseWriter, r *http.Request) {
	store := h.src.Runs()
	if store == nil {
		h.m.Render(w, r, console.View{Title: "Runs", Active: "/runs", Body: listTmpl, Data: listData{NoStore: true}})
		return
	}
	q := r.URL.Query()
	f := durable.Filter{Workflow: console.Clip(q.Get("workflow"), 200), After: console.Clip(q.Get("after"), 200), Limit: PageSize}
	state := q.Get("state")
	if state != "" {
		if !knownState(durable.State(state)) {
			h.fail(w, r, http.StatusBadRequest, fmt.Sprintf("state %q: use working, input_required, waiting, completed, failed or cancelled", console.Clip(state, 40)), h.m.URL("/runs"))
			return
		}
		f.States = []durable.State{durable.State(state)}
	}
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	defer cancel()
	list, err := store.List(ctx, f)
	if err != nil {
		h.fail(w, r, http.StatusServiceUnavailable, "list the runs: "+redact.Text(err.Error()), h.m.URL("/"))
		return
	}
	d := listData{Workflow: f.Workflow, State: state, Total: -1, Paged: f.After != "", FormState: state}
	link := func(st string, after string) string {
		v := url.Values{}
		if st != "" {
			v.Set("state", st)
		}
		if f.Workflow != "" {
			v.Set("workflow", f.Workflow)
		}
		if after != "" {
			v.Set("after", after)
		}
		return h.m.URL("/runs", v)
	}
	var counts map[durable.State]int
	if sc, ok := store.(durable.StateCounter); ok && f.Workflow == "" {
		counts, _ = sc.CountByState(ctx)
	}
	total := 0
	for _, st := range states {
		n := counts[st]
		total += n
		d.States = append(d.States, stateLink{Name: string(st), URL: link(string(st), ""), Count: n, Counts: counts != nil, Active: string(st) == state})
	}
	if counts != nil {
		d.Total = total
		if state != "" {
			d.Total = counts[durable.State(state)]
		}
	}
	d.AllURL = link("", "")
	d.First = link(state, "")
	for _, run := range list {
		d.Runs = append(d.Runs, runRow{Run: run, URL: h.m.URL("/runs/" + url.PathEscape(run.ID)), WaitText: waitText(pending(run))})
	}
	d.Shown = len(d.Runs)
	if len(list) == f.Limit {
		d.Next = link(state, list[len(list)-1].ID)
	}
	h.m.Render(w, r, console.View{Title: "Runs", Active: "/runs", Body: listTmpl, Data: d})
}

// pending is every wait the run has not had answered (its one wait, or
// several at once).
func pending(run durable.Run) []durable.Wait {
	if len(run.Waits) > 0 {
		return run.Waits
	}
	if run.Wait != nil {
		return []durable.Wait{*run.Wait}
	}
	return nil
}

func waitText(ws []durable.Wait) string {
	parts := make([]string, 0, len(ws))
	for _, w := range ws {
		parts = append(parts, waitSummary(w))
	}
	return strings.Join(parts, "; ")
}

func waitSummary(w durable.Wait) string {
	s := w.Kind
	switch w.Kind {
	case durable.WaitApprove:
		s = "an approval"
	case durable.WaitElicit:
		s = "an answer to a form"
	case durable.WaitSleep:
		s = "a timer"
	case durable.WaitAwait:
		s = "a callback or record"
		if w.Source != "" {
			s += " from " + w.Source
		}
	}
	if w.Message != "" {
		s += ": " + console.Clip(w.Message, 200)
	}
	if !w.Due.IsZero() {
		s += " (until " + w.Due.UTC().Format(time.RFC3339) + ")"
	}
	return s
}

type waitView struct {
	durable.Wait
	Summary  string
	Decides  bool // a person decides it (approve:, elicit:)
	Form     bool // elicit: approving needs the form's answer
	Approve  string
	Reject   string
	KeyField string // the wait's key when the run waits for several
}

type stepView struct {
	durable.StepRecord
	Took string
	Size int64
	// Exchange is the checkpointed exchange, redacted and cut; Cut says it
	// was cut.
	Exchange string
	Cut      bool
}

type showData struct {
	Run        durable.Run
	Waits      []waitView
	Steps      []stepView
	StepsShown int
	StepsTotal int
	Result     string
	ResultCut  bool
	Error      string
	Operator   bool
	Done       string
	Resume     string
	Cancel     string
	CanResume  bool
	CanCancel  bool
	List       string
	Failed     bool
}

// doneText are the messages an action leaves on the run's page (by code, so
// that no query string can put words on the page).
var doneText = map[string]string{
	"approved":  "Approved: the run goes on.",
	"rejected":  "Rejected: the run goes on with the rejection.",
	"answered":  "Answered: the run goes on with the form's answer.",
	"declined":  "Declined: the run goes on without an answer.",
	"cancelled": "Cancelled: no later step starts.",
	"resumed":   "Resumed from its last checkpoint.",
}

func (h *handler) show(w http.ResponseWriter, r *http.Request) {
	h.showStatus(w, r, http.StatusOK, "")
}

func (h *handler) showStatus(w http.ResponseWriter, r *http.Request, status int, problem string) {
	store := h.src.Runs()
	if store == nil {
		h.fail(w, r, http.StatusNotFound, "this application has no durable runs: no workflow, tool or agent is durable", h.m.URL("/runs"))
		return
	}
	id := r.PathValue("id")
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	defer cancel()
	run, ok := h.getRun(ctx, w, r, store, id)
	if !ok {
		return
	}
	steps, err := store.Steps(ctx, id)
	if err != nil {
		h.fail(w, r, http.StatusServiceUnavailable, "read the run's steps: "+redact.Text(err.Error()), h.m.URL("/runs"))
		return
	}
	p, _ := console.PrincipalFrom(r.Context())
	base := "/runs/" + url.PathEscape(run.ID)
	d := showData{Run: run, Operator: p.Role >= console.RoleOperator, Error: problem, List: h.m.URL("/runs"),
		Resume: h.m.URL(base + "/resume"), Cancel: h.m.URL(base + "/cancel"),
		CanCancel: !run.State.Terminal(), CanResume: run.State != durable.StateCompleted && run.Wait == nil,
		Done: doneText[r.URL.Query().Get("done")], Failed: run.State == durable.StateFailed}
	d.Run.Error = console.Clip(redact.Text(run.Error), 2000)
	ws := pending(run)
	for _, wt := range ws {
		v := waitView{Wait: wt, Summary: waitSummary(wt), Decides: wt.Kind == durable.WaitApprove || wt.Kind == durable.WaitElicit,
			Form: wt.Kind == durable.WaitElicit, Approve: h.m.URL(base + "/approve"), Reject: h.m.URL(base + "/reject")}
		if len(run.Waits) > 0 {
			v.KeyField = wt.Key
		}
		v.Key = console.Clip(wt.Key, 200)
		d.Waits = append(d.Waits, v)
	}
	type stepKey struct {
		seg, idx int
		name     string
	}
	exchanges := map[stepKey]json.RawMessage{}
	if cp, ok := store.(Checkpointer); ok {
		// Without them the page still shows the steps: a store that cannot
		// read them now says so in the steps' absence of an exchange.
		if list, err := cp.Checkpoints(ctx, id); err == nil {
			for _, c := range list {
				exchanges[stepKey{c.Segment, c.Index, c.Name}] = c.Exchange
			}
		}
	}
	d.StepsTotal = len(steps)
	from := max(0, len(steps)-MaxSteps)
	for i := from; i < len(steps); i++ {
		s := steps[i]
		v := stepView{StepRecord: s, Took: stepTook(run, steps, i), Size: int64(s.Bytes)}
		v.Exchange, v.Cut = exchangeText(exchanges[stepKey{s.Segment, s.Index, s.Name}], MaxCheckpointBytes)
		v.Name, v.Error = console.Clip(s.Name, 200), console.Clip(redact.Text(s.Error), 500)
		d.Steps = append(d.Steps, v)
	}
	d.StepsShown = len(d.Steps)
	d.Result, d.ResultCut = exchangeText(run.Result, MaxResultBytes)
	d.Run.Result = nil
	if status != http.StatusOK {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
	}
	h.m.Render(w, r, console.View{Title: "Run " + console.Clip(run.ID, 80), Active: "/runs", Body: showTmpl, Data: d})
}

// stepTook is how long step i ran (durable.StepTook), "-" when the store
// does not know.
func stepTook(r durable.Run, steps []durable.StepRecord, i int) string {
	d, ok := durable.StepTook(r, steps, i)
	if !ok {
		return "-"
	}
	return d.Round(time.Microsecond).String()
}

// getRun reads run id for a page or an action; when it cannot, it answers
// the request (404 for an unknown run, 503 for a store that fails) and ok is
// false.
func (h *handler) getRun(ctx context.Context, w http.ResponseWriter, r *http.Request, store durable.Runs, id string) (durable.Run, bool) {
	run, err := store.Get(ctx, id)
	if errors.Is(err, durable.ErrNotFound) {
		h.fail(w, r, http.StatusNotFound, fmt.Sprintf("no run %q: it may have ended and been removed after its retention", console.Clip(id, 100)), h.m.URL("/runs"))
		return durable.Run{}, false
	}
	if err != nil {
		h.fail(w, r, http.StatusServiceUnavailable, "read the run: "+redact.Text(err.Error()), h.m.URL("/runs"))
		return durable.Run{}, false
	}
	return run, true
}

// act is an operator's action on a run: it checks what helix runs checks,
// calls the store and sends the browser back to the run's page.
func (h *handler) act(verb string) console.Handler {
	return func(w http.ResponseWriter, r *http.Request) {
		store := h.src.Runs()
		if store == nil {
			h.fail(w, r, http.StatusNotFound, "this application has no durable runs", h.m.URL("/runs"))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxDataBytes+4096)
		if err := r.ParseForm(); err != nil {
			h.showStatus(w, r, http.StatusBadRequest, "the form could not be read: "+err.Error())
			return
		}
		id := r.PathValue("id")
		ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
		defer cancel()
		run, ok := h.getRun(ctx, w, r, store, id)
		if !ok {
			return
		}
		p, _ := console.PrincipalFrom(r.Context())
		done, status, problem := h.apply(ctx, store, run, verb, r.PostForm, "console:"+p.Name)
		if problem != "" {
			h.showStatus(w, r, status, problem)
			return
		}
		http.Redirect(w, r, h.m.URL("/runs/"+url.PathEscape(run.ID), url.Values{"done": {done}}), http.StatusSeeOther)
	}
}

// apply does verb to run; it returns the done code, or the status and what
// went wrong and what to do.
func (h *handler) apply(ctx context.Context, store durable.Runs, run durable.Run, verb string, form url.Values, by string) (string, int, string) {
	switch verb {
	case "cancel":
		if run.State.Terminal() {
			return "", http.StatusConflict, fmt.Sprintf("the run has ended already (%s): there is nothing to cancel", run.State)
		}
		if _, err := store.Cancel(ctx, run.ID); err != nil {
			return "", http.StatusServiceUnavailable, "cancel the run: " + redact.Text(err.Error())
		}
		return "cancelled", 0, ""
	case "resume":
		switch {
		case run.State == durable.StateCompleted:
			return "", http.StatusConflict, "the run completed: there is nothing to resume"
		case run.Wait != nil:
			return "", http.StatusConflict, fmt.Sprintf("the run waits for %s: approve or reject it instead", run.Wait.Kind)
		case run.State == durable.StateWorking && form.Get("force") == "":
			// A working run is most likely running now: a second execution
			// would repeat its step's side effects.
			return "", http.StatusConflict, "the run is working: an instance may be running it now; resume a run that is stuck by ticking \"it is stuck\""
		}
		if _, err := store.Resume(ctx, run.ID); err != nil {
			return "", http.StatusServiceUnavailable, "resume the run: " + redact.Text(err.Error())
		}
		return "resumed", 0, ""
	}
	approve := verb == "approve"
	wt, problem := pickWait(run, form.Get("wait"))
	if problem != "" {
		return "", http.StatusConflict, problem
	}
	var data json.RawMessage
	if s := strings.TrimSpace(form.Get("data")); s != "" {
		if len(s) > MaxDataBytes || !json.Valid([]byte(s)) {
			return "", http.StatusBadRequest, fmt.Sprintf("the answer is not JSON (of at most %d bytes): write a JSON value, e.g. {\"note\": \"ok\"}", MaxDataBytes)
		}
		data = json.RawMessage(s)
	}
	var res durable.Resolution
	switch {
	case wt.Kind == durable.WaitApprove && approve:
		res = durable.Resolution{Kind: durable.ResolvedApproved, Data: data}
	case wt.Kind == durable.WaitApprove:
		res = durable.Resolution{Kind: durable.ResolvedRejected, Data: data}
	case wt.Kind == durable.WaitElicit && !approve:
		res = durable.Resolution{Kind: durable.ResolvedDeclined}
	case wt.Kind == durable.WaitElicit:
		if len(data) == 0 || data[0] != '{' {
			return "", http.StatusBadRequest, "the run waits for a form: answer it with a JSON object matching its schema"
		}
		res = durable.Resolution{Kind: durable.ResolvedAnswered, Data: data}
	default:
		return "", http.StatusConflict, fmt.Sprintf("the run waits for %s, which no person decides: approve and reject resolve approve: and elicit: waits only", wt.Kind)
	}
	if len(run.Waits) > 0 {
		res.Key = wt.Key // one of several: this one only
	}
	res.By = by
	_, err := store.Resolve(ctx, run.ID, res)
	if errors.Is(err, durable.ErrNotWaiting) {
		return "", http.StatusConflict, "the run is not waiting any more: it was resolved already (the first resolution wins)"
	}
	if err != nil {
		return "", http.StatusServiceUnavailable, verb + " the run: " + redact.Text(err.Error())
	}
	return res.Kind, 0, ""
}

// pickWait is the wait key names among those run waits for (its only one
// when key is empty), or why there is none.
func pickWait(run durable.Run, key string) (durable.Wait, string) {
	if run.Wait == nil && len(run.Waits) == 0 {
		if run.State.Terminal() {
			return durable.Wait{}, fmt.Sprintf("the run has ended (%s): it waits for nothing", run.State)
		}
		return durable.Wait{}, fmt.Sprintf("the run is %s: it waits for nothing (resolved already, or not parked yet)", run.State)
	}
	if len(run.Waits) == 0 {
		if key != "" && run.Wait.Key != key {
			return durable.Wait{}, fmt.Sprintf("the run waits for %s %q, not %q: reload the page", run.Wait.Kind, console.Clip(run.Wait.Key, 100), console.Clip(key, 100))
		}
		return *run.Wait, ""
	}
	for _, w := range run.Waits {
		if w.Key == key || key == "" && len(run.Waits) == 1 {
			return w, ""
		}
	}
	if key == "" {
		return durable.Wait{}, fmt.Sprintf("the run waits for %d things at once: decide each from its own form", len(run.Waits))
	}
	return durable.Wait{}, fmt.Sprintf("the run waits for nothing with key %q: it may have been answered already; reload the page", console.Clip(key, 100))
}

type errorData struct {
	Status  int
	Message string
	Back    string
}

func (h *handler) fail(w http.ResponseWriter, r *http.Request, status int, msg, back string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	h.m.Render(w, r, console.View{Title: "Runs", Active: "/runs", Body: errorTmpl, Data: errorData{Status: status, Message: msg, Back: back}})
}

// exchangeText shows a checkpointed exchange (an exchange.Snapshot) as
// indented JSON with readable names, URLs' secrets masked and the
// configured secrets replaced, cut at max bytes.
func exchangeText(raw json.RawMessage, max int) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	var text []byte
	if snap, err := exchange.DecodeSnapshot(raw); err == nil {
		view := map[string]any{"body": snap.Body}
		if len(snap.Headers) > 0 {
			view["headers"] = snap.Headers
		}
		if len(snap.Variables) > 0 {
			view["variables"] = snap.Variables
		}
		if snap.Exception != nil {
			view["error"] = snap.Exception.Message
		}
		text, err = json.MarshalIndent(view, "", "  ")
		if err != nil {
			text = nil
		}
	}
	if text == nil {
		var b bytes.Buffer
		if json.Indent(&b, raw, "", "  ") != nil {
			b.Reset()
			b.Write(raw)
		}
		text = b.Bytes()
	}
	s := redact.Text(string(text))
	if len(s) > max {
		return console.Clip(s, max), true
	}
	return s, false
}
