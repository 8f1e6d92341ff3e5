package transport

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The session table's rules, without HTTP: the end-to-end tests through the
// security stack are in pkg/app (mcp_sessions_test.go).
func TestSessionTableEvictsIdleLongestAndNeverBusy(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	tab := NewSessionTable(&Options{MaxSessions: 3, MaxSessionsPerPrincipal: 2,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	closed := map[string]bool{}
	open := func(owner, id string) *sessionSlot {
		t.Helper()
		s, err := tab.admit(owner, "test", false)
		if err != nil {
			t.Fatalf("admit %s: %v", id, err)
		}
		s.ready(id, func() { closed[id] = true })
		s.end()
		return s
	}
	a1, b1 := open("a", "a1"), open("b", "b1")
	open("", "anon")
	// Global cap: the session idle longest goes (a1), not the newest.
	b1.begin()
	b1.end()
	open("", "anon2")
	if !closed["a1"] || len(closed) != 1 || tab.len() != 3 {
		t.Fatalf("closed %v, %d sessions, want a1 evicted of 3", closed, tab.len())
	}
	if a1.begin() {
		t.Fatal("an evicted session accepted a request")
	}
	// Per principal: b's own sessions make room for b, never another's.
	b2 := open("b", "b2") // global cap: evicts "anon", idle longest now
	if !closed["anon"] {
		t.Fatalf("closed %v, want anon evicted", closed)
	}
	b1.begin()      // busy
	open("b", "b3") // b at its cap of 2: its idle b2 goes, not the busy b1
	if !closed["b2"] || closed["b1"] {
		t.Fatalf("closed %v, want b2 evicted and b1 kept", closed)
	}
	_ = b2
	// Busy sessions are never evicted: refuse instead, naming the limit.
	for s := range tab.slots {
		if s.active.Load() == 0 {
			s.begin()
		}
	}
	_, err := tab.admit("b", "test", false)
	var limit *sessionLimitError
	if !errors.As(err, &limit) || limit.setting != "max_sessions_per_principal" || !strings.Contains(err.Error(), "max_sessions_per_principal") {
		t.Fatalf("admit for b with every session busy: %v", err)
	}
	_, err = tab.admit("c", "test", false)
	if !errors.As(err, &limit) || limit.setting != "max_sessions" || !strings.Contains(err.Error(), "max_sessions") {
		t.Fatalf("admit for c with every session busy: %v", err)
	}
	if len(closed) != 3 {
		t.Fatalf("closed %v after refusals", closed)
	}
	// Refusals are logged sampled: one warning for the two.
	if n := strings.Count(logs.String(), "new sessions refused"); n != 1 {
		t.Fatalf("%d refusal warnings, want 1:\n%s", n, logs.String())
	}
}

// The idle timer is one per session, reset at each end: a run of it left over
// from before the last request (it had fired when begin stopped it) must not
// close the session early, and a session idle for the timeout is still closed.
func TestSessionIdleTimerReusedNeverClosesEarly(t *testing.T) {
	t.Parallel()
	// Long enough that a loaded machine's scheduling delay between an end and
	// the next begin (idle/10 apart) does not make the session truly idle: at
	// 150 ms a run at load average 24 saw it closed, rightly, between the two.
	const idle = time.Second
	tab := NewSessionTable(&Options{SessionIdleTimeout: idle})
	var closed atomic.Int32
	s, err := tab.admit("", "test", true)
	if err != nil {
		t.Fatal(err)
	}
	s.ready("s1", func() { closed.Add(1) })
	s.end()
	first := s.timer
	for range 5 {
		time.Sleep(idle / 10)
		if !s.begin() {
			t.Fatal("session gone while in use")
		}
		// A stale run now (as if it had fired just before begin) does nothing.
		s.idleTimeout()
		s.end()
		// ... nor right after the end that re-armed the timer.
		s.idleTimeout()
	}
	if s.timer != first {
		t.Fatal("end made a new timer instead of resetting the session's one")
	}
	if closed.Load() != 0 || tab.len() != 1 {
		t.Fatalf("closed %d times, %d sessions: closed before it was idle for %v", closed.Load(), tab.len(), idle)
	}
	deadline := time.Now().Add(10 * idle)
	for closed.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(idle / 10)
	}
	if closed.Load() != 1 || tab.len() != 0 {
		t.Fatalf("closed %d times, %d sessions after idling: want closed once, table empty", closed.Load(), tab.len())
	}
}
