package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

func TestStatsCountsExchanges(t *testing.T) {
	hc := engine.NewContext("stats")
	fail := errors.New("boom")
	steps := map[string]engine.Processor{
		"ok":    engine.ProcessorFunc(func(context.Context, *exchange.Exchange) error { return nil }),
		"bad":   engine.ProcessorFunc(func(context.Context, *exchange.Exchange) error { return fail }),
		"panic": engine.ProcessorFunc(func(context.Context, *exchange.Exchange) error { panic("x") }),
	}
	for id, p := range steps {
		if err := hc.AddWorkflow(&engine.Workflow{ID: id, Processors: []engine.Processor{p}}); err != nil {
			t.Fatal(err)
		}
	}
	run := func(id string) { _ = hc.Run(context.Background(), id, exchange.New(exchange.InOut)) }
	run("ok")
	run("ok")
	run("bad")
	run("panic")
	run("missing") // unknown workflows are not counted: there is no pipeline

	st := hc.Stats()
	if st.InFlight != 0 {
		t.Errorf("in flight %d, want 0", st.InFlight)
	}
	want := []engine.WorkflowStats{{ID: "bad", Exchanges: 1, Failed: 1}, {ID: "ok", Exchanges: 2}, {ID: "panic", Exchanges: 1, Failed: 1}}
	if len(st.Workflows) != len(want) {
		t.Fatalf("workflows %+v, want %+v", st.Workflows, want)
	}
	for i, w := range want {
		g := st.Workflows[i]
		if g.ID != w.ID || g.Exchanges != w.Exchanges || g.Failed != w.Failed || g.Duration < 0 {
			t.Errorf("workflow %d: %+v, want %+v", i, g, w)
		}
	}
}

func TestStatsInFlight(t *testing.T) {
	hc := engine.NewContext("inflight")
	entered, release := make(chan struct{}), make(chan struct{})
	block := engine.ProcessorFunc(func(context.Context, *exchange.Exchange) error {
		close(entered)
		<-release
		return nil
	})
	if err := hc.AddWorkflow(&engine.Workflow{ID: "slow", Processors: []engine.Processor{block}}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hc.Run(context.Background(), "slow", exchange.New(exchange.InOut))
	}()
	<-entered
	if n := hc.Stats().InFlight; n != 1 {
		t.Errorf("in flight while running: %d, want 1", n)
	}
	close(release)
	<-done
	if n := hc.Stats().InFlight; n != 0 {
		t.Errorf("in flight after: %d, want 0", n)
	}
}
