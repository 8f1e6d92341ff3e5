package runs_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/console"
	"github.com/arvenza/helix/internal/console/runs"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/pkg/exchange"
)

// memRuns is an in-memory durable store that records what was asked of it.
type memRuns struct {
	mu       sync.Mutex
	runs     map[string]durable.Run
	steps    map[string][]durable.StepRecord
	resolved []durable.Resolution
	did      []string
	// checkpoints are every run's (the page asks for one run's).
	checkpoints []durable.Checkpoint
}

func (m *memRuns) Checkpoints(context.Context, string) ([]durable.Checkpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.checkpoints, nil
}

func newMem(rs ...durable.Run) *memRuns {
	m := &memRuns{runs: map[string]durable.Run{}, steps: map[string][]durable.StepRecord{}}
	for _, r := range rs {
		m.runs[r.ID] = r
	}
	return m
}

func (m *memRuns) Start(context.Context, string, *exchange.Exchange, durable.StartOptions) (durable.Run, error) {
	panic("not used")
}
func (m *memRuns) Await(context.Context, string) (durable.Run, error) { panic("not used") }
func (m *memRuns) Get(_ context.Context, id string) (durable.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[id]
	if !ok {
		return r, durable.ErrNotFound
	}
	return r, nil
}
func (m *memRuns) List(_ context.Context, f durable.Filter) ([]durable.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []durable.Run
	for _, r := range m.runs {
		if f.Workflow != "" && r.Workflow != f.Workflow || len(f.States) > 0 && f.States[0] != r.State || f.After != "" && r.ID <= f.After {
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out[:min(len(out), f.Limit)], nil
}
func (m *memRuns) Steps(_ context.Context, id string) ([]durable.StepRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.steps[id], nil
}
func (m *memRuns) Cancel(_ context.Context, id string) (durable.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.did = append(m.did, "cancel "+id)
	r := m.runs[id]
	r.State = durable.StateCancelled
	m.runs[id] = r
	return r, nil
}
func (m *memRuns) Resolve(_ context.Context, id string, res durable.Resolution) (durable.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.runs[id]
	if r.Wait == nil {
		return r, durable.ErrNotWaiting
	}
	m.resolved = append(m.resolved, res)
	m.did = append(m.did, "resolve "+id)
	r.Wait, r.State = nil, durable.StateWorking
	m.runs[id] = r
	return r, nil
}
func (m *memRuns) Resume(_ context.Context, id string) (durable.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.did = append(m.did, "resume "+id)
	return m.runs[id], nil
}

type source struct{ r durable.Runs }

func (s source) Runs() durable.Runs { return s.r }

// serve mounts the page; the Authorization header names the role.
func serve(t *testing.T, store durable.Runs) string {
	t.Helper()
	src := source{}
	if store != nil {
		src.r = store
	}
	m := console.NewMux(console.Options{Pages: []console.Page{runs.New(src)},
		Auth: console.AuthenticatorFunc(func(r *http.Request) (console.Principal, error) {
			switch r.Header.Get("Authorization") {
			case "Bearer op":
				return console.Principal{Name: "olga", Role: console.RoleOperator}, nil
			case "Bearer view":
				return console.Principal{Name: "vic", Role: console.RoleViewer}, nil
			}
			return console.Principal{}, fmt.Errorf("no key")
		})})
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	return srv.URL + "/console"
}

func do(t *testing.T, method, u, key string, form url.Values) (int, string, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, u, body)
	req.Header.Set("Authorization", "Bearer "+key)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header.Get("Location")
}

var t0 = time.Date(2026, 12, 5, 7, 0, 0, 0, time.UTC)

func waiting(id string) durable.Run {
	return durable.Run{ID: id, Workflow: "ship", State: durable.StateInputRequired, Step: 1, CreatedAt: t0, UpdatedAt: t0,
		Wait: &durable.Wait{Kind: durable.WaitApprove, Key: "q1", Message: "Ship order 7?"}}
}

// Without a durable workflow the page says how to make one durable.
func TestNothingDurable(t *testing.T) {
	t.Parallel()
	base := serve(t, nil)
	code, body, _ := do(t, "GET", base+"/runs", "view", nil)
	if code != 200 || !strings.Contains(body, "durable: true") || !strings.Contains(body, "Nothing in this application is durable") {
		t.Errorf("%d %s", code, body)
	}
	if code, _, _ := do(t, "GET", base+"/runs/x", "view", nil); code != 404 {
		t.Errorf("a run without a store: %d", code)
	}
}

// The list filters by state and workflow, pages with a cursor, and refuses
// an unknown state saying which ones exist.
func TestListFiltersAndPages(t *testing.T) {
	t.Parallel()
	m := newMem()
	for i := range runs.PageSize + 5 {
		r := durable.Run{ID: fmt.Sprintf("r%03d", i), Workflow: "orders", State: durable.StateCompleted, CreatedAt: t0, UpdatedAt: t0}
		if i%10 == 0 {
			r = waiting(r.ID)
		}
		m.runs[r.ID] = r
	}
	base := serve(t, m)
	code, body, _ := do(t, "GET", base+"/runs", "view", nil)
	if code != 200 || !strings.Contains(body, fmt.Sprintf("Showing %d runs", runs.PageSize)) ||
		!strings.Contains(body, `href="/console/runs?after=r049"`) || strings.Contains(body, "r050") {
		t.Errorf("first page: %d %s", code, body)
	}
	_, body, _ = do(t, "GET", base+"/runs?after=r049", "view", nil)
	if !strings.Contains(body, "Showing 5 runs") || !strings.Contains(body, "r054") || !strings.Contains(body, "First page") {
		t.Errorf("second page: %s", body)
	}
	_, body, _ = do(t, "GET", base+"/runs?state=input_required", "view", nil)
	if strings.Count(body, `data-state="input_required"`) != 6 || strings.Contains(body, `data-state="completed"`) || !strings.Contains(body, "an approval: Ship order 7?") {
		t.Errorf("state filter: %s", body)
	}
	_, body, _ = do(t, "GET", base+"/runs?workflow=other", "view", nil)
	if !strings.Contains(body, "No run matches") {
		t.Errorf("workflow filter: %s", body)
	}
	code, body, _ = do(t, "GET", base+"/runs?state="+url.QueryEscape("<i>x</i>"), "view", nil)
	if code != 400 || !strings.Contains(body, "use working, input_required") || strings.Contains(body, "<i>x") {
		t.Errorf("bad state: %d %s", code, body)
	}
}

// An operator sees a waiting run's approve and reject buttons and approves
// through the store's Resolve, as who they are; a viewer sees no button and
// gets 403 for the same POST.
func TestApproveAsOperatorNotAsViewer(t *testing.T) {
	t.Parallel()
	m := newMem(waiting("run-1"))
	m.steps["run-1"] = []durable.StepRecord{{Segment: 0, Index: 0, Name: "set-body", At: t0.Add(time.Millisecond), Bytes: 2048}}
	base := serve(t, m)
	_, body, _ := do(t, "GET", base+"/runs/run-1", "view", nil)
	if strings.Contains(body, "/console/runs/run-1/") || strings.Contains(body, `id="run-approve"`) || !strings.Contains(body, "you are signed in as a viewer") {
		t.Errorf("a viewer sees an action: %s", body)
	}
	if !strings.Contains(body, "set-body") || !strings.Contains(body, "2.0 KiB") || !strings.Contains(body, "1ms") {
		t.Errorf("history: %s", body)
	}
	if code, _, _ := do(t, "POST", base+"/runs/run-1/approve", "view", url.Values{}); code != 403 {
		t.Errorf("a viewer's approve: %d", code)
	}
	if len(m.did) != 0 {
		t.Fatalf("a viewer acted: %v", m.did)
	}
	_, body, _ = do(t, "GET", base+"/runs/run-1", "op", nil)
	for _, want := range []string{`action="/console/runs/run-1/approve"`, `action="/console/runs/run-1/reject"`, `id="run-approve"`, `action="/console/runs/run-1/cancel"`} {
		if !strings.Contains(body, want) {
			t.Errorf("operator's page has no %q", want)
		}
	}
	if strings.Contains(body, `id="run-resume"`) {
		t.Error("a waiting run offers resume (it must be resolved instead)")
	}
	code, _, loc := do(t, "POST", base+"/runs/run-1/approve", "op", url.Values{})
	if code != http.StatusSeeOther || loc != "/console/runs/run-1?done=approved" {
		t.Fatalf("approve: %d %s", code, loc)
	}
	if len(m.resolved) != 1 || m.resolved[0].Kind != durable.ResolvedApproved || m.resolved[0].By != "console:olga" {
		t.Errorf("resolved %+v", m.resolved)
	}
	_, body, _ = do(t, "GET", base+loc[len("/console"):], "op", nil)
	if !strings.Contains(body, "Approved: the run goes on.") {
		t.Errorf("after approve: %s", body)
	}
	// A second decision is refused with why.
	code, body, _ = do(t, "POST", base+"/runs/run-1/reject", "op", url.Values{})
	if code != http.StatusConflict || !strings.Contains(body, "it waits for nothing") {
		t.Errorf("second decision: %d %s", code, body)
	}
}

// The actions check what helix runs checks, and say what to do instead.
func TestActionsAreChecked(t *testing.T) {
	t.Parallel()
	form := durable.Run{ID: "f", Workflow: "w", State: durable.StateInputRequired, CreatedAt: t0, UpdatedAt: t0,
		Wait: &durable.Wait{Kind: durable.WaitElicit, Key: "k"}}
	sleeping := durable.Run{ID: "s", Workflow: "w", State: durable.StateWaiting, CreatedAt: t0, UpdatedAt: t0, Wait: &durable.Wait{Kind: durable.WaitSleep}}
	m := newMem(form, sleeping,
		durable.Run{ID: "done", Workflow: "w", State: durable.StateCompleted, CreatedAt: t0, UpdatedAt: t0},
		durable.Run{ID: "busy", Workflow: "w", State: durable.StateWorking, CreatedAt: t0, UpdatedAt: t0},
		durable.Run{ID: "bad", Workflow: "w", State: durable.StateFailed, CreatedAt: t0, UpdatedAt: t0})
	base := serve(t, m)
	for _, c := range []struct {
		path string
		form url.Values
		code int
		want string
	}{
		{"/runs/done/resume", nil, 409, "completed: there is nothing to resume"},
		{"/runs/done/cancel", nil, 409, "ended already (completed)"},
		{"/runs/busy/resume", nil, 409, "an instance may be running it now"},
		{"/runs/s/resume", nil, 409, "waits for sleep: approve or reject it instead"},
		{"/runs/s/approve", nil, 409, "which no person decides"},
		{"/runs/f/approve", nil, 400, "answer it with a JSON object"},
		{"/runs/f/approve", url.Values{"data": {"{not json"}}, 400, "is not JSON"},
		{"/runs/nope/cancel", nil, 404, "no run"},
	} {
		if c.form == nil {
			c.form = url.Values{}
		}
		code, body, _ := do(t, "POST", base+c.path, "op", c.form)
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d, want %d %q: %s", c.path, code, c.code, c.want, body)
		}
	}
	if len(m.did) != 0 {
		t.Errorf("refused actions reached the store: %v", m.did)
	}
	for _, c := range []struct {
		path string
		form url.Values
		did  string
	}{
		{"/runs/busy/resume", url.Values{"force": {"1"}}, "resume busy"},
		{"/runs/bad/resume", nil, "resume bad"},
		{"/runs/busy/cancel", nil, "cancel busy"},
		{"/runs/f/approve", url.Values{"data": {`{"size": 3}`}}, "resolve f"},
	} {
		if c.form == nil {
			c.form = url.Values{}
		}
		if code, body, _ := do(t, "POST", base+c.path, "op", c.form); code != http.StatusSeeOther {
			t.Errorf("%s: %d %s", c.path, code, body)
		}
		if m.did[len(m.did)-1] != c.did {
			t.Errorf("%s: did %v", c.path, m.did)
		}
	}
	if r := m.resolved[0]; r.Kind != durable.ResolvedAnswered || string(r.Data) != `{"size": 3}` {
		t.Errorf("form answer %+v", r)
	}
}

