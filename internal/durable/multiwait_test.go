package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/durable"
	helixstep "github.com/arvenza/helix/internal/step"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// twoQuestions is a parallel multicast whose branches each ask (elicit:), so
// that a durable run waits for two answers at once; confirmTimeout bounds the
// second question ("" for the default).
func twoQuestions(t *testing.T, hc *engine.Context, before *atomic.Int32, confirmTimeout string) []engine.Processor {
	timeout := ""
	if confirmTimeout != "" {
		timeout = "\n          timeout: " + confirmTimeout
	}
	ps := buildSteps(t, hc, `
- multicast:
    strategy: parallel
    steps:
      - elicit:
          id: name
          message: "Your name?"
          schema:
            type: object
            properties: {name: {type: string}}
            required: [name]
      - elicit:
          id: confirm
          message: "Confirm?"`+timeout+`
          schema:
            type: object
            properties: {confirm: {type: boolean}}
            required: [confirm]
- transform:
    starlang: |
      "%s %s" % (payload[0]["name"], payload[1]["confirm"])
`)
	return append([]engine.Processor{appendTo("w.yaml:1:1 first", before)}, ps...)
}

func waitKeys(run durable.Run) []string {
	var keys []string
	for _, w := range run.Waits {
		keys = append(keys, w.Key)
	}
	return keys
}

