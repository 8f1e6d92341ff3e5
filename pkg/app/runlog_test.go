package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/engine"
)

// failureLogs is a log destination safe for concurrent writers.
type failureLogs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *failureLogs) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *failureLogs) records(t *testing.T, msg string) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		var r map[string]any
		if json.Unmarshal([]byte(line), &r) == nil && r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

// startLogged builds src with a JSON logger at the default level (info), as
// `helix run` logs without --log-level, and starts it.
func startLogged(t *testing.T, src string) (*app.App, *failureLogs) {
	t.Helper()
	cfg, err := config.LoadBytes("helix.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	logs := &failureLogs{}
	opts := quiet
	opts.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	a, err := app.Build(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return startBuilt(t, a), logs
}

func TestFailedWebhookIsLoggedAtTheDefaultLevel(t *testing.T) {
	t.Parallel()
	a, logs := startLogged(t, `
workflows:
  - id: total
    trigger: http-server://127.0.0.1:0/total
    steps:
      - transform:
          starlang: |
            "total: " + payload["n"]
`)
	status, body := post(t, httpBase(t, a, "127.0.0.1:0")+"/total", `{"n": 1}`)
	if status != 500 || !strings.Contains(body, "unknown binary op") {
		t.Fatalf("answer %d %s", status, body)
	}
	recs := logs.records(t, engine.FailureLogMessage)
	if len(recs) != 1 {
		t.Fatalf("want one failure line at the default level, got %d", len(recs))
	}
	r := recs[0]
	step, _ := r["step"].(string)
	errText, _ := r["error"].(string)
	if r["level"] != "WARN" || r["workflow"] != "total" || !strings.HasPrefix(step, "helix.yaml:6:9 transform") ||
		r["exchange"] == "" || !strings.Contains(errText, "unknown binary op") {
		t.Errorf("failure line: %v", r)
	}
}

func TestWebhookStatuses(t *testing.T) {
	t.Parallel()
	db := specDatabase(t,
		"CREATE TABLE customers (id text PRIMARY KEY)",
		"CREATE TABLE orders (id text PRIMARY KEY, qty int CHECK (qty > 0), customer text REFERENCES customers(id))")
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
	}))
	defer func() { slow.CloseClientConnections(); slow.Close() }()
	a, logs := startLogged(t, fmt.Sprintf(`
workflows:
  - id: orders
    trigger: http-server://127.0.0.1:0/orders
    steps:
      - target: %[1]s?operation=insert&table=orders
  - id: orders-lenient
    trigger: http-server://127.0.0.1:0/orders-lenient
    on_error:
      status: {conflict: 422}
    steps:
      - target: %[1]s?operation=insert&table=orders
  - id: orders-busy
    trigger: http-server://127.0.0.1:0/orders-busy
    on_error:
      status: 503
    steps:
      - target: %[1]s?operation=insert&table=orders
  - id: slow
    trigger: http-server://127.0.0.1:0/slow
    steps:
      - target: %[2]s/x?timeout=200ms
`, db, slow.URL))
	base := httpBase(t, a, "127.0.0.1:0")
	cases := []struct {
		path, body string
		want       int
	}{
		{"/orders", `{"id": "A", "qty": 1}`, 200},
		{"/orders", `{"id": "A", "qty": 1}`, 409},                  // unique violation
		{"/orders", `{"id": "B", "qty": 0}`, 422},                  // check violation
		{"/orders", `{"id": "C", "qty": 1, "customer": "x"}`, 409}, // foreign key violation
		{"/orders", `{"id": "D", "qty": "many"}`, 422},             // invalid input syntax for type integer
		{"/orders", `{"id": "E", "nope": 1}`, 500},                 // no such column: the workflow's mistake
		{"/orders", `["E"]`, 422},                                  // not a row: the body does not fit operation=insert
		{"/orders", `{"id": `, 400},                                // not JSON: the workflow does not run
		{"/orders-lenient", `{"id": "A", "qty": 1}`, 422},
		{"/orders-lenient", `{"id": "B", "qty": 0}`, 422},
		{"/orders-busy", `{"id": "A", "qty": 1}`, 503},
		{"/slow", `{}`, 504},
	}
	for _, c := range cases {
		status, body := post(t, base+c.path, c.body)
		if status != c.want {
			t.Errorf("POST %s %s: %d %s, want %d", c.path, c.body, status, body, c.want)
		}
	}
	// Every failed exchange that ran a workflow logged one line.
	if got := len(logs.records(t, engine.FailureLogMessage)); got != 10 {
		t.Errorf("failure lines = %d, want 10", got)
	}
}