// A run's result and error are shown bounded; ids from the URL are escaped.
func TestShowIsBoundedAndEscaped(t *testing.T) {
	t.Parallel()
	ex := exchange.NewWithBody(exchange.InOut, strings.Repeat("x", 10_000))
	ex.In().SetHeader("Callback", "https://u:pw@example.com/?token=abc")
	big, err := exchange.TakeSnapshot(ex).Encode(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	small := exchange.NewWithBody(exchange.InOut, "order 7 placed")
	small.In().SetHeader("Next", "https://api.example.com/x?key=s3cr3t")
	cp, _ := exchange.TakeSnapshot(small).Encode(1 << 20)
	m := newMem(durable.Run{ID: "r", Workflow: "w", State: durable.StateFailed, CreatedAt: t0, UpdatedAt: t0,
		Result: big, Error: `Get "https://api.example.com/x?key=s3cr3t": refused`})
	for i := range runs.MaxSteps + 10 {
		m.steps["r"] = append(m.steps["r"], durable.StepRecord{Index: i, Name: fmt.Sprintf("step-%d", i), At: t0})
	}
	m.checkpoints = []durable.Checkpoint{{Segment: 0, Index: runs.MaxSteps + 9, Name: fmt.Sprintf("step-%d", runs.MaxSteps+9), Exchange: cp}}
	base := serve(t, m)
	_, body, _ := do(t, "GET", base+"/runs/r", "view", nil)
	if !strings.Contains(body, "[cut: the result is longer]") || strings.Count(body, "x") > runs.MaxResultBytes+2000 {
		t.Errorf("the result is not cut (%d bytes)", len(body))
	}
	if strings.Contains(body, "s3cr3t") || strings.Contains(body, ":pw@") || strings.Contains(body, "token=abc") {
		t.Error("a secret of a URL is shown")
	}
	if !strings.Contains(body, `&#34;body&#34;: &#34;order 7 placed&#34;`) || !strings.Contains(body, "&#34;Next&#34;: &#34;https://api.example.com/x?key=***&#34;") {
		t.Errorf("the last step's checkpoint is not shown (readably, redacted): %s", body[strings.Index(body, "run-steps"):])
	}
	if !strings.Contains(body, fmt.Sprintf("showing the latest %d of %d", runs.MaxSteps, runs.MaxSteps+10)) || strings.Contains(body, ">step-9<") {
		t.Errorf("steps are not bounded")
	}
	code, body, _ := do(t, "GET", base+"/runs/"+url.PathEscape("<script>x</script>"), "view", nil)
	if code != 404 || strings.Contains(body, "<script>x") {
		t.Errorf("hostile id: %d %s", code, body)
	}
}
