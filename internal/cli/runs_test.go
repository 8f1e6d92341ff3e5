package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/pkg/exchange"
)

// memRuns is a durable store in memory that records what the commands ask of it.
type memRuns struct {
	mu       sync.Mutex
	runs     map[string]durable.Run
	steps    map[string][]durable.StepRecord
	filters  []durable.Filter
	resolved []durable.Resolution
	resumed  []string
	opened   []string // the files each open was given
	closed   int
}

func (m *memRuns) open(_ *cobra.Command, files []string) (durable.Runs, func(), error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.opened = append(m.opened, strings.Join(files, " "))
	return m, func() { m.mu.Lock(); m.closed++; m.mu.Unlock() }, nil
}

func (m *memRuns) Start(context.Context, string, *exchange.Exchange, durable.StartOptions) (durable.Run, error) {
	return durable.Run{}, errors.New("not used by the CLI")
}

func (m *memRuns) Await(context.Context, string) (durable.Run, error) {
	return durable.Run{}, errors.New("not used by the CLI")
}

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
	m.filters = append(m.filters, f)
	var out []durable.Run
	for _, id := range []string{"r3", "r2", "r1"} { // newest first
		r, ok := m.runs[id]
		if !ok || (f.Workflow != "" && r.Workflow != f.Workflow) {
			continue
		}
		if len(f.States) > 0 && !slices.Contains(f.States, r.State) {
			continue
		}
		out = append(out, r)
		if len(out) == f.Limit {
			break
		}
	}
	return out, nil
}

func (m *memRuns) Steps(_ context.Context, id string) ([]durable.StepRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.steps[id], nil
}

func (m *memRuns) Cancel(_ context.Context, id string) (durable.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
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
	r.Wait, r.State, r.Segment = nil, durable.StateWorking, r.Segment+1
	m.runs[id] = r
	return r, nil
}

func (m *memRuns) Resume(_ context.Context, id string) (durable.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.resumed = append(m.resumed, id)
	r := m.runs[id]
	r.State, r.Error = durable.StateWorking, ""
	m.runs[id] = r
	return r, nil
}

var t0 = time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)

func newMemRuns() *memRuns {
	return &memRuns{
		runs: map[string]durable.Run{
			"r1": {ID: "r1", Workflow: "orders", Kind: "workflow", State: durable.StateCompleted, Step: 3, Attempts: 2,
				CreatedAt: t0, UpdatedAt: t0.Add(40 * time.Millisecond), Result: json.RawMessage(`{"body":{"total":42}}`)},
			"r2": {ID: "r2", Workflow: "orders", Kind: "workflow", State: durable.StateInputRequired, Step: 1, Attempts: 1,
				CreatedAt: t0.Add(time.Second), UpdatedAt: t0.Add(2 * time.Second), Principal: "alice",
				Wait: &durable.Wait{Kind: durable.WaitApprove, Key: "approve-1", Message: "Ship order 7?", Due: t0.Add(24 * time.Hour)}},
			"r3": {ID: "r3", Workflow: "refunds\x1b[2J", Kind: "tool", State: durable.StateFailed, Step: 2, Attempts: 1,
				CreatedAt: t0.Add(3 * time.Second), UpdatedAt: t0.Add(4 * time.Second), Error: "step 2 (to pay): 503 Service Unavailable"},
		},
		steps: map[string][]durable.StepRecord{
			"r1": {
				{Segment: 0, Index: 0, Name: "helix.yaml:9:9 set-body", At: t0.Add(2 * time.Millisecond), Bytes: 310},
				{Segment: 0, Index: 1, Name: "helix.yaml:11:9 approve", At: t0.Add(5 * time.Millisecond), Bytes: 320},
				{Segment: 1, Index: 1, Name: "helix.yaml:11:9 approve", At: t0.Add(30 * time.Millisecond), Bytes: 340},
				{Segment: 1, Index: 2, Name: "helix.yaml:14:9 to", At: t0.Add(40 * time.Millisecond), Bytes: 1024, Error: "handled: dead-lettered"},
			},
		},
	}
}

// runRuns runs helix with the runs commands on store m.
func runRuns(t *testing.T, m *memRuns, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runRunsWith(t, m.open, args...)
}

