package app_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/exchange"
)

// scaleYAML is an application of n workflows w0000… of steps set-header
// steps each (the more steps, the more snapshots a capture holds), with the
// console on (an operator API key) and its capture given maxBytes.
func scaleYAML(n, steps int, maxBytes string, extra string) string {
	var y strings.Builder
	fmt.Fprintf(&y, "helix:\n  console:\n    auth:\n      api_keys:\n        - {key: bench-operator-key, name: bench, roles: [operator]}\n    capture: {max_bytes: %s}\n%sworkflows:\n", maxBytes, extra)
	for i := range n {
		fmt.Fprintf(&y, "  - id: w%04d\n    trigger: direct://w%04d\n    steps:\n", i, i)
		for s := range steps {
			fmt.Fprintf(&y, "      - set-header: {name: h%d, constant: \"%d\"}\n", s, i)
		}
	}
	return y.String()
}

func buildScale(tb testing.TB, yaml string) *app.App {
	tb.Helper()
	a, _ := buildScaleStop(tb, yaml)
	return a
}

// buildScaleStop is buildScale that also returns the stop of the application
// (for a benchmark that measures the heap of one application at a time;
// the cleanup then does nothing).
func buildScaleStop(tb testing.TB, yaml string) (*app.App, func()) {
	tb.Helper()
	cfg, err := config.LoadBytes("helix.yaml", []byte(yaml))
	if err != nil {
		tb.Fatal(err)
	}
	a, err := app.Build(cfg, quiet)
	if err != nil {
		tb.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	// The cleanup holds the application only until it is stopped: a
	// benchmark's cleanups run when it ends, and a stopped application they
	// kept would count in the next round's heap.
	var held atomic.Pointer[app.App]
	held.Store(a)
	stop := func() {
		if a := held.Swap(nil); a != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = a.Stop(ctx)
		}
	}
	tb.Cleanup(stop)
	return a, stop
}

// A flood of large bodies through the engine's real path never makes the
// console's capture account for more than helix.console.capture.max_bytes,
// and the capture does keep exchanges (it is full, not off).
func TestConsoleCaptureStaysWithinMaxBytes(t *testing.T) {
	t.Parallel()
	a := buildScale(t, scaleYAML(4, 6, "256KiB", ""))
	c := app.ConsoleCapture(a)
	if c == nil {
		t.Fatal("no capture among the tracers with the console on")
	}
	body := strings.Repeat("large body ", 20_000) // 220 KB, truncated by the capture
	for i := range 200 {
		if err := a.Context().Run(t.Context(), fmt.Sprintf("w%04d", i%4), exchange.NewWithBody(exchange.InOut, body)); err != nil {
			t.Fatal(err)
		}
		if st := c.Stats(); st.Bytes > st.MaxBytes {
			t.Fatalf("after %d exchanges the capture holds %d bytes, over its max_bytes %d", i+1, st.Bytes, st.MaxBytes)
		}
	}
	st := c.Stats()
	if st.MaxBytes != 256<<10 || st.Kept < 2 || st.Bytes < st.MaxBytes/2 {
		t.Fatalf("the flood did not fill the capture: %+v", st)
	}
}