// A run whose parallel branches each ask parks once with both questions;
// answering one keeps it parked on the other, across a restart too; a repeat
// answer is refused; answering the other completes the run, once, with both
// answers, each taken by the step that asked.
func TestTwoWaitsAtOnceAcrossARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var base string
	var before atomic.Int32
	hc := engine.NewContext("build")
	a := startWaiting(t, dir, twoQuestions(t, hc, &before, ""), hc, &base)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run, err := a.rt.Start(ctx, "wf", exchange.NewWithBody(exchange.InOut, "x"), durable.StartOptions{RunID: "two"})
	if err != nil {
		t.Fatal(err)
	}
	run, err = a.rt.Await(ctx, run.ID)
	if err != nil || run.State != durable.StateInputRequired || strings.Join(waitKeys(run), ",") != "name,confirm" {
		t.Fatalf("parked: %+v %v", run, err)
	}
	if _, err := a.rt.Resolve(ctx, "two", durable.Resolution{Kind: durable.ResolvedAnswered, Data: json.RawMessage(`{"name":"Ada"}`)}); !errors.Is(err, durable.ErrNotWaiting) || !strings.Contains(err.Error(), "say which") {
		t.Errorf("an answer naming no wait: %v", err)
	}
	run, err = a.rt.Resolve(ctx, "two", durable.Resolution{Kind: durable.ResolvedAnswered, Key: "name", Data: json.RawMessage(`{"name":"Ada"}`)})
	if err != nil || run.State != durable.StateInputRequired || strings.Join(waitKeys(run), ",") != "confirm" || run.Wait.Key != "confirm" {
		t.Fatalf("after one answer: %+v %v", run, err)
	}
	if _, err := a.rt.Resolve(ctx, "two", durable.Resolution{Kind: durable.ResolvedAnswered, Key: "name", Data: json.RawMessage(`{"name":"Bob"}`)}); !errors.Is(err, durable.ErrNotWaiting) {
		t.Errorf("a second answer to the same question: %v, want ErrNotWaiting", err)
	}
	a.stop()

	hc = engine.NewContext("build")
	b := startWaiting(t, dir, twoQuestions(t, hc, &before, ""), hc, &base)
	run, err = b.rt.Get(ctx, "two")
	if err != nil || run.State != durable.StateInputRequired || strings.Join(waitKeys(run), ",") != "confirm" {
		t.Fatalf("after the restart: %+v %v", run, err)
	}
	if _, err := b.rt.Resolve(ctx, "two", durable.Resolution{Kind: durable.ResolvedAnswered, Key: "confirm", Data: json.RawMessage(`{"confirm":true}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.rt.Resolve(ctx, "two", durable.Resolution{Kind: durable.ResolvedAnswered, Key: "confirm", Data: json.RawMessage(`{"confirm":false}`)}); !errors.Is(err, durable.ErrNotWaiting) {
		t.Errorf("an answer after the last one: %v, want ErrNotWaiting", err)
	}
	run, err = b.rt.Await(ctx, "two")
	if err != nil || run.State != durable.StateCompleted {
		t.Fatalf("after both answers: %+v %v", run, err)
	}
	s, _ := exchange.DecodeSnapshot(run.Result)
	if s.Body != "Ada True" || before.Load() != 1 {
		t.Errorf("body %q; the step before the waits ran %d times", s.Body, before.Load())
	}
	if len(run.Waits) != 0 {
		t.Errorf("an ended run lists waits: %+v", run.Waits)
	}
}

// Two answers to the two questions at the same moment: both are recorded and
// the run goes on once.
func TestTwoWaitsAnsweredAtOnce(t *testing.T) {
	t.Parallel()
	var base string
	var before atomic.Int32
	hc := engine.NewContext("build")
	a := startWaiting(t, t.TempDir(), twoQuestions(t, hc, &before, ""), hc, &base)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 10 {
		id := "race-" + string(rune('a'+i))
		run, err := a.rt.Start(ctx, "wf", exchange.NewWithBody(exchange.InOut, "x"), durable.StartOptions{RunID: id})
		if err != nil {
			t.Fatal(err)
		}
		if run, err = a.rt.Await(ctx, run.ID); err != nil || len(run.Waits) != 2 {
			t.Fatalf("parked: %+v %v", run, err)
		}
		errs := make(chan error, 2)
		go func() {
			_, err := a.rt.Resolve(ctx, id, durable.Resolution{Kind: durable.ResolvedAnswered, Key: "name", Data: json.RawMessage(`{"name":"Ada"}`)})
			errs <- err
		}()
		go func() {
			_, err := a.rt.Resolve(ctx, id, durable.Resolution{Kind: durable.ResolvedAnswered, Key: "confirm", Data: json.RawMessage(`{"confirm":false}`)})
			errs <- err
		}()
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatalf("%s: %v", id, err)
			}
		}
		run, err = a.rt.Await(ctx, id)
		s, _ := exchange.DecodeSnapshot(run.Result)
		if err != nil || run.State != durable.StateCompleted || s.Body != "Ada False" {
			t.Fatalf("%s: %+v %v %v", id, run, s.Body, err)
		}
	}
	if before.Load() != 10 {
		t.Errorf("the step before the waits ran %d times for 10 runs", before.Load())
	}
}

// The timeout of one of two waits ends that wait only: the run stays parked
// on the other.
func TestTimeoutOfOneOfTwoWaits(t *testing.T) {
	t.Parallel()
	var base string
	var before atomic.Int32
	hc := engine.NewContext("build")
	a := startWaiting(t, t.TempDir(), twoQuestions(t, hc, &before, "200ms"), hc, &base)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := a.rt.Start(ctx, "wf", exchange.NewWithBody(exchange.InOut, "x"), durable.StartOptions{RunID: "timed"}); err != nil {
		t.Fatal(err)
	}
	testtools.Eventually(t, "the confirm question timed out", func() bool {
		run, err := a.rt.Get(ctx, "timed")
		return err == nil && run.State == durable.StateInputRequired && strings.Join(waitKeys(run), ",") == "name"
	})
	if _, err := a.rt.Resolve(ctx, "timed", durable.Resolution{Kind: durable.ResolvedAnswered, Key: "name", Data: json.RawMessage(`{"name":"Ada"}`)}); err != nil {
		t.Fatal(err)
	}
	run, err := a.rt.Await(ctx, "timed")
	// The step whose question timed out fails the run, as a lone one would.
	if err != nil || run.State != durable.StateFailed || !strings.Contains(run.Error, "nobody answered") {
		t.Fatalf("after the answer: %+v %v", run, err)
	}
}

// On PostgreSQL, two answers to a run's two questions at the same moment: both
// are recorded (the one that loses the row's race reads it again) and the run
// goes on once.
func TestTwoWaitsAnsweredAtOnceOnPostgres(t *testing.T) {
	t.Parallel()
	url := testtools.PostgresDatabase(t)
	var before atomic.Int32
	hc := engine.NewContext("build")
	a := startAppOn(t, t.TempDir(), url, twoQuestions(t, hc, &before, "")...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 5 {
		id := "pg-race-" + string(rune('a'+i))
		run, err := a.rt.Start(ctx, "wf", exchange.NewWithBody(exchange.InOut, "x"), durable.StartOptions{RunID: id})
		if err != nil {
			t.Fatal(err)
		}
		if run, err = a.rt.Await(ctx, run.ID); err != nil || len(run.Waits) != 2 {
			t.Fatalf("parked: %+v %v", run, err)
		}
		errs := make(chan error, 2)
		for _, r := range []durable.Resolution{
			{Kind: durable.ResolvedAnswered, Key: "name", Data: json.RawMessage(`{"name":"Ada"}`)},
			{Kind: durable.ResolvedAnswered, Key: "confirm", Data: json.RawMessage(`{"confirm":true}`)},
		} {
			go func() { _, err := a.rt.Resolve(ctx, id, r); errs <- err }()
		}
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatalf("%s: %v", id, err)
			}
		}
		run, err = a.rt.Await(ctx, id)
		s, _ := exchange.DecodeSnapshot(run.Result)
		if err != nil || run.State != durable.StateCompleted || s.Body != "Ada True" {
			t.Fatalf("%s: %+v %v %v", id, run, s.Body, err)
		}
	}
	if before.Load() != 5 {
		t.Errorf("the step before the waits ran %d times for 5 runs", before.Load())
	}
}

// Two approve: steps in parallel branches each send their own link; each link
// resolves its own wait only, once, and the run goes on after both.
func TestTwoApprovalLinksAtOnce(t *testing.T) {
	t.Parallel()
	var base string
	links := make(chan string, 4)
	hc := engine.NewContext("build")
	hc.AddComponent("capture", capture(func(ex *exchange.Exchange) { links <- ex.In().HeaderString(helixstep.HeaderApprovalURL) }))
	steps := buildSteps(t, hc, `
- multicast:
    strategy: parallel
    steps:
      - approve: {id: legal, message: "Legal?", notify: [{target: "capture://chat"}]}
      - approve: {id: finance, message: "Finance?", notify: [{target: "capture://chat"}]}
- set-body: {constant: "approved by ${header.HelixApprovalBy}"}
`)
	a := startWaiting(t, t.TempDir(), steps, hc, &base)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := a.rt.Start(ctx, "wf", exchange.NewWithBody(exchange.InOut, "x"), durable.StartOptions{RunID: "links"}); err != nil {
		t.Fatal(err)
	}
	run, err := a.rt.Await(ctx, "links")
	if err != nil || len(run.Waits) != 2 {
		t.Fatalf("parked: %+v %v", run, err)
	}
	first, second := <-links, <-links
	if first == second {
		t.Fatalf("one link for two waits: %s", first)
	}
	if code, body := a.do(t, http.MethodPost, first, `{"decision":"approve"}`); code != 200 {
		t.Fatalf("first link: %d %s", code, body)
	}
	if code, _ := a.do(t, http.MethodPost, first, `{"decision":"reject"}`); code != 410 {
		t.Errorf("the first link again: %d, want 410", code)
	}
	if run, err = a.rt.Get(ctx, "links"); err != nil || run.State != durable.StateInputRequired || len(run.Waits) != 1 {
		t.Fatalf("after one link: %+v %v", run, err)
	}
	if code, body := a.do(t, http.MethodGet, second, ""); code != 200 || !strings.Contains(body, "?") {
		t.Fatalf("the second link shows %d %s", code, body)
	}
	if code, body := a.do(t, http.MethodPost, second, `{"decision":"approve"}`); code != 200 {
		t.Fatalf("second link: %d %s", code, body)
	}
	if run, err = a.rt.Await(ctx, "links"); err != nil || run.State != durable.StateCompleted {
		t.Fatalf("after both links: %+v %v", run, err)
	}
}
