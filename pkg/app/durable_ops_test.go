package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/management"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/exchange"
)

// A running app with a durable workflow: the manifest names its store and its
// durable workflows (never the path), /metrics counts its runs by state and
// times their checkpoints, GET /runs lists them.
func TestDurableRunsOnTheManagementEndpoints(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := buildStart(t, `
helix:
  data_dir: `+dir+`
workflows:
  - id: orders
    durable: true
    trigger: direct://orders
    steps:
      - set-body: ${body} placed
      - set-header: {name: shipped, constant: true}
  - id: plain
    trigger: direct://plain
    steps:
      - log: x
`, quiet)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ex := exchange.NewWithBody(exchange.InOut, "order 7")
	if err := a.Context().Run(ctx, "orders", ex); err != nil {
		t.Fatal(err)
	}
	id := ex.In().HeaderString(durable.HeaderRunID)
	base := "http://" + a.ManagementAddr()

	code, body := testtools.HTTPGet(base + management.ManifestPath)
	var m management.Manifest
	if code != 200 || json.Unmarshal([]byte(body), &m) != nil || m.Durable == nil {
		t.Fatalf("manifest: %d %s", code, body)
	}
	if m.Durable.Store != "sqlite" || m.Durable.Executor != "local" || strings.Join(m.Durable.Workflows, ",") != "orders" {
		t.Errorf("durable section %+v", m.Durable)
	}
	if strings.Contains(body, dir) {
		t.Error("the manifest shows the store's path")
	}

	code, body = testtools.HTTPGet(base + "/metrics")
	for _, want := range []string{
		`helix_durable_runs{state="completed"} 1`,
		`helix_durable_runs_parked 0`,
		`helix_durable_checkpoint_seconds_count 2`,
		`helix_durable_resume_seconds_count 0`,
	} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("/metrics has no %q", want)
		}
	}

	code, body = testtools.HTTPGet(base + "/runs?state=completed")
	if code != 200 || !strings.Contains(body, `"id": "`+id+`"`) || !strings.Contains(body, `"workflow": "orders"`) {
		t.Errorf("GET /runs: %d %s", code, body)
	}
	code, body = testtools.HTTPGet(base + "/runs/" + id)
	if code != 200 || !strings.Contains(body, `"steps": [`) || !strings.Contains(body, "set-header") {
		t.Errorf("GET /runs/%s: %d %s", id, code, body)
	}
}

// Without a durable workflow there is no durable section, no durable metric,
// and GET /runs says why it has nothing.
func TestNoDurableOperationsWithoutDurableWorkflows(t *testing.T) {
	t.Parallel()
	a := buildStart(t, "workflows:\n  - id: w\n    trigger: direct://w\n    steps:\n      - log: x\n", quiet)
	base := "http://" + a.ManagementAddr()
	if _, body := testtools.HTTPGet(base + management.ManifestPath); strings.Contains(body, `"durable"`) {
		t.Errorf("manifest: %s", body)
	}
	if _, body := testtools.HTTPGet(base + "/metrics"); strings.Contains(body, "helix_durable_") {
		t.Error("durable metrics without a durable workflow")
	}
	if code, body := testtools.HTTPGet(base + "/runs"); code != 404 || !strings.Contains(body, "no durable runs") {
		t.Errorf("GET /runs: %d %s", code, body)
	}
}

// On PostgreSQL the replica holds its executor lock while it runs, takes it
// again when its session breaks, and lets go of it when it stops.
func TestExecutorLockHeldAndRetaken(t *testing.T) {
	t.Parallel()
	db := testtools.PostgresDatabase(t)
	cfg, err := config.LoadBytes("helix.yaml", []byte(`
helix:
  durable_store: `+db+`
  replica_id: lock-test
  data_dir: `+t.TempDir()+`
workflows:
  - id: w
    durable: true
    trigger: direct://w
    steps:
      - log: x
`))
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Build(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	sessions := func() int {
		conn, err := pgx.Connect(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		var n int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE l.locktype = 'advisory' AND l.granted AND a.datname = current_database() AND a.application_name = 'helix durable executor lock-test'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := sessions(); n != 1 {
		t.Fatalf("%d sessions hold the executor lock after Start", n)
	}
	testtools.PostgresExec(t, db, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = 'helix durable executor lock-test'`)
	testtools.Eventually(t, "the executor lock taken again", func() bool { return sessions() == 1 })
	if err := a.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := sessions(); n != 0 {
		t.Fatalf("%d sessions hold the executor lock after Stop", n)
	}
}
