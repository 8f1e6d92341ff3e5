// Package killtest kills a helix process running a durable workflow at random
// points, again and again, under load, and checks that every run completes
// exactly once and that no completed step runs again.
//
// The harness (this file) runs the process and its load; kill_test.go is the
// test. Other parts add steps and checks through [Extension] (see there).
package killtest

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite" // reads the embedded durable store

	"github.com/arvenza/helix/internal/testtools"
)

// Extension adds steps to the kill test's workflow and checks of its own: a
// side effect to count (an mcp:// call to a server that records receipts, a
// postgres:// insert, an http:// call). Register one in an init function of a
// _test.go file of this package:
//
//	func init() { extensions = append(extensions, Extension{Name: "postgres", …}) }
type Extension struct {
	Name string
	// Setup runs before the first start (start a server, create a table); it
	// may add environment for the helix process to h.Env.
	Setup func(t *testing.T, h *Harness)
	// Steps is YAML of steps (each line indented by 6 spaces, "      - to: …")
	// run after the ledger step and before the reply. ${header.HelixRunId}
	// is the run's id.
	Steps string
	// Check runs after every run completed, with the run ids.
	Check func(t *testing.T, h *Harness, runIDs []string)
}

// extensions are the registered Extensions.
var extensions []Extension

// Harness runs one helix process at a time on one configuration and store.
type Harness struct {
	t      *testing.T
	Dir    string // the data dir (durable.db) and the ledger
	Addr   string // the HTTP trigger's host:port
	Env    []string
	config string

	mu          sync.Mutex
	cmd         *exec.Cmd
	exited      chan struct{}
	incarnation int
	logs        bytes.Buffer
	dumped      bool // Dump was called
}

// workflowYAML is the durable workflow under test: steps of its own (a
// Starlang transform, header and body steps, the ledger append, a slow HTTP
// call that gives the kills a step to land in, the reply), the extensions'
// steps before the reply.
const workflowYAML = `helix:
  data_dir: %[1]s
  shutdown_timeout: 1s
  management:
    enabled: false
workflows:
  - id: orders
    durable: true
    trigger: http-server://%[2]s/orders
    steps:
      - transform:
          starlang: |
            {"order": payload["order"], "total": payload["qty"] * 3}
      - set-header:
          name: Order
          starlang: str(payload["order"])
      - set-body: "${header.HelixRunId}\n"
      - to: file://%[3]s?fileName=ledger-${env:HELIX_KILLTEST_INCARNATION}.txt&fileExist=append
      - to: http://%[5]s/slow
%[4]s      - set-body: "done ${header.Order}"
`

// NewHarness writes the configuration for a free port under a temp dir.
func NewHarness(t *testing.T) *Harness {
	t.Helper()
	dir := t.TempDir()
	h := &Harness{t: t, Dir: dir, Addr: freeAddr(t)}
	var steps strings.Builder
	for _, e := range extensions {
		if e.Setup != nil {
			e.Setup(t, h)
		}
		steps.WriteString(e.Steps)
	}
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Duration(5+rand.IntN(30)) * time.Millisecond)
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(slow.Close)
	h.config = filepath.Join(dir, "helix.yaml")
	yaml := fmt.Sprintf(workflowYAML, dir, h.Addr, dir, steps.String(), strings.TrimPrefix(slow.URL, "http://"))
	if err := os.WriteFile(h.config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.Kill()
		if t.Failed() {
			n := 8000
			if h.dumped {
				n = 120000 // the stuck incarnation's goroutines
			}
			t.Logf("helix output (last incarnations):\n%s", tail(h.logs.String(), n))
		}
	})
	return h
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func freeAddr(t *testing.T) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(testtools.FreePort(t))
}

// Start starts a new incarnation of helix and waits until it listens.
func (h *Harness) Start() {
	h.t.Helper()
	h.mu.Lock()
	h.incarnation++
	cmd := exec.Command(testtools.HelixBinary(h.t), "run", h.config)
	cmd.Env = append(append(os.Environ(), h.Env...), "HELIX_KILLTEST_INCARNATION="+strconv.Itoa(h.incarnation))
	cmd.Stdout, cmd.Stderr = &lockedWriter{h: h}, &lockedWriter{h: h}
	if err := cmd.Start(); err != nil {
		h.mu.Unlock()
		h.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	h.cmd, h.exited = cmd, exited
	h.mu.Unlock()
	deadline := time.Now().Add(testtools.StartupBound)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", h.Addr, 100*time.Millisecond); err == nil {
			c.Close()
			return
		}
		select {
		case <-exited:
			h.t.Fatalf("helix exited at start:\n%s", tail(h.logs.String(), 4000))
		case <-time.After(20 * time.Millisecond):
		}
	}
	h.t.Fatalf("helix did not listen on %s", h.Addr)
}

