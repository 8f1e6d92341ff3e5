package durable_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arvenza/helix/internal/testtools"
)

// takeoverBound is the promise: the runs of a killed replica finish on
// the others within it.
const takeoverBound = 10 * time.Second

const replicasYAML = `helix:
  name: takeover
  management:
    addr: ${env:HELIX_TEST_MGMT}
  durable_store: %[1]s
  replica_id: ${env:HELIX_TEST_REPLICA}
  data_dir: %[3]s
workflows:
  - id: order
    durable: true
    trigger: http-server://127.0.0.1:${env:HELIX_TEST_HTTP}/order
    steps:
      - to: %[2]s/check
      - to: %[2]s/ship
      - set-body: shipped
`

// Three helix processes share one PostgreSQL store; one of them gets a load of
// durable runs and is killed with SIGKILL while they are in flight: every run it
// had started finishes on the two others within ten seconds, from its last
// checkpoint.
func TestThreeReplicasKillOne(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three helix processes")
	}
	db := testtools.PostgresDatabase(t)
	file := filepath.Join(t.TempDir(), "helix.yaml")
	// The upstream: each call takes a while, so that runs are in flight when
	// the replica dies.
	var calls atomic.Int64
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		time.Sleep(300 * time.Millisecond) // a slow service: the behaviour under test
		_, _ = io.Copy(w, r.Body)
	}))
	defer upstream.Close()
	if err := os.WriteFile(file, fmt.Appendf(nil, replicasYAML, db, upstream.URL, t.TempDir()), 0o600); err != nil {
		t.Fatal(err)
	}
	type replica struct {
		*testtools.Replica
		http string
	}
	var rs []replica
	for _, name := range []string{"r1", "r2", "r3"} {
		port := strconv.Itoa(testtools.FreePort(t))
		rs = append(rs, replica{testtools.StartReplica(t, name, []string{file}, "HELIX_TEST_HTTP="+port), port})
	}
	for _, r := range rs {
		testtools.WaitReady(t, 60*time.Second, r.Replica)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	// The load: runs started on r1 (their callers lose their answer when it dies,
	// the runs must not be lost).
	victim := rs[0]
	const load = 40
	var wg sync.WaitGroup
	for i := range load {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := http.Client{Timeout: 30 * time.Second}
			resp, err := c.Post("http://127.0.0.1:"+victim.http+"/order", "text/plain", bytes.NewReader([]byte(strconv.Itoa(i))))
			if err == nil {
				resp.Body.Close()
			}
		}()
	}
	pending := func(executor string) []string {
		rows, err := conn.Query(ctx, "SELECT workflow_uuid FROM dbos.workflow_status WHERE executor_id = $1 AND status = 'PENDING'", executor)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	var inFlight []string
	testtools.Eventually(t, "runs in flight on r1", func() bool {
		inFlight = pending("r1")
		return len(inFlight) >= load/2
	})
	if err := victim.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	kill := time.Now()
	_ = victim.Wait()
	inFlight = pending("r1") // what it had when it died
	t.Logf("r1 killed with %d runs in flight", len(inFlight))

	type outcome struct {
		status, executor string
		done             time.Time
	}
	finished := map[string]outcome{}
	testtools.WaitFor(t, takeoverBound+5*time.Second, "the killed replica's runs to finish elsewhere", func() bool {
		rows, err := conn.Query(ctx, "SELECT workflow_uuid, status, executor_id, to_timestamp(updated_at/1000.0) FROM dbos.workflow_status WHERE workflow_uuid = ANY($1)", inFlight)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id string
			var o outcome
			if err := rows.Scan(&id, &o.status, &o.executor, &o.done); err != nil {
				t.Fatal(err)
			}
			if o.status == "SUCCESS" {
				finished[id] = o
			}
		}
		return len(finished) == len(inFlight)
	})
	var last time.Duration
	for id, o := range finished {
		if o.executor == "r1" {
			t.Errorf("run %s finished on the killed replica", id)
		}
		if d := o.done.Sub(kill); d > last {
			last = d
		}
	}
	t.Logf("all %d runs finished on the other replicas %v after the kill; %d upstream calls for %d runs",
		len(finished), last.Round(time.Millisecond), calls.Load(), load)
	if last > takeoverBound {
		t.Errorf("the last run finished %v after the kill, want within %v", last, takeoverBound)
	}
	wg.Wait()
}
