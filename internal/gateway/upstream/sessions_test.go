package upstream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
)

// A shared stdio upstream is one process serving every caller, also when
// many call at once.
func TestSharedStdioOneProcessForManyCallers(t *testing.T) {
	p := newPool(t, stdioConfig(""))
	if p.Mode() != config.SessionsShared {
		t.Fatalf("stdio default sharing is %s, want shared", p.Mode())
	}
	var wg sync.WaitGroup
	pids := make(chan string, 40)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := gateway.SessionKey{Downstream: fmt.Sprintf("client-%d", i%8)}
			out, err := callText(context.Background(), p, key, "whoami", nil)
			if err != nil {
				t.Error(err)
				return
			}
			pids <- field(out, 1)
		}()
	}
	wg.Wait()
	close(pids)
	seen := map[string]bool{}
	for pid := range pids {
		seen[pid] = true
	}
	if len(seen) != 1 {
		t.Errorf("callers were served by %d processes %v, want 1", len(seen), seen)
	}
	if st := p.Status(); st.Processes != 1 || !st.Healthy {
		t.Errorf("status %+v, want 1 process, healthy", st)
	}
}

// Per-principal stdio: one process per principal, shared by that principal's
// downstream sessions, never by another principal.
func TestPerPrincipalStdioProcessesApart(t *testing.T) {
	p := newPool(t, stdioConfig(config.SessionsPerPrincipal))
	alice1 := field(mustCall(t, p, gateway.SessionKey{Downstream: "a1", Principal: "alice"}, "whoami"), 1)
	alice2 := field(mustCall(t, p, gateway.SessionKey{Downstream: "a2", Principal: "alice"}, "whoami"), 1)
	bob := field(mustCall(t, p, gateway.SessionKey{Downstream: "b1", Principal: "bob"}, "whoami"), 1)
	if alice1 != alice2 {
		t.Errorf("alice's two sessions ran in processes %s and %s, want one", alice1, alice2)
	}
	if alice1 == bob {
		t.Errorf("alice and bob share process %s", bob)
	}
	if st := p.Status(); st.Processes != 2 {
		t.Errorf("%d processes, want 2", st.Processes)
	}
}

// A stdio process that exits is started again on the next use, and the core
// is told about the new session; the call during which it died is not sent again.
func TestStdioProcessRestartedAfterExit(t *testing.T) {
	var reopened atomic.Int32
	p := newPool(t, stdioConfig(""), WithOnReopen(func(gateway.SessionKey, *sdk.ClientSession) { reopened.Add(1) }))
	first := field(mustCall(t, p, gateway.SessionKey{}, "whoami"), 1)
	_, err := callText(context.Background(), p, gateway.SessionKey{}, "exit", nil)
	var mayHaveRun *MayHaveRunError
	if !errors.As(err, &mayHaveRun) {
		t.Fatalf("the call that killed the process: %v, want a MayHaveRunError", err)
	}
	second := field(mustCall(t, p, gateway.SessionKey{}, "whoami"), 1)
	if first == second {
		t.Errorf("still process %s after it exited", first)
	}
	if reopened.Load() != 1 {
		t.Errorf("onReopen called %d times, want 1", reopened.Load())
	}
}

// Per-client sessions: one per downstream session, opened once however many
// requests race for it, closed by Release.
func TestPerClientSessionsOpenOnceAndRelease(t *testing.T) {
	srv := testServer("legacy", legacyVersions, nil)
	ts := httpUpstream(t, srv, nil)
	p := newPool(t, config.UpstreamConfig{ID: "legacy", URL: ts.URL, Health: config.HealthConfig{Interval: -1}})
	if p.Mode() != config.SessionsPerClient {
		t.Fatalf("http default sharing is %s, want per-client", p.Mode())
	}
	var opened atomic.Int32
	opts := func() *sdk.ClientOptions { opened.Add(1); return &sdk.ClientOptions{} }
	var wg sync.WaitGroup
	ids := make(chan string, 30)
	for range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := p.Session(context.Background(), gateway.SessionKey{Downstream: "one"}, opts)
			if err != nil {
				t.Error(err)
				return
			}
			ids <- s.ID()
		}()
	}
	wg.Wait()
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		seen[id] = true
	}
	if len(seen) != 1 || opened.Load() != 1 {
		t.Fatalf("30 racing requests opened %d sessions (options built %d times), want 1", len(seen), opened.Load())
	}
	a := field(mustCall(t, p, gateway.SessionKey{Downstream: "one"}, "whoami"), 2)
	b := field(mustCall(t, p, gateway.SessionKey{Downstream: "two"}, "whoami"), 2)
	if a == b || a == "" {
		t.Errorf("two downstream sessions share upstream session %q", a)
	}
	if n := p.Status().OpenSessions; n != 2 {
		t.Errorf("%d open sessions, want 2", n)
	}
	p.Release(gateway.SessionKey{Downstream: "one"})
	if n := p.Status().OpenSessions; n != 1 {
		t.Errorf("after Release: %d open sessions, want 1", n)
	}
	if c := field(mustCall(t, p, gateway.SessionKey{Downstream: "one"}, "whoami"), 2); c == a {
		t.Errorf("released session %s served again", a)
	}
}

// Idle per-client sessions are closed; their next use reopens them and tells
// the core, which re-applies what the downstream session had set.
func TestIdleSessionsClosedAndReopened(t *testing.T) {
	ts := httpUpstream(t, testServer("legacy", legacyVersions, nil), nil)
	var reopened atomic.Int32
	p := newPool(t, config.UpstreamConfig{ID: "u", URL: ts.URL, Health: config.HealthConfig{Interval: -1}},
		WithIdleTimeout(50*time.Millisecond), WithOnReopen(func(gateway.SessionKey, *sdk.ClientSession) { reopened.Add(1) }))
	key := gateway.SessionKey{Downstream: "d"}
	mustCall(t, p, key, "whoami")
	eventually(t, "the idle session to close", func() bool { return p.Status().OpenSessions == 0 })
	mustCall(t, p, key, "whoami")
	if reopened.Load() != 1 {
		t.Errorf("onReopen called %d times after an idle close, want 1", reopened.Load())
	}
}

// The session cap closes the least recently used idle session.
func TestSessionCapEvictsLeastRecentlyUsed(t *testing.T) {
	p := newPool(t, stdioConfig(config.SessionsPerPrincipal), WithMaxSessions(2))
	alice := field(mustCall(t, p, gateway.SessionKey{Principal: "alice"}, "whoami"), 1)
	mustCall(t, p, gateway.SessionKey{Principal: "bob"}, "whoami")
	mustCall(t, p, gateway.SessionKey{Principal: "carol"}, "whoami")
	if n := p.Status().Processes; n != 2 {
		t.Errorf("%d processes under a cap of 2", n)
	}
	if again := field(mustCall(t, p, gateway.SessionKey{Principal: "alice"}, "whoami"), 1); again == alice {
		t.Errorf("alice's evicted process %s still serves", alice)
	}
}
