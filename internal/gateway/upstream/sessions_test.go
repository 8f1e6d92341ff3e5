package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
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

// A caller that gives up while its session opens fails alone: the others
// waiting for the same session get it, and it is opened once.
func TestCallerGivingUpDoesNotFailTheOthers(t *testing.T) {
	var inits atomic.Int32
	slow := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if rpcMethod(r) == "initialize" {
				inits.Add(1)
				time.Sleep(200 * time.Millisecond)
			}
			next.ServeHTTP(w, r)
		})
	}
	ts := httpUpstream(t, testServer("s", legacyVersions, nil), slow)
	p := newPool(t, config.UpstreamConfig{ID: "u", URL: ts.URL, Health: config.HealthConfig{Interval: -1}})
	key := gateway.SessionKey{Downstream: "d"}
	impatient, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := p.Session(impatient, key, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the impatient caller got %v, want its deadline", err)
	}
	if _, err := p.Session(context.Background(), key, nil); err != nil {
		t.Fatalf("the patient caller: %v", err)
	}
	if n := inits.Load(); n != 1 {
		t.Errorf("%d sessions opened, want 1", n)
	}
}

// Status, logs and errors never show a URL's secrets.
func TestStatusMasksSecrets(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String() + "/mcp?token=s3cret-value"
	_ = l.Close()
	logs := &logBuffer{}
	p, err := New(config.UpstreamConfig{ID: "u", URL: dead, Health: config.HealthConfig{Interval: -1}}, nil, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	_, err = p.Session(context.Background(), gateway.SessionKey{}, nil)
	if err == nil {
		t.Fatal("a session to a closed port opened")
	}
	st := p.Status()
	if st.Healthy || st.LastError == "" {
		t.Errorf("status %+v, want unhealthy with the error", st)
	}
	for what, s := range map[string]string{"error": err.Error(), "status": fmt.Sprintf("%+v", st), "log": logs.String()} {
		if strings.Contains(s, "s3cret-value") {
			t.Errorf("the %s shows the URL's token: %s", what, s)
		}
	}
}

// A slow upstream is bounded by the upstream's timeout, and a call that timed
// out is not sent again.
func TestSlowUpstreamTimesOutWithoutRetry(t *testing.T) {
	var runs atomic.Int64
	ts := httpUpstream(t, testServer("s", legacyVersions, &runs), nil)
	// The timeout also bounds the session's opening, which a loaded machine
	// (a -race run) can take a good part of a second over.
	p := newPool(t, config.UpstreamConfig{ID: "u", URL: ts.URL, Timeout: 2 * time.Second, Health: config.HealthConfig{Interval: -1}})
	mustCall(t, p, gateway.SessionKey{}, "echo") // the session is open: only the call is timed
	_, err := callText(context.Background(), p, gateway.SessionKey{}, "hang", nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the deadline", err)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the hanging tool ran %d times, want 1", n)
	}
}

// Close lets the calls in flight finish (their answers are not lost), ends
// the sessions being opened, and refuses what comes after.
func TestCloseDrainsCallsAndEndsOpens(t *testing.T) {
	ts := httpUpstream(t, testServer("s", legacyVersions, nil), func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if rpcMethod(r) == "initialize" && r.Header.Get("X-Stall") != "" {
				<-r.Context().Done() // an upstream that never answers the handshake
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	p, err := New(config.UpstreamConfig{ID: "u", URL: ts.URL, Health: config.HealthConfig{Interval: -1}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustCall(t, p, gateway.SessionKey{Downstream: "busy"}, "echo")
	type outcome struct {
		out string
		err error
	}
	slow, stalled := make(chan outcome, 1), make(chan error, 1)
	go func() {
		out, err := callText(context.Background(), p, gateway.SessionKey{Downstream: "busy"}, "slow", nil)
		slow <- outcome{out, err}
	}()
	go func() {
		ctx := gateway.WithUpstreamHeader(context.Background(), http.Header{"X-Stall": {"1"}})
		_, err := p.Session(ctx, gateway.SessionKey{Downstream: "stalled"}, nil)
		stalled <- err
	}()
	time.Sleep(100 * time.Millisecond) // both under way
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if o := <-slow; o.err != nil || o.out != "slow" {
		t.Errorf("the call in flight during Close: %q, %v; want its answer", o.out, o.err)
	}
	if err := <-stalled; err == nil {
		t.Error("a session being opened during Close opened")
	}
	if _, err := p.Session(context.Background(), gateway.SessionKey{}, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Session after Close: %v, want ErrClosed", err)
	}
}

// The entries of sessions lost long ago and never used again are forgotten.
func TestLostEntriesForgotten(t *testing.T) {
	ts := httpUpstream(t, testServer("s", legacyVersions, nil), nil)
	p := newPool(t, config.UpstreamConfig{ID: "u", URL: ts.URL, Health: config.HealthConfig{Interval: -1}}, WithIdleTimeout(20*time.Millisecond))
	for i := range 5 {
		mustCall(t, p, gateway.SessionKey{Downstream: fmt.Sprint("gone-", i)}, "echo")
	}
	eventually(t, "the entries to be forgotten", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.sessions) == 0
	})
}
