package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

func TestClusterLeaderURLError(t *testing.T) {
	t.Parallel()
	_, err := buildYAML(t, `helix:
  cluster:
    leader: postgres://u:hunter2@db/x?sslmode=sometimes
workflows:
  - id: tick
    trigger: timer://tick
    steps: [{log: tick}]
`)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"helix.yaml:3:13", "helix.cluster.leader", "sslmode"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("the error shows the password: %v", err)
	}
}

func clusterYAML(url, name, dir, replica string) string {
	return fmt.Sprintf(`helix:
  name: ticker
  cluster:
    leader: %s
    name: %s
    retry_interval: 100ms
    check_interval: 100ms
workflows:
  - id: tick
    trigger: timer://tick?period=50ms&delay=0
    steps:
      - set-body: "x\n"
      - to: file://%s?fileName=%s.log&fileExist=append
  - id: echo
    trigger: direct://echo
    steps:
      - set-body: pong
`, url, name, dir, replica)
}

func ticks(t *testing.T, dir, replica string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, replica+".log"))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "x\n")
}

// Two replicas in one process: only the leader's timer fires, the follower serves
// its other triggers and is ready, and it takes over when the leader stops.
func TestClusterSingletonTriggersRunOnTheLeader(t *testing.T) {
	t.Parallel()
	url := testtools.PostgresURL(t)
	name := testtools.UniqueName("app")
	dir := t.TempDir()
	var logs testtools.SyncBuffer
	opts := app.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), ManagementAddr: "127.0.0.1:0"}
	build := func(replica string) *app.App {
		cfg, err := config.LoadBytes("helix.yaml", []byte(clusterYAML(url, name, dir, replica)))
		if err != nil {
			t.Fatal(err)
		}
		a, err := app.Build(cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return a
	}
	stop := func(a *app.App) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	}
	a := build("a")
	testtools.Eventually(t, "a leads and ticks", func() bool { return a.IsLeader() && ticks(t, dir, "a") >= 3 })
	b := build("b")
	defer stop(b)
	time.Sleep(500 * time.Millisecond) // an observation window (five timer periods) for what must not happen: no readiness to wait for
	if b.IsLeader() || ticks(t, dir, "b") != 0 {
		t.Fatalf("the follower leads (%v) or fired (%d ticks)", b.IsLeader(), ticks(t, dir, "b"))
	}
	if m := a.Metrics().Cluster; m == nil || !m.Leader || m.Terms != 1 || m.Cluster != name {
		t.Errorf("leader's cluster metrics: %+v", m)
	}
	if m := b.Metrics().Cluster; m == nil || m.Leader || m.Terms != 0 {
		t.Errorf("follower's cluster metrics: %+v", m)
	}
	if s := b.Context().WorkflowState("tick"); s != engine.StateStandby {
		t.Errorf("follower's tick is %s, want %s", s, engine.StateStandby)
	}
	if s := b.Context().WorkflowState("echo"); s != engine.StateStarted {
		t.Errorf("follower's echo is %s", s)
	}
	if s := a.Context().WorkflowState("tick"); s != engine.StateStarted {
		t.Errorf("leader's tick is %s", s)
	}
	for _, r := range []*app.App{a, b} {
		resp, err := http.Get("http://" + r.ManagementAddr() + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("/readyz of %s: %d", r.ManagementAddr(), resp.StatusCode)
		}
	}
	ex := exchange.New(exchange.InOut)
	if err := b.Context().Send(context.Background(), "direct://echo", ex); err != nil || ex.In().Body() != "pong" {
		t.Fatalf("the follower's direct trigger: %v %v", err, ex.In().Body())
	}

	stopped := time.Now()
	stop(a)
	aTicks := ticks(t, dir, "a")
	testtools.Eventually(t, "b takes over", func() bool { return b.IsLeader() && ticks(t, dir, "b") >= 1 })
	t.Logf("b fired %v after a stopped", time.Since(stopped))
	if got := ticks(t, dir, "a"); got != aTicks {
		t.Errorf("a fired after it stopped: %d ticks, then %d", aTicks, got)
	}
	for _, want := range []string{"this replica is now the leader", "singleton triggers started on this replica", "this replica resigned the leadership"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, logs.String())
		}
	}
}

// A leader whose singleton trigger cannot start resigns and campaigns again after
// retry_interval, so that another replica may try; the error is logged.
func TestClusterLeaderResignsWhenTriggersFail(t *testing.T) {
	t.Parallel()
	url := testtools.PostgresURL(t)
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs testtools.SyncBuffer
	cfg, err := config.LoadBytes("helix.yaml", []byte(fmt.Sprintf(`helix:
  cluster:
    leader: %s
    name: %s
    retry_interval: 100ms
workflows:
  - id: inbox
    trigger: file://%s/inbox
    steps: [{log: got a file}]
`, url, testtools.UniqueName("fail"), notADir)))
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Build(cfg, app.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), ManagementAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	testtools.Eventually(t, "two terms", func() bool { return a.Metrics().Cluster.Terms >= 2 })
	if !strings.Contains(logs.String(), "the singleton triggers failed to start; resigning the leadership") ||
		!strings.Contains(logs.String(), "workflow inbox: start trigger file://") {
		t.Errorf("logs:\n%s", logs.String())
	}
	if s := a.Context().WorkflowState("inbox"); s != engine.StateStandby {
		t.Errorf("inbox is %s", s)
	}
}
