package management

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/pkg/exchange"
)

// listRuns is a store of fixed runs that records the filters it is given.
type listRuns struct {
	runs    []durable.Run
	filters []durable.Filter
	fail    error
}

func (l *listRuns) Start(context.Context, string, *exchange.Exchange, durable.StartOptions) (durable.Run, error) {
	return durable.Run{}, errors.New("not served")
}
func (l *listRuns) Await(context.Context, string) (durable.Run, error) {
	return durable.Run{}, errors.New("not served")
}
func (l *listRuns) Get(_ context.Context, id string) (durable.Run, error) {
	if l.fail != nil {
		return durable.Run{}, l.fail
	}
	for _, r := range l.runs {
		if r.ID == id {
			return r, nil
		}
	}
	return durable.Run{}, durable.ErrNotFound
}
func (l *listRuns) List(_ context.Context, f durable.Filter) ([]durable.Run, error) {
	l.filters = append(l.filters, f)
	if l.fail != nil {
		return nil, l.fail
	}
	var out []durable.Run
	for _, r := range l.runs {
		if len(out) < f.Limit {
			out = append(out, r)
		}
	}
	return out, nil
}
func (l *listRuns) Steps(_ context.Context, id string) ([]durable.StepRecord, error) {
	if id == "r1" {
		return []durable.StepRecord{{Index: 0, Name: "helix.yaml:3:5 set-body", Bytes: 200}}, nil
	}
	return nil, nil
}
func (l *listRuns) Cancel(context.Context, string) (durable.Run, error) {
	return durable.Run{}, errors.New("not served")
}
func (l *listRuns) Resolve(context.Context, string, durable.Resolution) (durable.Run, error) {
	return durable.Run{}, errors.New("not served")
}
func (l *listRuns) Resume(context.Context, string) (durable.Run, error) {
	return durable.Run{}, errors.New("not served")
}

func serveRuns(t *testing.T, store durable.Runs) func(method, path string) (int, string) {
	t.Helper()
	s := New(Options{Logger: quiet(), Runs: func() durable.Runs { return store }})
	h := s.Handler()
	return func(method, path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		if ct := rec.Header().Get("Content-Type"); rec.Code != http.StatusMethodNotAllowed && method == http.MethodGet && ct != "application/json" {
			t.Errorf("%s %s: Content-Type %q", method, path, ct)
		}
		return rec.Code, rec.Body.String()
	}
}

func TestRunsEndpoints(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	store := &listRuns{runs: []durable.Run{
		{ID: "r2", Workflow: "orders", State: durable.StateInputRequired, Wait: &durable.Wait{Kind: durable.WaitApprove}, CreatedAt: t0},
		{ID: "r1", Workflow: "orders", State: durable.StateCompleted, Result: json.RawMessage(`{"body":"big"}`), CreatedAt: t0},
	}}
	do := serveRuns(t, store)

	code, body := do("GET", "/runs?workflow=orders&state=completed,input_required&state=failed&limit=1")
	var page runsPage
	if code != 200 || json.Unmarshal([]byte(body), &page) != nil {
		t.Fatalf("GET /runs: %d %s", code, body)
	}
	want := durable.Filter{Workflow: "orders", Limit: 1,
		States: []durable.State{durable.StateCompleted, durable.StateInputRequired, durable.StateFailed}}
	if !reflect.DeepEqual(store.filters[0], want) {
		t.Errorf("filter %+v, want %+v", store.filters[0], want)
	}
	if len(page.Runs) != 1 || page.Runs[0].ID != "r2" || page.Next != "r2" {
		t.Errorf("page %+v", page)
	}

	code, body = do("GET", "/runs")
	if code != 200 || strings.Contains(body, "big") || strings.Contains(body, `"next"`) {
		t.Errorf("a list carries results, or a next cursor on a short page: %d %s", code, body)
	}
	if store.filters[1].Limit != 100 {
		t.Errorf("default limit %d", store.filters[1].Limit)
	}

	code, body = do("GET", "/runs/r1")
	var detail runDetail
	if code != 200 || json.Unmarshal([]byte(body), &detail) != nil || detail.Run.ID != "r1" || strings.Join(strings.Fields(string(detail.Run.Result)), "") != `{"body":"big"}` ||
		len(detail.Steps) != 1 || detail.Steps[0].Bytes != 200 {
		t.Errorf("GET /runs/r1: %d %s", code, body)
	}
	if code, body = do("GET", "/runs/r2"); code != 200 || !strings.Contains(body, `"steps": []`) {
		t.Errorf("a run without steps: %d %s", code, body)
	}

	for _, tc := range []struct {
		path string
		code int
		msg  string
	}{
		{"/runs/nope", 404, `no run \"nope\"`},
		{"/runs?limit=0", 400, "use a number from 1 to 1000"},
		{"/runs?limit=5000", 400, "use a number from 1 to 1000"},
		{"/runs?state=done", 400, `state \"done\": use working`},
	} {
		if code, body := do("GET", tc.path); code != tc.code || !strings.Contains(body, tc.msg) {
			t.Errorf("GET %s: %d %s; want %d and %q", tc.path, code, body, tc.code, tc.msg)
		}
	}
	// Nothing changes a run through the management listener.
	for _, path := range []string{"/runs/r2", "/runs/r2/approve", "/runs/r2/cancel"} {
		if code, _ := do("POST", path); code != http.StatusMethodNotAllowed && code != http.StatusNotFound {
			t.Errorf("POST %s: %d", path, code)
		}
	}
}

func TestRunsEndpointsWithoutAStoreOrWhenItFails(t *testing.T) {
	t.Parallel()
	do := serveRuns(t, nil)
	if code, body := do("GET", "/runs"); code != 404 || !strings.Contains(body, "no durable runs") {
		t.Errorf("no store: %d %s", code, body)
	}
	do = serveRuns(t, &listRuns{fail: errors.New("connect to postgres://helix:s3cret@db/helix failed")})
	for _, path := range []string{"/runs", "/runs/r1"} {
		code, body := do("GET", path)
		if code != http.StatusServiceUnavailable || strings.Contains(body, "s3cret") || !strings.Contains(body, "failed") {
			t.Errorf("GET %s on a failing store: %d %s", path, code, body)
		}
	}
}
