package durable_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/exchange"
)

// The store on PostgreSQL: a run completes once, a parked run survives a
// restart and goes on when resolved; helix_runs lives in schema helix.
func TestPostgresStore(t *testing.T) {
	t.Parallel()
	url := testtools.PostgresDatabase(t)
	var n0, n1, n2 atomic.Int32
	a := startAppOn(t, t.TempDir(), url, appendTo("w.yaml:3:5 a", &n0), approveStep(&n1), appendTo("w.yaml:5:5 c", &n2))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := a.rt.Start(ctx, "wf", exchange.NewWithBody(exchange.InOut, "in"), durable.StartOptions{RunID: "pg-1", Principal: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	if run, err = a.rt.Await(ctx, run.ID); err != nil || run.State != durable.StateInputRequired || run.Principal != "ann" {
		t.Fatalf("%+v %v", run, err)
	}
	a.stop()

	b := startAppOn(t, t.TempDir(), url, appendTo("w.yaml:3:5 a", &n0), approveStep(&n1), appendTo("w.yaml:5:5 c", &n2))
	if _, err := b.rt.Resolve(ctx, "pg-1", durable.Resolution{Kind: durable.ResolvedApproved, By: "bob"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.rt.Resolve(ctx, "pg-1", durable.Resolution{Kind: durable.ResolvedApproved, By: "bob"}); !errors.Is(err, durable.ErrNotWaiting) {
		t.Fatalf("second resolution: %v", err)
	}
	run, err = b.rt.Await(ctx, "pg-1")
	if err != nil || run.State != durable.StateCompleted {
		t.Fatalf("%+v %v", run, err)
	}
	s, _ := exchange.DecodeSnapshot(run.Result)
	if s.Body != "in+w.yaml:3:5 a+approved by bob+w.yaml:5:5 c" || n0.Load() != 1 || n2.Load() != 1 {
		t.Fatalf("body %v, steps ran %d %d %d", s.Body, n0.Load(), n1.Load(), n2.Load())
	}
	runs, err := b.rt.List(ctx, durable.Filter{Principal: "ann", States: []durable.State{durable.StateCompleted}, Limit: 5})
	if err != nil || len(runs) != 1 {
		t.Fatalf("list %v %v", runs, err)
	}
	testtools.PostgresExec(t, url, "SELECT 1 FROM helix.helix_runs WHERE run_id = 'pg-1'")

	// A bad store URL fails with an error that does not show the password.
	_, err = durable.New(ctx, durable.Options{AppName: "t", Store: "postgres://helix:s3cret@127.0.0.1:1/x?connect_timeout=1"})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("bad store: %v", err)
	}
}
