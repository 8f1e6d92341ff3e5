package testtools

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The environment a Replica's helix process gets, for its configuration files to
// read with ${env:…}.
const (
	// EnvReplicaName holds the replica's name (r1, r2 …): a workflow writes it into
	// what it produces so that a test can tell which process did the work.
	EnvReplicaName = "HELIX_TEST_REPLICA"
	// EnvReplicaMgmt holds the replica's management address (127.0.0.1:port); the
	// files set helix.management.addr: ${env:HELIX_TEST_MGMT}.
	EnvReplicaMgmt = "HELIX_TEST_MGMT"
)

// Replica is one `helix run` process of a multi-process test: the same files run
// in several replicas, told apart by their name and management address (see
// EnvReplicaName, EnvReplicaMgmt). Its stderr (Helix's log) is kept in Logs.
// The process is killed, if still running, when the test ends. Its methods are
// safe for concurrent use.
type Replica struct {
	Name string
	// Mgmt is the management address, 127.0.0.1:port, where /readyz, /metrics …
	// answer.
	Mgmt string
	Logs *SyncBuffer

	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited and err is set
	err    error
}

// StartReplica starts the helix binary of HelixBinary as `helix run files…`
// with the replica's name and a free management port in its environment, plus
// env ("NAME=value" entries, for ports of its own). It does not wait for the
// process to be ready: see WaitReady.
func StartReplica(t testing.TB, name string, files []string, env ...string) *Replica {
	t.Helper()
	helix := HelixBinary(t)
	r := &Replica{Name: name, Mgmt: "127.0.0.1:" + strconv.Itoa(FreePort(t)), Logs: &SyncBuffer{}, exited: make(chan struct{})}
	r.cmd = exec.Command(helix, append([]string{"run"}, files...)...)
	r.cmd.Env = append(append(os.Environ(), EnvReplicaName+"="+name, EnvReplicaMgmt+"="+r.Mgmt), env...)
	r.cmd.Stderr = r.Logs
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start replica %s: %v", name, err)
	}
	go func() {
		r.err = r.cmd.Wait()
		close(r.exited)
	}()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		<-r.exited
	})
	return r
}

// Signal sends sig to the process (an error once it has exited).
func (r *Replica) Signal(sig syscall.Signal) error {
	return r.cmd.Process.Signal(sig)
}

// Wait waits for the process to exit and returns what exec.Cmd.Wait returned
// (nil for exit status 0). It may be called any number of times.
func (r *Replica) Wait() error {
	<-r.exited
	return r.err
}

// Exited reports whether the process has exited.
func (r *Replica) Exited() bool {
	select {
	case <-r.exited:
		return true
	default:
		return false
	}
}

// Get sends GET http://<Mgmt><path> and returns the status code and body; a
// request that fails (the process is not listening yet, or is gone) returns 0
// and the error's text.
func (r *Replica) Get(path string) (int, string) {
	return HTTPGet("http://" + r.Mgmt + path)
}

// HTTPGet sends GET url (with a 5s timeout) and returns the status code and
// body; a request that fails returns 0 and the error's text, for tests that
// poll a process which may not listen yet, or any more.
func HTTPGet(url string) (int, string) {
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err.Error()
	}
	return resp.StatusCode, string(body)
}

// Ready reports whether the replica's /readyz answers 200.
func (r *Replica) Ready() bool {
	code, _ := r.Get("/readyz")
	return code == http.StatusOK
}

// WaitReady waits until every replica is ready, failing the test (with the logs
// of a replica that exited) after within.
func WaitReady(t testing.TB, within time.Duration, replicas ...*Replica) {
	t.Helper()
	var wg sync.WaitGroup
	ok := make([]bool, len(replicas))
	for i, r := range replicas {
		wg.Go(func() {
			deadline := time.Now().Add(within)
			for !r.Exited() && time.Now().Before(deadline) {
				if r.Ready() {
					ok[i] = true
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	for i, r := range replicas {
		switch {
		case r.Exited():
			t.Fatalf("replica %s exited before it was ready (%v):\n%s", r.Name, r.Wait(), r.Logs.String())
		case !ok[i]:
			t.Fatalf("replica %s was not ready within %v:\n%s", r.Name, within, r.Logs.String())
		}
	}
}

// WaitFor polls cond every 20ms until it is true, failing the test with what
// after within. Multi-process tests use it instead of fixed sleeps, with
// generous deadlines: a loaded machine is slow, not wrong.
func WaitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
