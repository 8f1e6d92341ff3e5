package management

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/redact"
)

// RunsPath lists the application's durable runs; RunsPath/{id} shows one.
//
// The routes read only. Cancelling, resuming and approving runs changes what a
// workflow does and who decided it, which an unauthenticated listener must not
// offer: operators do it with helix runs (which needs the store's credentials),
// and people approve through the run's own channels (MCP elicitation, the signed
// callback URL).
const RunsPath = "/runs"

// maxRunsPage bounds one page of GET /runs.
const maxRunsPage = 1000

// runsHandler serves GET /runs and GET /runs/{id} from the store runs returns
// (nil: the application has no durable workflow).
type runsHandler struct{ runs func() durable.Runs }

type runsPage struct {
	Runs []durable.Run `json:"runs"`
	// Next is the cursor of the next page (?after=), when this page is full.
	Next string `json:"next,omitempty"`
}

type runDetail struct {
	Run   durable.Run          `json:"run"`
	Steps []durable.StepRecord `json:"steps"`
}

func (h runsHandler) store(w http.ResponseWriter) durable.Runs {
	var r durable.Runs
	if h.runs != nil {
		r = h.runs()
	}
	if r == nil {
		writeJSONError(w, http.StatusNotFound, "this application has no durable runs: no workflow, tool or agent is durable")
	}
	return r
}

func (h runsHandler) list(w http.ResponseWriter, r *http.Request) {
	store := h.store(w)
	if store == nil {
		return
	}
	q := r.URL.Query()
	f := durable.Filter{Workflow: q.Get("workflow"), After: q.Get("after"), Limit: 100}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxRunsPage {
			writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("limit %q: use a number from 1 to %d", s, maxRunsPage))
			return
		}
		f.Limit = n
	}
	for _, s := range q["state"] {
		for _, part := range strings.Split(s, ",") {
			st := durable.State(strings.TrimSpace(part))
			if !knownState(st) {
				writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("state %q: use working, input_required, waiting, completed, failed or cancelled", part))
				return
			}
			f.States = append(f.States, st)
		}
	}
	list, err := store.List(r.Context(), f)
	if err != nil {
		writeJSONError(w, http.StatusServiceUnavailable, "list the runs: "+redact.Text(err.Error()))
		return
	}
	page := runsPage{Runs: list}
	if page.Runs == nil {
		page.Runs = []durable.Run{}
	}
	for i := range page.Runs {
		// A run's result may be large; GET /runs/{id} has it.
		page.Runs[i].Result = nil
	}
	if len(list) == f.Limit {
		page.Next = list[len(list)-1].ID
	}
	writeJSONBody(w, http.StatusOK, page)
}

func knownState(s durable.State) bool {
	switch s {
	case durable.StateWorking, durable.StateInputRequired, durable.StateWaiting,
		durable.StateCompleted, durable.StateFailed, durable.StateCancelled:
		return true
	}
	return false
}

func (h runsHandler) show(w http.ResponseWriter, r *http.Request) {
	store := h.store(w)
	if store == nil {
		return
	}
	id := r.PathValue("id")
	run, err := store.Get(r.Context(), id)
	if errors.Is(err, durable.ErrNotFound) {
		writeJSONError(w, http.StatusNotFound, fmt.Sprintf("no run %q", id))
		return
	}
	if err != nil {
		writeJSONError(w, http.StatusServiceUnavailable, "read the run: "+redact.Text(err.Error()))
		return
	}
	steps, err := store.Steps(r.Context(), id)
	if err != nil {
		writeJSONError(w, http.StatusServiceUnavailable, "read the run's steps: "+redact.Text(err.Error()))
		return
	}
	if steps == nil {
		steps = []durable.StepRecord{}
	}
	writeJSONBody(w, http.StatusOK, runDetail{Run: run, Steps: steps})
}

func writeJSONError(w http.ResponseWriter, status int, msg string) {
	writeJSONBody(w, status, map[string]string{"error": msg})
}

func writeJSONBody(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encode the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
