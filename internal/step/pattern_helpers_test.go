package step_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// byStub returns the bodies recorded per value of header Stub.
func byStub(r *testtools.Recorder) map[string][]any {
	out := map[string][]any{}
	for _, ex := range r.All() {
		k := ex.In().HeaderString("Stub")
		out[k] = append(out[k], ex.In().Body())
	}
	return out
}

// patternApp loads testdata/patterns/<file>, adds the Go workflows (trigger URI →
// processor), starts it and stops it at the end of the test. The test fails if a
// goroutine started by the app outlives Stop.
func patternApp(t *testing.T, file string, goWorkflows map[string]engine.Processor) (*engine.Context, *testtools.SyncBuffer) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	logs := &testtools.SyncBuffer{}
	a, _, err := app.Load(app.Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		ManagementAddr: "127.0.0.1:0"},
		filepath.Join("testdata", "patterns", file))
	if err != nil {
		t.Fatalf("load %s: %v", file, err)
	}
	hc := a.Context()
	for from, p := range goWorkflows {
		if err := hc.AddWorkflow(&engine.Workflow{ID: "go " + from, FromURI: from, Processors: []engine.Processor{p}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
		goleak.VerifyNone(t, ignore)
	})
	return hc, logs
}

// call runs workflow id with body (InOut) and returns the exchange and the error.
func call(t *testing.T, hc *engine.Context, id string, body any) (*exchange.Exchange, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ex := exchange.NewWithBody(exchange.InOut, body)
	err := hc.Run(ctx, id, ex)
	return ex, err
}

// jsonEqual compares two values by their JSON form (Starlark ints come back as
// int64, literals in tests are int).
func jsonEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	g, err1 := json.Marshal(got)
	w, err2 := json.Marshal(want)
	if err1 != nil || err2 != nil {
		t.Fatalf("%s: cannot marshal: %v %v", what, err1, err2)
	}
	if !bytes.Equal(g, w) {
		t.Errorf("%s =\n  %s\nwant\n  %s", what, g, w)
	}
}
