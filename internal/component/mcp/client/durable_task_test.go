package client_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/exchange"
)

// TestDurableRunPicksUpItsUpstreamTaskAfterARestart: a durable workflow calls,
// through mcp://, a tool that the upstream Helix server runs as a task (a
// durable workflow waiting on a timer). Helix stops while the run polls the
// task; the next start on the same store resumes the run, which polls the same
// task to its end: the upstream tool ran once.
func TestDurableRunPicksUpItsUpstreamTaskAfterARestart(t *testing.T) {
	t.Parallel()
	port := testtools.FreePort(t)
	path := writeYAML(t, fmt.Sprintf(`
helix:
  data_dir: %q
  shutdown_timeout: 200ms   # the stop cuts the report run off
  mcp:
    servers:
      - enabled: true
        addr: 127.0.0.1:%d
        expose: [slow]
workflows:
  - id: slow
    trigger: direct://slow
    durable: true
    steps:
      - until:
          starlang: time.now().unix + 3
      - transform:
          starlang: '"slow done"'
  - id: report
    trigger: direct://report
    durable: true
    steps:
      - target: mcp://127.0.0.1:%d/mcp/slow
`, t.TempDir(), port, port))
	start := func() *app.App {
		a, _, err := app.Load(app.Options{Logger: slog.New(slog.DiscardHandler)}, path)
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		if err := a.Start(context.Background()); err != nil {
			t.Fatalf("start: %v", err)
		}
		return a
	}
	runsOf := func(a *app.App, workflow string) []durable.Run {
		list, err := durable.For(a.Context()).List(context.Background(), durable.Filter{Workflow: workflow})
		if err != nil {
			t.Fatal(err)
		}
		return list
	}

	first := start()
	sent := make(chan error, 1)
	go func() {
		sent <- first.Context().Send(context.Background(), "direct://report", exchange.NewWithBody(exchange.InOut, nil))
	}()
	deadline := time.Now().Add(20 * time.Second)
	for len(runsOf(first, "slow")) == 0 {
		if time.Now().After(deadline) {
			all, _ := durable.For(first.Context()).List(context.Background(), durable.Filter{})
			select {
			case err := <-sent:
				t.Fatalf("the upstream task never started; the report: %v; runs %+v", err, all)
			default:
			}
			t.Fatalf("the upstream task never started; runs %+v", all)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // the task's id is in the journal, the run polls it
	if err := first.Stop(context.Background()); err != nil {
		t.Fatalf("stop: %v", err)
	}
	<-sent // cut off by the stop; the upstream task is left running (a tasks/cancel would fail the resumed run)

	second := start()
	t.Cleanup(func() { _ = second.Stop(context.Background()) })
	reports := runsOf(second, "report")
	if len(reports) != 1 {
		t.Fatalf("report runs %v", reports)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := durable.For(second.Context()).Await(ctx, reports[0].ID)
	if err != nil || run.State != durable.StateCompleted {
		t.Fatalf("the report run after the restart: %+v, %v", run, err)
	}
	snap, err := exchange.DecodeSnapshot(run.Result)
	if err != nil || snap.Body != "slow done" {
		t.Fatalf("result %+v, %v", snap, err)
	}
	if n := len(runsOf(second, "slow")); n != 1 {
		t.Fatalf("the upstream tool ran %d times, want once", n)
	}
}
