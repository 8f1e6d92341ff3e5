package durable_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/pkg/exchange"
)

// A caller's credentials never reach the store: not in the run's input, a
// step's checkpoint or its result; the steps after the first do not see them.
func TestCredentialsAreNotCheckpointed(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	var seen atomic.Value
	look := step{name: "w.yaml:4:5 look", runs: &n, fn: func(_ context.Context, ex *exchange.Exchange) error {
		seen.Store(ex.In().HeaderString("Authorization") + "|" + ex.In().HeaderString("cookie") + "|" + ex.In().HeaderString("Trace"))
		return nil
	}}
	dir := t.TempDir()
	a := startApp(t, dir, appendTo("w.yaml:3:5 a", &n), look)
	ex := exchange.NewWithBody(exchange.InOut, "in")
	ex.In().SetHeader("Authorization", "Bearer SECRET-TOKEN")
	ex.In().SetHeader("cookie", "session=SECRET-COOKIE")
	ex.In().SetHeader("Trace", "kept")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := a.rt.Start(ctx, "wf", ex, durable.StartOptions{RunID: "cred"})
	if err == nil {
		run, err = a.rt.Await(ctx, run.ID)
	}
	if err != nil || run.State != durable.StateCompleted {
		t.Fatalf("%+v %v", run, err)
	}
	if got := seen.Load(); got != "||kept" {
		t.Fatalf("the second step saw %q", got)
	}
	if strings.Contains(string(run.Result), "SECRET") {
		t.Fatalf("result %s", run.Result)
	}
	a.stop()
	files, _ := filepath.Glob(filepath.Join(dir, "durable.db*"))
	if len(files) == 0 {
		t.Fatal("no store files")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("SECRET")) {
			t.Fatalf("%s holds a credential", filepath.Base(f))
		}
	}
}