type lockedWriter struct{ h *Harness }

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	return w.h.logs.Write(p)
}

// Dump makes the running incarnation print its goroutines (SIGQUIT: the Go
// runtime writes every stack to stderr and exits) into the logs the test
// shows when it fails.
func (h *Harness) Dump() {
	h.mu.Lock()
	cmd, exited := h.cmd, h.exited
	h.cmd = nil
	h.dumped = true
	h.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// Kill kills the running incarnation with SIGKILL and waits for it to end.
func (h *Harness) Kill() {
	h.mu.Lock()
	cmd, exited := h.cmd, h.exited
	h.cmd = nil
	h.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// Call posts order n with its idempotency key until helix answers (a kill
// cuts the connection: the call is repeated, as a client would), and returns
// the reply.
func (h *Harness) Call(ctx context.Context, n int) (string, error) {
	body := fmt.Sprintf(`{"order": %d, "qty": %d}`, n, n%7+1)
	client := &http.Client{Timeout: 20 * time.Second}
	last := "" // the last answer, for the error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+h.Addr+"/orders", strings.NewReader(body))
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "order-"+strconv.Itoa(n))
		resp, err := client.Do(req)
		if err == nil {
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			last = fmt.Sprintf("%s: %s", resp.Status, tail(string(data), 300))
			if resp.StatusCode == http.StatusOK {
				return string(data), nil
			}
			// 404: a process just started listens before its workflow's route
			// is up (http-server's startup window); a client tries again.
			if resp.StatusCode < 500 && resp.StatusCode != http.StatusNotFound {
				return "", fmt.Errorf("order %d: %s: %s", n, resp.Status, data)
			}
		}
		select {
		case <-ctx.Done():
			if err != nil {
				last = err.Error()
			}
			return "", fmt.Errorf("order %d: %w (last answer: %s)", n, ctx.Err(), last)
		case <-time.After(time.Duration(20+rand.IntN(30)) * time.Millisecond):
		}
	}
}

// Ledger returns, by run id, the incarnations that ran the ledger step (it
// appends the run id to the ledger file of the process running it: the
// process's own, not one recorded in a checkpoint).
func (h *Harness) Ledger() map[string][]string {
	files, err := filepath.Glob(filepath.Join(h.Dir, "ledger-*.txt"))
	if err != nil || len(files) == 0 {
		h.t.Fatalf("no ledger (%v)", err)
	}
	out := map[string][]string{}
	for _, f := range files {
		inc := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "ledger-"), ".txt")
		data, err := os.ReadFile(f)
		if err != nil {
			h.t.Fatal(err)
		}
		for _, run := range strings.Fields(string(data)) {
			out[run] = append(out[run], inc)
		}
	}
	return out
}

// store opens the durable store, read only.
func (h *Harness) store() *sql.DB {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(h.Dir, "durable.db")+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		h.t.Fatal(err)
	}
	return db
}

// Recovered counts the runs that a restart took up where a kill left them
// (executed more than once).
func (h *Harness) Recovered() int {
	db := h.store()
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM workflow_status WHERE recovery_attempts > 1`).Scan(&n); err != nil {
		h.t.Fatal(err)
	}
	return n
}

// Unfinished describes the runs whose workflow is not SUCCESS in the durable
// store (status and recovery attempts), for a failure's message.
func (h *Harness) Unfinished() string {
	db := h.store()
	defer db.Close()
	rows, err := db.Query(`SELECT workflow_uuid, status, recovery_attempts FROM workflow_status WHERE status <> 'SUCCESS'`)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, status string
		var attempts int
		if err := rows.Scan(&id, &status, &attempts); err != nil {
			return err.Error()
		}
		fmt.Fprintf(&b, "%s %s (recovery attempts %d); ", id, status, attempts)
	}
	return b.String()
}

// Runs returns the state of each run in the store, by run id.
func (h *Harness) Runs() map[string]string {
	db := h.store()
	defer db.Close()
	rows, err := db.Query(`SELECT run_id, state FROM helix_runs`)
	if err != nil {
		h.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, state string
		if err := rows.Scan(&id, &state); err != nil {
			h.t.Fatal(err)
		}
		out[id] = state
	}
	return out
}
