package durable

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arvenza/helix/internal/testtools"
)

// fakePending is a store whose executions in progress are fixed, recording what
// takeover resumes.
type fakePending struct {
	mu      sync.Mutex
	pending map[string][]string
	resumed [][]string
	fail    error
}

func (f *fakePending) Pending(context.Context) (map[string][]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string][]string{}
	for k, v := range f.pending {
		out[k] = append([]string(nil), v...)
	}
	return out, nil
}

func (f *fakePending) Resume(_ context.Context, ids []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.resumed = append(f.resumed, ids)
	// Resumed runs are queued: no executor runs them until one dequeues them.
	for ex, runs := range f.pending {
		if reflect.DeepEqual(runs, ids) {
			delete(f.pending, ex)
		}
	}
	return nil
}

func (f *fakePending) resumedRuns() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]string(nil), f.resumed...)
}

func hold(t *testing.T, url, id string) *ExecutorLock {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := HoldExecutor(ctx, url, id, 20*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("HoldExecutor(%s): %v", id, err)
	}
	return l
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func TestSweepTakesOverOnlyTheRunsOfDeadExecutors(t *testing.T) {
	t.Parallel()
	url := testtools.PostgresDatabase(t)
	alive := hold(t, url, "alive")
	defer alive.Close(context.Background())
	gone := hold(t, url, "gone")
	// The replica "gone" dies: its session ends, and its lock with it.
	if err := gone.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	runs := &fakePending{pending: map[string][]string{
		"alive": {"a1"}, "gone": {"g1", "g2"}, "self": {"s1"}, "never-locked": {"n1"},
	}}
	var notified []string
	tk := &Takeover{URL: url, Self: "self", Runs: runs, Taken: func(ex string, _ []string) { notified = append(notified, ex) }}
	taken, err := tk.Sweep(context.Background(), connect(t, url))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"gone": {"g1", "g2"}, "never-locked": {"n1"}}
	if !reflect.DeepEqual(taken, want) {
		t.Fatalf("taken = %v, want %v", taken, want)
	}
	if got := runs.resumedRuns(); !reflect.DeepEqual(got, [][]string{{"g1", "g2"}, {"n1"}}) {
		t.Fatalf("resumed %v", got)
	}
	if !reflect.DeepEqual(notified, []string{"gone", "never-locked"}) {
		t.Fatalf("Taken called for %v", notified)
	}
	// The probe let go of the dead executor's lock: a replica restarting with
	// that id takes it at once.
	again := hold(t, url, "gone")
	_ = again.Close(context.Background())
	// A second sweep finds nothing more to take.
	taken, err = tk.Sweep(context.Background(), connect(t, url))
	if err != nil || len(taken) != 0 {
		t.Fatalf("second sweep took %v, %v", taken, err)
	}
}

func TestSweepReportsAFailedResumeAndReleasesTheProbe(t *testing.T) {
	t.Parallel()
	url := testtools.PostgresDatabase(t)
	runs := &fakePending{pending: map[string][]string{"gone": {"g1"}}, fail: errors.New("store down")}
	tk := &Takeover{URL: url, Self: "self", Runs: runs}
	taken, err := tk.Sweep(context.Background(), connect(t, url))
	if err == nil || !strings.Contains(err.Error(), `executor "gone"`) || !strings.Contains(err.Error(), "store down") {
		t.Fatalf("err = %v", err)
	}
	if len(taken) != 0 {
		t.Fatalf("taken = %v", taken)
	}
	l := hold(t, url, "gone") // would wait forever if the probe kept the lock
	_ = l.Close(context.Background())
}

func TestHoldExecutorWaitsForThePreviousSession(t *testing.T) {
	t.Parallel()
	url := testtools.PostgresDatabase(t)
	first := hold(t, url, "r1")
	got := make(chan *ExecutorLock, 1)
	go func() {
		l, err := HoldExecutor(context.Background(), url, "r1", 10*time.Millisecond, nil)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	// Observation window for something that must not happen: the second
	// replica with the same id must not get the lock while the first holds it.
	select {
	case <-got:
		t.Fatal("two sessions hold the lock of one executor id")
	case <-time.After(100 * time.Millisecond):
	}
	_ = first.Close(context.Background())
	second := <-got
	_ = second.Close(context.Background())

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := HoldExecutor(ctx, url, "r2", time.Millisecond, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("HoldExecutor with a cancelled context: %v", err)
	}
}

func TestHoldExecutorLostWhenTheSessionEnds(t *testing.T) {
	t.Parallel()
	url := testtools.PostgresDatabase(t)
	l := hold(t, url, "lost1")
	defer l.Close(context.Background())
	testtools.PostgresExec(t, url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'helix durable executor lost1' AND datname = current_database()")
	select {
	case <-l.Lost():
	case <-time.After(testtools.StartupBound):
		t.Fatal("Lost not closed after the lock's session was terminated")
	}
}

func TestHoldExecutorErrorsNeverShowThePassword(t *testing.T) {
	t.Parallel()
	_, err := HoldExecutor(context.Background(), "postgres://u:s3cret@127.0.0.1:5432/db?sslmode=bogus", "r1", 0, nil)
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("err = %v", err)
	}
	if _, err := HoldExecutor(context.Background(), "postgres://x", "", 0, nil); err == nil || !strings.Contains(err.Error(), "helix.replica_id") {
		t.Fatalf("empty id: %v", err)
	}
	tk := &Takeover{URL: "postgres://u:s3cret@127.0.0.1:5432/db?sslmode=bogus", Runs: &fakePending{}}
	if err := tk.Lead(context.Background()); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("Lead: %v", err)
	}
}

func TestTakeoverRunSweepsWhileLeading(t *testing.T) {
	t.Parallel()
	url := testtools.PostgresDatabase(t)
	runs := &fakePending{pending: map[string][]string{"gone": {"g1"}}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- (&Takeover{URL: url, Self: "self", Runs: runs, Interval: 20 * time.Millisecond}).Run(ctx)
	}()
	testtools.Eventually(t, "the leader to take over the dead executor's run", func() bool {
		return len(runs.resumedRuns()) == 1
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