func runRunsWith(t *testing.T, open runStoreOpener, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	root := newRootCmd()
	for _, c := range root.Commands() {
		if c.Name() == "runs" {
			root.RemoveCommand(c)
		}
	}
	root.AddCommand(newRunsCmd(open))
	var out, errb bytes.Buffer
	code = executeRoot(context.Background(), root, args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s:\n got:\n%s\nwant:\n%s", golden, got, want)
	}
}

func TestRunsListTableAndFilters(t *testing.T) {
	t.Parallel()
	m := newMemRuns()
	code, out, errs := runRuns(t, m, "runs", "list", "a.yaml", "b.yaml")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	checkGolden(t, "runs_list.golden", out)
	if strings.Contains(out, "\x1b") {
		t.Error("a control sequence in a workflow name reached the terminal")
	}
	if m.opened[0] != "a.yaml b.yaml" || m.closed != 1 {
		t.Errorf("opened %v, closed %d", m.opened, m.closed)
	}

	code, out, errs = runRuns(t, m, "runs", "list", "a.yaml", "--workflow", "orders", "--state", "failed, input_required", "--limit", "1")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := durable.Filter{Workflow: "orders", States: []durable.State{durable.StateFailed, durable.StateInputRequired}, Limit: 1}
	if got := m.filters[1]; !reflect.DeepEqual(got, want) {
		t.Errorf("filter %+v, want %+v", got, want)
	}
	if !strings.Contains(out, "r2") || strings.Contains(out, "r1 ") || !strings.Contains(out, "the next page: --after r2") {
		t.Errorf("filtered page:\n%s", out)
	}
}

func TestRunsListJSON(t *testing.T) {
	t.Parallel()
	m := newMemRuns()
	code, out, _ := runRuns(t, m, "runs", "list", "a.yaml", "-o", "json", "--state", "completed")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	var runs []durable.Run
	if err := json.Unmarshal([]byte(out), &runs); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(runs) != 1 || runs[0].ID != "r1" || runs[0].State != durable.StateCompleted || compact(runs[0].Result) != `{"body":{"total":42}}` {
		t.Errorf("runs = %+v", runs)
	}
	// No match is an empty array, not null.
	_, out, _ = runRuns(t, m, "runs", "list", "a.yaml", "-o", "json", "--workflow", "none")
	if strings.TrimSpace(out) != "[]" {
		t.Errorf("no runs as JSON: %q", out)
	}
	_, out, _ = runRuns(t, m, "runs", "list", "a.yaml", "--workflow", "none")
	if out != "no runs\n" {
		t.Errorf("no runs as text: %q", out)
	}
}

func TestRunsBadFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "a.yaml", "--state", "done"}, `unknown state "done"; use working, input_required, waiting, completed, failed, cancelled`},
		{[]string{"list", "a.yaml", "-o", "yaml"}, `--output "yaml": use text or json`},
		{[]string{"list", "a.yaml", "--limit", "-3"}, "--limit -3: use a positive number"},
		{[]string{"show", "a.yaml"}, "requires at least 2 arg(s)"},
		{[]string{"approve", "a.yaml", "r2", "--data", "{oops"}, "--data: not JSON"},
		{[]string{"list"}, "requires at least 1 arg(s)"},
	} {
		m := newMemRuns()
		code, out, errs := runRuns(t, m, append([]string{"runs"}, tc.args...)...)
		if code != ExitConfig || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, errs, tc.want)
		}
		if len(m.opened) != 0 {
			t.Errorf("%v: the store was opened for a command with bad flags", tc.args)
		}
	}
}

func TestRunsShow(t *testing.T) {
	t.Parallel()
	m := newMemRuns()
	// A run that failed in Helix itself says so.
	m.runs["r4"] = durable.Run{ID: "r4", Workflow: "orders", Kind: "tool", State: durable.StateFailed, Step: 1, Attempts: 1, Internal: true,
		CreatedAt: t0.Add(5 * time.Second), UpdatedAt: t0.Add(6 * time.Second),
		Error: "checkpoint of step helix.yaml:12:9 transform is 2.0 MiB, over helix.durable_max_checkpoint 1.0 MiB"}
	var all strings.Builder
	for _, id := range []string{"r1", "r2", "r3", "r4"} {
		code, out, errs := runRuns(t, m, "runs", "show", "a.yaml", id)
		if code != ExitOK {
			t.Fatalf("%s: exit %d: %s", id, code, errs)
		}
		all.WriteString("$ helix runs show a.yaml " + id + "\n" + out)
	}
	checkGolden(t, "runs_show.golden", all.String())

	code, out, _ := runRuns(t, m, "runs", "show", "a.yaml", "r1", "-o", "json")
	var got struct {
		Run   durable.Run
		Steps []durable.StepRecord
	}
	if code != ExitOK || json.Unmarshal([]byte(out), &got) != nil || got.Run.ID != "r1" || len(got.Steps) != 4 || got.Steps[3].Bytes != 1024 {
		t.Errorf("show -o json: exit %d\n%s", code, out)
	}
}

