package testtools

import (
	"net"
	"testing"
	"time"
)

// StartupBound is how long WaitForProcessTCP waits at most for a process to listen.
// It is an overall bound for a machine under heavy load, not an expectation: a
// process that is up is noticed within 50 ms, and one that exited at once.
const StartupBound = 5 * time.Minute

// startupMargin is left of the test's own deadline (go test -timeout), so that a
// process that never listens fails the test with its output rather than the whole
// test binary with a panic.
const startupMargin = 10 * time.Second

// startupDeadline is StartupBound from now, or earlier when the test's deadline
// (minus startupMargin) comes first.
func startupDeadline(t testing.TB) time.Time {
	deadline := time.Now().Add(StartupBound)
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if td, ok := d.Deadline(); ok && td.Add(-startupMargin).Before(deadline) {
			deadline = td.Add(-startupMargin)
		}
	}
	return deadline
}

// WaitForProcessTCP waits until addr accepts TCP connections, for a process the
// test started: it fails the test, with logs(), as soon as exited is closed (the
// process ended), or when neither happened by the startup deadline (StartupBound,
// or the test's deadline if sooner). A loaded machine starts processes slowly; it
// does not start them wrongly, so there is no short fixed timeout. logs may be nil.
func WaitForProcessTCP(t testing.TB, addr string, exited <-chan struct{}, logs func() string) {
	t.Helper()
	deadline := startupDeadline(t)
	started := time.Now()
	output := func() string {
		if logs == nil {
			return ""
		}
		return "\noutput:\n" + logs()
	}
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = conn.Close()
			return
		}
		select {
		case <-exited:
			t.Fatalf("testtools: the process meant to listen on %s exited after %s: %v%s", addr, time.Since(started).Round(time.Millisecond), err, output())
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("testtools: %s did not accept connections within %s: %v%s", addr, time.Since(started).Round(time.Second), err, output())
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pollInterval is how often Eventually checks its condition: short enough that a test
// waits at most this long after the condition holds, long enough not to busy a core.
const pollInterval = 10 * time.Millisecond

// Eventually waits until cond returns true, checking it every 10 ms, and fails the test
// with what (a description of the awaited state) if it has not by the startup deadline
// (StartupBound, or the test's deadline less a margin if sooner). It replaces sleeps used as
// synchronisation: a test goes on as soon as the state it needs is there, and a loaded
// machine only makes it wait longer. The bound is an upper limit for a broken case, never
// what decides success. cond runs on the calling goroutine: from the test's own goroutine it
// may call t.Fatal.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := startupDeadline(t)
	started := time.Now()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("testtools: still waiting after %s for %s", time.Since(started).Round(time.Millisecond), what)
			return
		}
		time.Sleep(pollInterval)
	}
}
