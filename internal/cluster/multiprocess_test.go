package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arvenza/helix/internal/testtools"
)

// The configured timings of the multi-process test; docs/scaling.md reports what
// it measures with them.
const (
	mpRetry = 500 * time.Millisecond
	mpCheck = 500 * time.Millisecond
)

const replicaYAML = `helix:
  name: ticker
  management:
    addr: ${env:HELIX_TEST_MGMT}
  cluster:
    leader: %[1]s
    name: %[2]s
    retry_interval: %[3]s
    check_interval: %[4]s
workflows:
  - id: tick
    trigger: timer://tick?period=100ms&delay=0
    steps:
      - set-body:
          constant: {replica: "${env:HELIX_TEST_REPLICA}"}
      - to: %[1]s?operation=insert&table=ticks&returning=false
  - id: echo
    trigger: http-server://127.0.0.1:${env:HELIX_TEST_HTTP}/echo
    steps:
      - set-body: pong
`

// replica is a helix process of the test with its own HTTP port.
type replica struct {
	*testtools.Replica
	http string
}

func startReplica(t *testing.T, file, name string) *replica {
	t.Helper()
	port := strconv.Itoa(testtools.FreePort(t))
	return &replica{Replica: testtools.StartReplica(t, name, []string{file}, "HELIX_TEST_HTTP="+port), http: port}
}

type tick struct {
	replica string
	at      time.Time
}

func ticksSince(t *testing.T, conn *pgx.Conn, since time.Time) []tick {
	t.Helper()
	rows, err := conn.Query(context.Background(), "SELECT replica, at FROM ticks WHERE at > $1 ORDER BY at", since)
	if err != nil {
		t.Fatal(err)
	}
	var out []tick
	for rows.Next() {
		var tk tick
		if err := rows.Scan(&tk.replica, &tk.at); err != nil {
			t.Fatal(err)
		}
		out = append(out, tk)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func firers(ts []tick) map[string]int {
	out := map[string]int{}
	for _, tk := range ts {
		out[tk.replica]++
	}
	return out
}

// Three helix processes run the same file with a timer workflow inserting a row per
// firing, named after the process: exactly one fires; when it is killed with
// SIGKILL another takes over within the configured retry interval, and again one
// fires. The failover times measured are logged (docs/scaling.md reports them).
func TestThreeProcessesOneTimer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three helix processes")
	}
	db := testtools.PostgresDatabase(t)
	testtools.PostgresExec(t, db, "CREATE TABLE ticks (id bigserial PRIMARY KEY, replica text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())")
	file := filepath.Join(t.TempDir(), "helix.yaml")
	yaml := fmt.Sprintf(replicaYAML, db, testtools.UniqueName("ticker"), mpRetry, mpCheck)
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	begin := time.Now()
	alive := map[string]*replica{}
	for _, name := range []string{"r1", "r2", "r3"} {
		alive[name] = startReplica(t, file, name)
	}
	for _, r := range alive {
		testtools.WaitReady(t, 60*time.Second, r.Replica)
	}
	testtools.WaitFor(t, 30*time.Second, "ten ticks", func() bool { return len(ticksSince(t, conn, begin)) >= 10 })

	leader := checkOneFires(t, conn, alive, begin)
	// The leader is killed, then the next one stopped as an orchestrator stops it.
	for round, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		// Every replica, follower or not, serves HTTP and is ready.
		for _, r := range alive {
			if code, body := testtools.HTTPGet("http://127.0.0.1:" + r.http + "/echo"); code != http.StatusOK || body != "pong" {
				t.Errorf("%s /echo: %d %s", r.Name, code, body)
			}
			if !r.Ready() {
				t.Errorf("%s is not ready", r.Name)
			}
		}
		killed := alive[leader]
		if err := killed.Signal(sig); err != nil {
			t.Fatal(err)
		}
		kill := time.Now()
		delete(alive, leader)

		var first tick
		testtools.WaitFor(t, 10*time.Second, "another replica takes over", func() bool {
			for _, tk := range ticksSince(t, conn, kill) {
				if tk.replica != leader {
					first = tk
					return true
				}
			}
			return false
		})
		failover := first.at.Sub(kill)
		t.Logf("round %d: %s to the leader %s; %s fired %v later (retry_interval %v)", round+1, map[syscall.Signal]string{syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM"}[sig],
			leader, first.replica, failover.Round(time.Millisecond), mpRetry)
		if failover > mpRetry+2*time.Second {
			t.Errorf("failover took %v, want about retry_interval %v", failover, mpRetry)
		}
		err := killed.Wait()
		switch sig {
		case syscall.SIGKILL:
			if n := firers(ticksSince(t, conn, kill))[leader]; n > 0 {
				t.Errorf("the killed replica %s fired %d times after the kill", leader, n)
			}
		default:
			// Stopped: its exchange in flight may end after the signal, but before the
			// next leader starts; and it exits cleanly (66 would be a data race).
			if n := firers(ticksSince(t, conn, first.at))[leader]; n > 0 {
				t.Errorf("the stopped replica %s fired %d times after %s took over", leader, n, first.replica)
			}
			if err != nil {
				t.Errorf("%s exited with %v after %v:\n%s", leader, err, sig, killed.Logs.String())
			}
			if !strings.Contains(killed.Logs.String(), "this replica resigned the leadership") {
				t.Errorf("%s did not log resigning:\n%s", leader, killed.Logs.String())
			}
		}
		time.Sleep(1500 * time.Millisecond)
		next := checkOneFires(t, conn, alive, first.at.Add(-time.Millisecond))
		if next != first.replica {
			t.Errorf("%s took over, then %s fired", first.replica, next)
		}
		leader = next
	}
}

// checkOneFires checks that exactly one replica fired since since, and that it
// alone logged becoming leader and reports helix_cluster_leader 1; it returns it.
func checkOneFires(t *testing.T, conn *pgx.Conn, alive map[string]*replica, since time.Time) string {
	t.Helper()
	f := firers(ticksSince(t, conn, since))
	if len(f) != 1 {
		t.Fatalf("replicas that fired since %v: %v, want exactly one", since.Format(time.StampMilli), f)
	}
	var leader string
	for name := range f {
		leader = name
	}
	checkMetrics(t, alive, leader)
	if !strings.Contains(alive[leader].Logs.String(), "this replica is now the leader") {
		t.Errorf("%s fires but did not log becoming leader:\n%s", leader, alive[leader].Logs.String())
	}
	return leader
}

func checkMetrics(t *testing.T, alive map[string]*replica, leader string) {
	t.Helper()
	for name, r := range alive {
		want := "0"
		if name == leader {
			want = "1"
		}
		m := metrics(r)
		if !strings.Contains(m, "helix_cluster_leader{cluster=") || !strings.Contains(grepLines(m, "helix_cluster_leader{"), `"} `+want) {
			t.Errorf("%s's /metrics, want helix_cluster_leader %s:\n%s", name, want, grepLines(m, "helix_cluster"))
		}
	}
}

func metrics(r *replica) string {
	_, body := r.Get("/metrics")
	return body
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