func TestRunsUnknownRun(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"show", "resume", "cancel", "approve", "reject"} {
		m := newMemRuns()
		code, out, errs := runRuns(t, m, "runs", cmd, "a.yaml", "nope")
		if code != ExitConfig || out != "" || !strings.Contains(errs, `run "nope": no such run in this store (helix runs list shows the runs it has)`) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", cmd, code, out, errs)
		}
		if m.closed != 1 {
			t.Errorf("%s: the store was not closed", cmd)
		}
	}
}

func TestRunsResume(t *testing.T) {
	t.Parallel()
	m := newMemRuns()
	code, out, errs := runRuns(t, m, "runs", "resume", "a.yaml", "r3")
	if code != ExitOK || out != "run r3 resumed from step 2 (segment 0): working\n" || !reflect.DeepEqual(m.resumed, []string{"r3"}) {
		t.Fatalf("resume a failed run: exit %d %q %q, resumed %v", code, out, errs, m.resumed)
	}
	code, _, errs = runRuns(t, m, "runs", "resume", "a.yaml", "r1")
	if code != ExitRuntime || !strings.Contains(errs, "run r1 completed: there is nothing to resume") {
		t.Errorf("resume a completed run: exit %d %q", code, errs)
	}
	code, _, errs = runRuns(t, m, "runs", "resume", "a.yaml", "r2")
	if code != ExitRuntime || !strings.Contains(errs, "run r2 waits for approve: resolve the wait instead") {
		t.Errorf("resume a parked run: exit %d %q", code, errs)
	}
	m.runs["w1"] = durable.Run{ID: "w1", State: durable.StateWorking, Step: 1}
	code, _, errs = runRuns(t, m, "runs", "resume", "a.yaml", "w1")
	if code != ExitRuntime || !strings.Contains(errs, "run w1 is working: an instance may be running it now") {
		t.Errorf("resume a working run: exit %d %q", code, errs)
	}
	if len(m.resumed) != 1 {
		t.Errorf("resumed %v", m.resumed)
	}
	if code, _, errs = runRuns(t, m, "runs", "resume", "a.yaml", "w1", "--force"); code != ExitOK || len(m.resumed) != 2 {
		t.Errorf("resume a stuck run with --force: exit %d %q, resumed %v", code, errs, m.resumed)
	}
}

func TestRunsCancel(t *testing.T) {
	t.Parallel()
	m := newMemRuns()
	code, out, _ := runRuns(t, m, "runs", "cancel", "a.yaml", "r2")
	if code != ExitOK || out != "run r2: cancelled at step 1\n" {
		t.Fatalf("cancel: exit %d %q", code, out)
	}
	code, _, errs := runRuns(t, m, "runs", "cancel", "a.yaml", "r2")
	if code != ExitRuntime || !strings.Contains(errs, "run r2 has ended already (cancelled): there is nothing to cancel") {
		t.Errorf("cancel twice: exit %d %q", code, errs)
	}
}

