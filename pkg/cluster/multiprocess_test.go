package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
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

type replica struct {
	name string
	cmd  *exec.Cmd
	mgmt string
	http string
	logs *testtools.SyncBuffer
}

func startReplica(t *testing.T, helix, file, name string) *replica {
	t.Helper()
	r := &replica{name: name, mgmt: "127.0.0.1:" + strconv.Itoa(testtools.FreePort(t)),
		http: strconv.Itoa(testtools.FreePort(t)), logs: &testtools.SyncBuffer{}}
	r.cmd = exec.Command(helix, "run", file)
	r.cmd.Env = append(os.Environ(), "HELIX_TEST_REPLICA="+name, "HELIX_TEST_MGMT="+r.mgmt, "HELIX_TEST_HTTP="+r.http)
	r.cmd.Stderr = r.logs
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			_ = r.cmd.Process.Kill()
			_ = r.cmd.Wait()
		}
	})
	return r
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String()
}

func (r *replica) ready(t *testing.T) bool {
	code, _ := get(t, "http://"+r.mgmt+"/readyz")
	return code == http.StatusOK
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
	helix := testtools.HelixBinary(t)
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
		alive[name] = startReplica(t, helix, file, name)
	}
	waitUntil(t, 60*time.Second, "all replicas ready", func() bool {
		for _, r := range alive {
			if !r.ready(t) {
				return false
			}
		}
		return true
	})
	waitUntil(t, 30*time.Second, "ten ticks", func() bool { return len(ticksSince(t, conn, begin)) >= 10 })

	leader := checkOneFires(t, conn, alive, begin)
	// The leader is killed, then the next one stopped as an orchestrator stops it.
	for round, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		// Every replica, follower or not, serves HTTP and is ready.
		for _, r := range alive {
			if code, body := get(t, "http://127.0.0.1:"+r.http+"/echo"); code != http.StatusOK || body != "pong" {
				t.Errorf("%s /echo: %d %s", r.name, code, body)
			}
			if !r.ready(t) {
				t.Errorf("%s is not ready", r.name)
			}
		}
		killed := alive[leader]
		if err := killed.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		kill := time.Now()
		delete(alive, leader)
		exited := make(chan error, 1)
		go func() { exited <- killed.cmd.Wait() }()

		var first tick
		waitUntil(t, 10*time.Second, "another replica takes over", func() bool {
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
		err := <-exited
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
				t.Errorf("%s exited with %v after %v:\n%s", leader, err, sig, killed.logs.String())
			}
			if !strings.Contains(killed.logs.String(), "this replica resigned the leadership") {
				t.Errorf("%s did not log resigning:\n%s", leader, killed.logs.String())
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
	if !strings.Contains(alive[leader].logs.String(), "this replica is now the leader") {
		t.Errorf("%s fires but did not log becoming leader:\n%s", leader, alive[leader].logs.String())
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
		m := metrics(t, r)
		if !strings.Contains(m, "helix_cluster_leader{cluster=") || !strings.Contains(grepLines(m, "helix_cluster_leader{"), `"} `+want) {
			t.Errorf("%s's /metrics, want helix_cluster_leader %s:\n%s", name, want, grepLines(m, "helix_cluster"))
		}
	}
}

func metrics(t *testing.T, r *replica) string {
	_, body := get(t, "http://"+r.mgmt+"/metrics")
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

func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
