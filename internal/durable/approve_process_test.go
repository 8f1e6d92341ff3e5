package durable_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/testtools"
)

// approveFile is a durable workflow that waits for an approval between two
// steps; the link of the wait is in the log.
const approveFile = `helix:
  data_dir: ${env:DATA_DIR}
  management:
    addr: ${env:HELIX_TEST_MGMT}
workflows:
  - id: ship
    durable: true
    trigger: http-server://127.0.0.1:${env:PORT}/ship?httpMethod=POST
    steps:
      - set-body: {constant: "${body} checked"}
      - approve:
          message: "Ship ${body}?"
      - set-body: {constant: "${body}, shipped (${header.HelixApproval} by ${header.HelixApprovalBy})"}
`

var linkInLog = regexp.MustCompile(`url=(http://\S+/helix/callbacks/\S+)`)

// An approve: run of the helix process waits across two restarts (kill -9
// each time) and completes after the approval, which comes by the link the
// first process logged: the links survive restarts (the key that signs them is
// kept in the data dir) and work once.
func TestApproveWaitsAcrossTwoProcessRestarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "helix.yaml")
	if err := os.WriteFile(file, []byte(approveFile), 0o600); err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(testtools.FreePort(t))
	env := []string{"DATA_DIR=" + filepath.Join(dir, "data"), "PORT=" + port}
	start := func(name string) *testtools.Replica {
		r := testtools.StartReplica(t, name, []string{file}, env...)
		testtools.WaitReady(t, testtools.StartupBound, r)
		return r
	}
	order := func() (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:"+port+"/ship", strings.NewReader("order-7"))
		req.Header.Set("Idempotency-Key", "order-7")
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var v map[string]any
		if json.Unmarshal(b, &v) != nil {
			v = map[string]any{"text": string(b)}
		}
		return resp.StatusCode, v
	}

	r1 := start("r1")
	code, body := order()
	if code != 200 || body["state"] != "input_required" {
		t.Fatalf("the order: %d %v\n%s", code, body, r1.Logs.String())
	}
	var link string
	testtools.WaitFor(t, testtools.StartupBound, "the link in the log", func() bool {
		m := linkInLog.FindStringSubmatch(r1.Logs.String())
		if m != nil {
			link = m[1]
		}
		return m != nil
	})
	path := link[strings.Index(link, "/helix/callbacks/"):]
	kill := func(r *testtools.Replica) {
		if err := r.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = r.Wait()
	}
	kill(r1)

	r2 := start("r2") // the first restart: the run still waits, the link shows it
	if code, page := r2.Get(path); code != 200 || !strings.Contains(page, "Ship order-7 checked?") {
		t.Fatalf("the link after a restart: %d %s\n%s", code, page, r2.Logs.String())
	}
	if code, body := order(); code != 200 || body["state"] != "input_required" {
		t.Fatalf("the order after a restart: %d %v", code, body)
	}
	kill(r2)

	r3 := start("r3") // the second restart: approve by the first process's link
	post := func() int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+r3.Mgmt+path+"?decision=approve", nil)
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(); code != 200 {
		t.Fatalf("approve: %d\n%s", code, r3.Logs.String())
	}
	testtools.WaitFor(t, testtools.StartupBound, "the run completed", func() bool {
		code, body = order()
		return code == 200 && body["text"] != nil
	})
	if got := body["text"]; got != "order-7 checked, shipped (approved by callback link)" {
		t.Errorf("the run ended with %v", body)
	}
	if code := post(); code != 410 {
		t.Errorf("the link once more: %d, want 410", code)
	}
}