func TestRunsApproveAndReject(t *testing.T) {
	t.Parallel()
	m := newMemRuns()
	code, out, errs := runRuns(t, m, "runs", "approve", "a.yaml", "r2", "--data", `{"note":"ok"}`, "--by", "bob")
	if code != ExitOK || out != "run r2: approved; it goes on from step 1 (working)\n" {
		t.Fatalf("approve: exit %d %q %q", code, out, errs)
	}
	want := durable.Resolution{Kind: durable.ResolvedApproved, Data: json.RawMessage(`{"note":"ok"}`), By: "bob"}
	if !reflect.DeepEqual(m.resolved, []durable.Resolution{want}) {
		t.Errorf("resolved %+v", m.resolved)
	}
	// A second decision finds nothing to decide.
	code, _, errs = runRuns(t, m, "runs", "reject", "a.yaml", "r2")
	if code != ExitRuntime || !strings.Contains(errs, "run r2 is working: it waits for nothing") {
		t.Errorf("reject after approve: exit %d %q", code, errs)
	}
	// A resolution that loses the race to another (the store says not waiting).
	m.runs["r2"] = durable.Run{ID: "r2", State: durable.StateInputRequired, Wait: &durable.Wait{Kind: durable.WaitApprove}}
	m.runs["race"] = durable.Run{ID: "race", State: durable.StateInputRequired, Wait: &durable.Wait{Kind: durable.WaitApprove}}
	racing := &racingRuns{memRuns: m}
	code, _, errs = runRunsWith(t, racing.open, "runs", "reject", "a.yaml", "race")
	if code != ExitRuntime || !strings.Contains(errs, "run race is not waiting any more: it was resolved already (the first resolution wins)") {
		t.Errorf("lost race: exit %d %q", code, errs)
	}

	code, _, _ = runRuns(t, m, "runs", "reject", "a.yaml", "r2")
	if code != ExitOK || m.resolved[len(m.resolved)-1].Kind != durable.ResolvedRejected || !strings.HasPrefix(m.resolved[len(m.resolved)-1].By, "cli") {
		t.Errorf("reject: exit %d, resolved %+v", code, m.resolved)
	}
}

// racingRuns is a store where another resolution always lands first.
type racingRuns struct{ *memRuns }

func (r *racingRuns) open(*cobra.Command, []string) (durable.Runs, func(), error) {
	return r, func() {}, nil
}

func (r *racingRuns) Resolve(context.Context, string, durable.Resolution) (durable.Run, error) {
	return durable.Run{}, durable.ErrNotWaiting
}

func TestRunsResolveByWaitKind(t *testing.T) {
	t.Parallel()
	m := newMemRuns()
	form := &durable.Wait{Kind: durable.WaitElicit, Key: "q1", Schema: json.RawMessage(`{"type":"object"}`)}
	m.runs["e1"] = durable.Run{ID: "e1", State: durable.StateInputRequired, Wait: form}
	code, _, errs := runRuns(t, m, "runs", "approve", "a.yaml", "e1")
	if code != ExitConfig || !strings.Contains(errs, "run e1 waits for a form: answer it with --data and a JSON object") {
		t.Errorf("approve a form without data: exit %d %q", code, errs)
	}
	if code, _, errs = runRuns(t, m, "runs", "approve", "a.yaml", "e1", "--data", `{"size":3}`); code != ExitOK {
		t.Fatalf("answer a form: exit %d %q", code, errs)
	}
	if got := m.resolved[0]; got.Kind != durable.ResolvedAnswered || string(got.Data) != `{"size":3}` {
		t.Errorf("resolved %+v", got)
	}
	m.runs["e2"] = durable.Run{ID: "e2", State: durable.StateInputRequired, Wait: form}
	if code, _, _ = runRuns(t, m, "runs", "reject", "a.yaml", "e2"); code != ExitOK || m.resolved[1].Kind != durable.ResolvedDeclined {
		t.Errorf("decline a form: exit %d, %+v", code, m.resolved)
	}
	m.runs["s1"] = durable.Run{ID: "s1", State: durable.StateWaiting, Wait: &durable.Wait{Kind: durable.WaitSleep, Due: t0}}
	code, _, errs = runRuns(t, m, "runs", "approve", "a.yaml", "s1")
	if code != ExitRuntime || !strings.Contains(errs, "run s1 waits for sleep, which no person decides") {
		t.Errorf("approve a timer: exit %d %q", code, errs)
	}
	code, _, errs = runRuns(t, m, "runs", "approve", "a.yaml", "r1")
	if code != ExitRuntime || !strings.Contains(errs, "run r1 has ended (completed): it waits for nothing") {
		t.Errorf("approve an ended run: exit %d %q", code, errs)
	}
	if len(m.resolved) != 2 {
		t.Errorf("resolved %+v", m.resolved)
	}
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return err.Error()
	}
	return b.String()
}
