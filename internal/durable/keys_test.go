package durable_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/pkg/exchange"
)

// The key of a redelivery differs from the first attempt's; outside a
// durable run there is none.
func TestStepKey(t *testing.T) {
	t.Parallel()
	ex := exchange.New(exchange.InOut)
	if _, ok := durable.StepKey(context.Background(), ex); ok {
		t.Fatal("a key outside a durable run")
	}
	ctx := durable.WithKey(context.Background(), "run-1/3/0")
	if k, _ := durable.StepKey(ctx, ex); k != "run-1/3/0" {
		t.Fatalf("first attempt %q", k)
	}
	ex.In().SetHeader(exchange.HeaderRedeliveryCount, 2)
	if k, _ := durable.StepKey(ctx, ex); k != "run-1/3/2" {
		t.Fatalf("second redelivery %q", k)
	}
}

// Each top-level step of a durable run gets the key <run>/<index>/0 and the
// run's id in its context, and the run id as header HelixRunId.
func TestStepsSeeTheirKeyAndRun(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	var got []string
	see := func(name string) step {
		return step{name: name, runs: &n, fn: func(ctx context.Context, ex *exchange.Exchange) error {
			key, _ := durable.KeyFrom(ctx)
			run, _ := durable.RunID(ctx)
			got = append(got, key+" "+run+" "+ex.In().HeaderString(durable.HeaderRunID))
			return nil
		}}
	}
	a := startApp(t, t.TempDir(), see("w.yaml:1:1 a"), see("w.yaml:2:1 b"))
	run, err := a.rt.Start(context.Background(), "wf", exchange.New(exchange.InOut), durable.StartOptions{RunID: "k"})
	if err == nil {
		_, err = a.rt.Await(context.Background(), run.ID)
	}
	if err != nil || len(got) != 2 || got[0] != "k/0/0 k k" || got[1] != "k/1/0 k k" {
		t.Fatalf("%q %v", got, err)
	}
}

// A step's checkpoint is named without its file's directory: the same
// configuration started from another directory takes up its pending runs.
func TestCheckpointNamesIgnoreTheDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var n atomic.Int32
	entered := make(chan struct{})
	var once sync.Once
	block := step{name: "/srv/a/helix.yaml:4:5 slow", runs: &n, fn: func(ctx context.Context, ex *exchange.Exchange) error {
		once.Do(func() { close(entered) })
		<-ctx.Done()
		return ctx.Err()
	}}
	a := startApp(t, dir, appendTo("/srv/a/helix.yaml:3:5 a", &n), block)
	if _, err := a.rt.Start(context.Background(), "wf", exchange.NewWithBody(exchange.InOut, "in"), durable.StartOptions{RunID: "d"}); err != nil {
		t.Fatal(err)
	}
	<-entered
	a.stop()
	var m atomic.Int32
	b := startApp(t, dir, appendTo("helix.yaml:3:5 a", &m), appendTo("helix.yaml:4:5 slow", &m))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := b.rt.Await(ctx, "d")
	if err != nil || run.State != durable.StateCompleted || m.Load() != 1 {
		t.Fatalf("%+v %v, steps ran %d", run, err, m.Load())
	}
}
