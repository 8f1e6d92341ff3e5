package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestPairSplitsTheScheduleBetweenTargets: an open-loop pair run sends each
// target the calls of its slices at the asked rate, measures both and prints
// what the second adds.
func TestPairSplitsTheScheduleBetweenTargets(t *testing.T) {
	a, b := &fakeServer{}, &fakeServer{sse: true}
	cfg := pairConfig{
		Targets: [2]target{{"direct", startFake(t, a)}, {"gateway", startFake(t, b)}},
		Rate:    400, Slice: 50 * time.Millisecond, Duration: 800 * time.Millisecond, Warmup: 100 * time.Millisecond,
		Workers: 4, Protocol: defaultProtocol, Tool: "echo", Args: `{"text":"hi"}`, Timeout: 30 * time.Second,
	}
	res, err := runPair(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		// 400/s for the target's half of 0.8 s: 160 calls due in the window.
		if r.Errors != 0 || r.Requests != 160 {
			t.Errorf("%s: %d calls, %d errors %q; want the 160 due in its slices", r.Label, r.Requests, r.Errors, r.ErrorSamples)
		}
		if !(r.P50us > 0 && r.P50us <= r.P99us && r.P99us <= r.MaxUs && r.DueP50us >= r.P50us) {
			t.Errorf("%s: latencies out of order: %+v", r.Label, r)
		}
	}
	a.mu.Lock()
	b.mu.Lock()
	calls := [2]int{a.calls, b.calls}
	b.mu.Unlock()
	a.mu.Unlock()
	// With the warm-up, 0.9 s at 400/s: 360 calls, half to each.
	if calls[0] != 180 || calls[1] != 180 {
		t.Errorf("calls received: %v, want 180 each", calls)
	}
	var out bytes.Buffer
	printPair(&out, res)
	if !strings.Contains(out.String(), "added by gateway over direct: p50 ") {
		t.Errorf("printed:\n%s", out.String())
	}
}

func TestPairRefusesBadFlags(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{"-b g=http://x", "-a LABEL=URL is required"},
		{"-a d=http://x -b nolabel", "want LABEL=URL"},
		{"-a d=http://x -b g=http://y -rate 0", "-rate 0: must be positive"},
		{"-a d=http://x -b g=http://y -slice 1s -duration 1s", "a window of at least two"},
		{"-a d=http://x -b g=http://y -args [1]", "must be a JSON object"},
	} {
		err := run(context.Background(), append([]string{"pair"}, strings.Fields(c.args)...), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.args, err, c.want)
		}
	}
}
