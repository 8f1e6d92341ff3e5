package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// busyServer is a stateless MCP echo server with admission control of its own:
// one call at a time, the others refused with 503 and the -32030 body; every
// tenth call that runs fails after admission (a JSON-RPC error) when failing.
func busyServer(t *testing.T, failing bool) string {
	slot := make(chan struct{}, 1)
	n := 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case slot <- struct{}{}:
		default:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32030,"message":"server busy"}}`, req.ID)
			return
		}
		n++
		fail := failing && n%10 == 0
		time.Sleep(200 * time.Microsecond)
		<-slot
		w.Header().Set("Content-Type", "application/json")
		if fail {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"broke after admission"}}`, req.ID)
			return
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[]}}`, req.ID)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestOverloadCountsRefusalsApartFromFailures: refusals (503 + -32030) are
// counted as refused, errors after admission as failed, answers as ok; the
// figures add up to the calls sent.
func TestOverloadCountsRefusalsApartFromFailures(t *testing.T) {
	for _, failing := range []bool{false, true} {
		cfg := overloadConfig{Label: "busy", URL: busyServer(t, failing), Stateless: true, Protocol: defaultProtocol, Tool: "echo",
			Args: `{}`, Timeout: 10 * time.Second, Capacity: 500, UnloadedP99us: 300, CapClients: 1, CapDuration: time.Second,
			Multiple: 4, Duration: 500 * time.Millisecond, Warmup: 100 * time.Millisecond, Workers: 16, PID: os.Getpid()}
		r, err := runOverload(context.Background(), cfg, &strings.Builder{})
		if err != nil {
			t.Fatal(err)
		}
		if r.OfferedRPS != 2000 || r.OK == 0 || r.Refused == 0 || r.OK+r.Refused+r.Failed != r.Answered {
			t.Fatalf("failing=%v: %+v", failing, r)
		}
		if failing != (r.Failed > 0) || failing && !strings.Contains(strings.Join(r.ErrorSamples, " "), "broke after admission") {
			t.Fatalf("failing=%v: failed %d %q", failing, r.Failed, r.ErrorSamples)
		}
		if r.ServerCPUus <= 0 { // this process served the calls
			t.Fatalf("server CPU %v", r.ServerCPUus)
		}
		if r.GoodputRatio != r.GoodputRPS/500 || r.P99Ratio != r.P99us/300 {
			t.Fatalf("ratios %+v", r)
		}
	}
}

func TestOverloadRefusesBadFlags(t *testing.T) {
	var out strings.Builder
	for _, args := range [][]string{{"-url", ""}, {"-url", "http://x", "-multiple", "0"}, {"-url", "http://x", "-workers", "0"}} {
		if err := run(context.Background(), append([]string{"overload"}, args...), &out); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

// TestBackendFixedCapacity: the backend serves at most its slots at once, each
// for its service time: three requests on one slot of 50ms take at least
// 150ms together, and each is answered.
func TestBackendFixedCapacity(t *testing.T) {
	ts := httptest.NewServer(backendHandler(1, 50*time.Millisecond))
	defer ts.Close()
	start := time.Now()
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(ts.URL+"/work", "application/json", strings.NewReader(`{}`))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var v struct{ OK bool }
			if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || !v.OK || resp.StatusCode != http.StatusOK {
				t.Errorf("answer %d %v %v", resp.StatusCode, v, err)
			}
		}()
	}
	wg.Wait()
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("3 requests on 1 slot of 50ms took %v: the slot did not hold them back", d)
	}
	var out strings.Builder
	for _, args := range [][]string{{"-slots", "0"}, {"-service", "0s"}, {"extra"}} {
		if err := run(context.Background(), append([]string{"backend"}, args...), &out); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
