package client_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/report"
	"github.com/arvenza/helix/pkg/exchange"
)

// TestClientPassesProgressOn calls server-everything's long running operation over
// every transport from an exchange whose caller wants progress: the server's
// progress notifications reach the exchange's reporter, each before the call
// returns. (TestChildMCPProgressReachesTheCaller in pkg/app checks that a caller
// that wants no progress makes the client ask for none.)
func TestClientPassesProgressOn(t *testing.T) {
	t.Parallel()
	targets := everythingTargets(t)
	for _, transport := range []string{"http", "sse", "stdio"} {
		t.Run(transport, func(t *testing.T) {
			h := newClientHarness(t, fmt.Sprintf(targets[transport], "trigger-long-running-operation"))
			var mu sync.Mutex
			var got []string
			rep := report.Func{OnProgress: func(_ context.Context, current, total float64, _ string) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, fmt.Sprintf("%g/%g", current, total))
			}}
			ctx, cancel := context.WithTimeout(report.WithReporter(context.Background(), rep), 60*time.Second)
			defer cancel()
			ex := exchange.NewWithBody(exchange.InOut, map[string]any{"duration": 0.3, "steps": 3})
			if err := h.hc.Send(ctx, "direct://call", ex); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			reported := strings.Join(got, " ")
			mu.Unlock()
			if reported != "1/3 2/3 3/3" {
				t.Fatalf("progress reported before the call returned: %q, want 1/3 2/3 3/3", reported)
			}
			if body := exchange.Stringify(ex.In().Body()); !strings.Contains(body, "completed") {
				t.Fatalf("body %q", body)
			}
		})
	}
}
