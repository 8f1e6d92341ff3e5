package durable_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// A run fails either in one of its steps (the step's work said no: a tool
// error) or in Helix itself (no step gave an answer): Run.Internal tells them
// apart, for MCP Tasks (failed with a JSON-RPC error) and for operators.

// runToEnd starts a run of wf on a and waits for its end.
func runToEnd(t *testing.T, a *app, id string) durable.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := a.rt.Start(ctx, "wf", exchange.NewWithBody(exchange.InOut, "in"), durable.StartOptions{RunID: id}); err != nil {
		t.Fatal(err)
	}
	run, err := a.rt.Await(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func TestAStepThatFailsIsNoInternalFailure(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	fail := step{name: "w.yaml:5:5 fail", runs: &n, fn: func(context.Context, *exchange.Exchange) error {
		return errors.New("the database said no")
	}}
	a := startApp(t, t.TempDir(), fail)
	run := runToEnd(t, a, "r1")
	if run.State != durable.StateFailed || run.Internal || !strings.Contains(run.Error, "the database said no") {
		t.Fatalf("run %+v", run)
	}
}

func TestACheckpointOverTheLimitIsAnInternalFailure(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	big := step{name: "w.yaml:9:5 big", runs: &n, fn: func(_ context.Context, ex *exchange.Exchange) error {
		ex.In().SetBody(strings.Repeat("x", 100<<10))
		return nil
	}}
	a := startApp(t, t.TempDir(), big)
	run := runToEnd(t, a, "r1")
	if run.State != durable.StateFailed || !run.Internal || !strings.Contains(run.Error, "over helix.durable_max_checkpoint 64 KiB") {
		t.Fatalf("run %+v", run)
	}
	// The result is the failure alone, not the body no checkpoint could keep.
	if len(run.Result) > 4<<10 {
		t.Fatalf("the result keeps %d bytes", len(run.Result))
	}
	s, err := exchange.DecodeSnapshot(run.Result)
	if err != nil || s.Exception == nil || s.Body != nil {
		t.Fatalf("result %s, %v", run.Result, err)
	}
	// The caller of a plain run gets the same failure as its error.
	ex := exchange.NewWithBody(exchange.InOut, "in")
	if err := a.ec.Run(context.Background(), "wf", ex); err == nil || !strings.Contains(err.Error(), "over helix.durable_max_checkpoint") {
		t.Fatalf("err %v", err)
	}
}

func TestACheckpointThatCannotBeEncodedIsAnInternalFailure(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	ch := step{name: "w.yaml:9:5 chan", runs: &n, fn: func(_ context.Context, ex *exchange.Exchange) error {
		ex.In().SetBody(map[string]any{"c": make(chan int)})
		return nil
	}}
	a := startApp(t, t.TempDir(), ch)
	run := runToEnd(t, a, "r1")
	if run.State != durable.StateFailed || !run.Internal || !strings.Contains(run.Error, "checkpoint of step w.yaml:9:5 chan") {
		t.Fatalf("run %+v", run)
	}
}

// A panic is no answer of the step's work: the run failed in Helix. Resumed,
// the step runs again; the run that then completes is no failure at all.
func TestAPanicIsAnInternalFailureUntilResumed(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	boom := step{name: "w.yaml:5:5 boom", runs: &n, fn: func(_ context.Context, ex *exchange.Exchange) error {
		if n.Load() == 1 {
			panic("nil map")
		}
		ex.In().SetBody("fine")
		return nil
	}}
	a := startApp(t, t.TempDir(), boom)
	run := runToEnd(t, a, "r1")
	if run.State != durable.StateFailed || !run.Internal || !strings.Contains(run.Error, "panic") {
		t.Fatalf("run %+v", run)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := a.rt.Resume(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	run, err := a.rt.Await(ctx, "r1")
	if err != nil || run.State != durable.StateCompleted || run.Internal || run.Error != "" {
		t.Fatalf("run %+v, %v", run, err)
	}
}

func TestAChangedWorkflowIsAnInternalFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var n atomic.Int32
	entered := make(chan struct{})
	var once sync.Once
	block := step{name: "w.yaml:4:5 slow", runs: &n, fn: func(ctx context.Context, ex *exchange.Exchange) error {
		once.Do(func() { close(entered) })
		<-ctx.Done()
		return ctx.Err()
	}}
	a := startApp(t, dir, appendTo("w.yaml:3:5 a", &n), block)
	if _, err := a.rt.Start(context.Background(), "wf", exchange.NewWithBody(exchange.InOut, "in"), durable.StartOptions{RunID: "r1"}); err != nil {
		t.Fatal(err)
	}
	<-entered
	a.stop()

	b := startApp(t, dir, appendTo("w.yaml:7:5 a", &n), appendTo("w.yaml:8:5 slow", &n))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := b.rt.Await(ctx, "r1")
	if err != nil || run.State != durable.StateFailed || !run.Internal || !strings.Contains(run.Error, "workflow changed under a pending run") {
		t.Fatalf("run %+v, %v", run, err)
	}
}

// A pending run whose workflow is no longer configured fails in Helix.
func TestAWorkflowGoneIsAnInternalFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var n atomic.Int32
	entered := make(chan struct{})
	var once sync.Once
	block := step{name: "w.yaml:4:5 slow", runs: &n, fn: func(ctx context.Context, ex *exchange.Exchange) error {
		once.Do(func() { close(entered) })
		<-ctx.Done()
		return ctx.Err()
	}}
	a := startApp(t, dir, block)
	if _, err := a.rt.Start(context.Background(), "wf", exchange.NewWithBody(exchange.InOut, "in"), durable.StartOptions{RunID: "r1"}); err != nil {
		t.Fatal(err)
	}
	<-entered
	a.stop()

	// Restarted with another workflow only.
	ec := engine.NewContext("t")
	if err := ec.AddWorkflow(&engine.Workflow{ID: "other", Processors: []engine.Processor{appendTo("w.yaml:3:5 a", &n)}, Durable: true}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rt, err := durable.New(ctx, durable.Options{AppName: "t", DataDir: dir, ReplicaID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	ec.SetDurableRunner(rt)
	if err := ec.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { rt.Shutdown(time.Second); _ = ec.Stop(context.Background()) }()
	if err := rt.Launch(ec); err != nil {
		t.Fatal(err)
	}
	run, err := rt.Await(ctx, "r1")
	if err != nil || run.State != durable.StateFailed || !run.Internal || !strings.Contains(run.Error, `workflow "wf" is no longer in the configuration`) {
		t.Fatalf("run %+v, %v", run, err)
	}
}

// A store made before runs recorded internal failures gets the column, and
// the runs it had read as no internal failure.
func TestAStoreWithoutTheInternalColumnGetsIt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "durable.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`CREATE TABLE helix_runs (
		run_id TEXT PRIMARY KEY, workflow TEXT NOT NULL, kind TEXT NOT NULL DEFAULT '',
		segment INTEGER NOT NULL DEFAULT 0, state TEXT NOT NULL, step INTEGER NOT NULL DEFAULT 0,
		step_name TEXT NOT NULL DEFAULT '', wait TEXT, snapshot TEXT, resolution TEXT,
		principal TEXT NOT NULL DEFAULT '', ttl_ms BIGINT NOT NULL DEFAULT 0,
		created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, result TEXT, error TEXT NOT NULL DEFAULT '')`,
		`INSERT INTO helix_runs (run_id, workflow, state, created_at, updated_at, error) VALUES ('old', 'wf', 'failed', 1, 1, 'no')`,
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	var n atomic.Int32
	panics := step{name: "w.yaml:5:5 boom", runs: &n, fn: func(context.Context, *exchange.Exchange) error { panic("boom") }}
	a := startApp(t, dir, panics)
	old, err := a.rt.Get(context.Background(), "old")
	if err != nil || old.State != durable.StateFailed || old.Internal {
		t.Fatalf("old run %+v, %v", old, err)
	}
	if run := runToEnd(t, a, "r1"); !run.Internal {
		t.Fatalf("run %+v", run)
	}
}

// The same on PostgreSQL: helix.helix_runs made before the column gets it.
func TestPostgresStoreWithoutTheInternalColumnGetsIt(t *testing.T) {
	t.Parallel()
	url := testtools.PostgresDatabase(t)
	testtools.PostgresExec(t, url, `CREATE SCHEMA IF NOT EXISTS helix`)
	testtools.PostgresExec(t, url, `CREATE TABLE helix.helix_runs (
		run_id TEXT PRIMARY KEY, workflow TEXT NOT NULL, kind TEXT NOT NULL DEFAULT '',
		segment INTEGER NOT NULL DEFAULT 0, state TEXT NOT NULL, step INTEGER NOT NULL DEFAULT 0,
		step_name TEXT NOT NULL DEFAULT '', wait TEXT, snapshot TEXT, resolution TEXT,
		principal TEXT NOT NULL DEFAULT '', ttl_ms BIGINT NOT NULL DEFAULT 0,
		created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, result TEXT, error TEXT NOT NULL DEFAULT '')`)
	testtools.PostgresExec(t, url, `INSERT INTO helix.helix_runs (run_id, workflow, state, created_at, updated_at, error) VALUES ('old', 'wf', 'failed', 1, 1, 'no')`)

	var n atomic.Int32
	fail := step{name: "w.yaml:5:5 fail", runs: &n, fn: func(context.Context, *exchange.Exchange) error { return errors.New("said no") }}
	panics := step{name: "w.yaml:6:5 boom", runs: &n, fn: func(context.Context, *exchange.Exchange) error { panic("boom") }}
	a := startAppOn(t, t.TempDir(), url, panics)
	old, err := a.rt.Get(context.Background(), "old")
	if err != nil || old.State != durable.StateFailed || old.Internal {
		t.Fatalf("old run %+v, %v", old, err)
	}
	if run := runToEnd(t, a, "pg-panics"); run.State != durable.StateFailed || !run.Internal {
		t.Fatalf("run %+v", run)
	}
	a.stop()
	b := startAppOn(t, t.TempDir(), url, fail)
	if run := runToEnd(t, b, "pg-fails"); run.State != durable.StateFailed || run.Internal {
		t.Fatalf("run %+v", run)
	}
}
