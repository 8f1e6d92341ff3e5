package durable_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/internal/component/kafka"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/durable"
	helixstep "github.com/arvenza/helix/internal/step"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// parkedStore holds parked runs for the Kafka test: the first resolution of
// a wait wins.
type parkedStore struct {
	durable.Runs
	mu   sync.Mutex
	runs map[string]*durable.Run
	got  map[string]durable.Resolution
}

func (s *parkedStore) Get(_ context.Context, id string) (durable.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runs[id]
	if !ok {
		return durable.Run{}, durable.ErrNotFound
	}
	return *r, nil
}

func (s *parkedStore) Resolve(_ context.Context, id string, res durable.Resolution) (durable.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runs[id]
	if !ok || r.Wait == nil {
		return durable.Run{}, durable.ErrNotWaiting
	}
	r.Wait, r.State = nil, durable.StateWorking
	s.got[id] = res
	return *r, nil
}

func (s *parkedStore) resolution(id string) (durable.Resolution, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.got[id]
	return r, ok
}

// An await: on a Kafka topic gets the record whose key matches, whether the
// record came before the run waited (it waits in the inbox) or after; in a
// run that is not durable and in a parked durable run alike.
func TestAwaitKafkaRecordBeforeAndAfterThePark(t *testing.T) {
	t.Parallel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(2), kfake.SeedTopics(2, "payment-results"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	send := func(key, value string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "payment-results", Key: []byte(key), Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	hc := engine.NewContext("await-kafka")
	hc.AddComponent("kafka", kafka.New(kafka.Options{Brokers: brokers}))
	var doc yaml.Node
	src := `- await: {from: "kafka://payment-results", key: "${body.payment}", timeout: 1m}`
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	d := config.NewDecoder("w.yaml")
	bc := helixstep.NewBuildContext(hc)
	steps := helixstep.BuildSteps(bc, d.Steps(doc.Content[0], "steps"))
	if errs := append(d.Errors(), bc.Errors()...); len(errs) > 0 {
		t.Fatal(errs)
	}
	await := steps[0]

	store := &parkedStore{runs: map[string]*durable.Run{}, got: map[string]durable.Resolution{}}
	w, err := durable.NewWaits(durable.WaitsOptions{Secret: []byte("0123456789abcdef0123456789abcdef"), Runs: store})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	durable.AttachWaits(hc, w)
	defer durable.AttachWaits(hc, nil)
	ctx := context.Background()
	stop, err := w.StartSources(ctx, hc)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := stop(sctx); err != nil {
			t.Error(err)
		}
	}()

	// Not durable, the record first: it waits in the inbox for the step.
	send("p-1", `{"status":"paid","payment":"p-1"}`)
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"payment": "p-1"})
	testtools.Eventually(t, "the early record reached the step", func() bool {
		// The record may still be on its way to the consumer: a step that
		// times out here would wait a minute, so ask the inbox first.
		return inboxHas(w, "p-1")
	})
	if err := await.Process(ctx, ex); err != nil {
		t.Fatal(err)
	}
	if m, _ := ex.In().Body().(map[string]any); m["status"] != "paid" {
		t.Fatalf("body %v", ex.In().Body())
	}

	// Not durable, the step first.
	done := make(chan error, 1)
	ex = exchange.NewWithBody(exchange.InOut, map[string]any{"payment": "p-2"})
	go func() { done <- await.Process(ctx, ex) }()
	testtools.Eventually(t, "the step waits", func() bool { return durable.HeldForTest(w) == 1 })
	send("p-other", `{"status":"paid","payment":"p-other"}`)
	send("p-2", `{"status":"refused","payment":"p-2"}`)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if m, _ := ex.In().Body().(map[string]any); m["status"] != "refused" {
		t.Fatalf("body %v: the step took another key's record", ex.In().Body())
	}

	// Durable: the step parks; a record before the park is taken when the
	// runtime reports the park, one after it resolves the run.
	dctx := durable.WithDurable(ctx, "run-early")
	send("p-3", `{"status":"paid"}`)
	testtools.Eventually(t, "the early record in the inbox", func() bool { return inboxHas(w, "p-3") })
	var pe *durable.ParkError
	if err := await.Process(dctx, exchange.NewWithBody(exchange.InOut, map[string]any{"payment": "p-3"})); !errors.As(err, &pe) {
		t.Fatalf("durable await did not park: %v", err)
	}
	park(store, "run-early", pe.Wait)
	w.Parked(ctx, durable.Run{ID: "run-early", State: durable.StateWaiting, Wait: &pe.Wait})
	if r, ok := store.resolution("run-early"); !ok || r.Kind != durable.ResolvedReceived || !strings.Contains(string(r.Data), "paid") {
		t.Fatalf("early record: %+v %v", r, ok)
	}

	dctx = durable.WithDurable(ctx, "run-late")
	if err := await.Process(dctx, exchange.NewWithBody(exchange.InOut, map[string]any{"payment": "p-4"})); !errors.As(err, &pe) {
		t.Fatalf("durable await did not park: %v", err)
	}
	park(store, "run-late", pe.Wait)
	w.Parked(ctx, durable.Run{ID: "run-late", State: durable.StateWaiting, Wait: &pe.Wait})
	send("p-4", `{"status":"late"}`)
	testtools.Eventually(t, "the late record resolved the parked run", func() bool {
		r, ok := store.resolution("run-late")
		return ok && strings.Contains(string(r.Data), "late")
	})
	// The run goes on with the record as its body.
	r, _ := store.resolution("run-late")
	ex = exchange.NewWithBody(exchange.InOut, "before")
	if err := await.Process(durable.WithResolution(dctx, r), ex); err != nil {
		t.Fatal(err)
	}
	if m, _ := ex.In().Body().(map[string]any); m["status"] != "late" {
		t.Errorf("body after the resolution: %v", ex.In().Body())
	}
}

func park(s *parkedStore, id string, w durable.Wait) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs[id] = &durable.Run{ID: id, State: durable.StateWaiting, Wait: &w}
}

// inboxHas reports whether a record for key waits in w's inbox, by holding a
// wait for it and handing the record back if there was one.
func inboxHas(w *durable.Waits, key string) bool {
	return durable.InboxHasForTest(w, key)
}