func TestWebhookAnswers422WithTheSchemaProblems(t *testing.T) {
	t.Parallel()
	a, _ := startLogged(t, `
tools:
  - id: vat
    description: "VAT of a net amount"
    input:
      amount: { type: number, required: true }
      rate: { type: number, required: true }
    output:
      tax: { type: number }
    steps:
      - transform:
          starlang: |
            {"tax": payload["amount"] * payload["rate"] / 100}
workflows:
  - id: vat-hook
    trigger: http-server://127.0.0.1:0/vat
    steps:
      - target: tool://vat
`)
	base := httpBase(t, a, "127.0.0.1:0")
	if status, body := post(t, base+"/vat", `{"amount": 100, "rate": 19}`); status != 200 || !strings.Contains(body, `"tax":19`) {
		t.Fatalf("valid input: %d %s", status, body)
	}
	status, body := post(t, base+"/vat", `{"amount": "100", "rate": 19}`)
	var reply struct {
		Error  string `json:"error"`
		Errors []struct {
			Path    string `json:"path"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := json.Unmarshal([]byte(body), &reply); err != nil || status != 422 {
		t.Fatalf("invalid input: %d %s, want 422 with JSON", status, body)
	}
	if len(reply.Errors) != 1 || reply.Errors[0].Path != "/amount" || !strings.Contains(reply.Errors[0].Message, "want \"number\"") {
		t.Errorf("errors = %+v, want the problem at /amount", reply.Errors)
	}
}

// TestWebhookWithWorkflowInputAnswers422: a workflow's own input: schema refuses a
// webhook body before any step runs, and the caller gets 422 with the problems.
func TestWebhookWithWorkflowInputAnswers422(t *testing.T) {
	t.Parallel()
	a, _ := startLogged(t, `
workflows:
  - id: vat-hook
    trigger: http-server://127.0.0.1:0/vat
    input:
      amount: { type: number, required: true }
    steps:
      - transform:
          starlang: |
            {"tax": payload["amount"] * 19 / 100}
`)
	base := httpBase(t, a, "127.0.0.1:0")
	if status, body := post(t, base+"/vat", `{"amount": 100}`); status != 200 || !strings.Contains(body, `"tax":19`) {
		t.Fatalf("valid input: %d %s", status, body)
	}
	status, body := post(t, base+"/vat", `{"amount": "100"}`)
	var reply struct {
		Errors []struct {
			Path string `json:"path"`
		} `json:"errors"`
	}
	if err := json.Unmarshal([]byte(body), &reply); err != nil || status != 422 {
		t.Fatalf("invalid input: %d %s, want 422 with JSON", status, body)
	}
	if len(reply.Errors) != 1 || reply.Errors[0].Path != "/amount" {
		t.Errorf("errors = %+v, want the problem at /amount", reply.Errors)
	}
}

// TestWorkflowInputRefusalIsAFailureLikeAnyOther: a body refused by the workflow's
// input: schema is logged, takes the workflow's on_error status, and a body that is
// no JSON object is invalid input (422), not a fault.
func TestWorkflowInputRefusalIsAFailureLikeAnyOther(t *testing.T) {
	t.Parallel()
	a, logs := startLogged(t, `
workflows:
  - id: vat-hook
    trigger: http-server://127.0.0.1:0/vat
    input:
      amount: { type: number, required: true }
    steps:
      - transform:
          starlang: |
            {"tax": payload["amount"] * 19 / 100}
  - id: vat-400
    trigger: http-server://127.0.0.1:0/vat400
    on_error: { status: { invalid_input: 400 } }
    input:
      amount: { type: number, required: true }
    steps:
      - transform:
          starlang: |
            {"tax": payload["amount"] * 19 / 100}
`)
	base := httpBase(t, a, "127.0.0.1:0")
	if status, body := post(t, base+"/vat400", `{"amount": "100"}`); status != 400 {
		t.Errorf("on_error invalid_input: 400: got %d %s", status, body)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/vat", strings.NewReader("hi"))
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 422 {
		t.Errorf("a text body for an input: schema: status %d, want 422", resp.StatusCode)
	}
	deadline := time.Now().Add(testtools.StartupBound)
	for len(logs.records(t, "exchange failed")) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(logs.records(t, "exchange failed")); n != 2 {
		t.Errorf("refused inputs logged %d times, want 2", n)
	}
}

// TestToolTargetGivenNoJSONObjectAnswers422: a webhook body that is no JSON object,
// passed to a tool:// target, is the caller's invalid input, not a fault.
func TestToolTargetGivenNoJSONObjectAnswers422(t *testing.T) {
	t.Parallel()
	a, _ := startLogged(t, `
tools:
  - id: echo
    description: "Echo"
    input:
      text: { type: string }
    output:
      text: { type: string }
    steps:
      - transform:
          starlang: |
            {"text": payload.get("text", "")}
workflows:
  - id: echo-hook
    trigger: http-server://127.0.0.1:0/echo
    steps:
      - target: tool://echo
`)
	base := httpBase(t, a, "127.0.0.1:0")
	for _, body := range []string{"[1,2]", "hi"} {
		req, _ := http.NewRequest(http.MethodPost, base+"/echo", strings.NewReader(body))
		req.Header.Set("Content-Type", "text/plain")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 422 {
			t.Errorf("body %q: status %d, want 422", body, resp.StatusCode)
		}
	}
}
