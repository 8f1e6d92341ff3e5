package killtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// The side effects of the kill test's workflow, each counted where it lands:
// an mcp:// call to a Helix MCP server (in this process, so it outlives the
// kills) whose tool records a receipt per execution, a postgres:// insert, and
// an http:// call to a sink that does the work once per Idempotency-Key, as a
// server honouring the header does. Every run must have caused each of them
// exactly once, however often a kill made it execute a step again.
func init() {
	e := &effects{}
	extensions = append(extensions, Extension{
		Name:  "effects",
		Setup: e.setup,
		Steps: effectSteps,
		Check: e.check,
	})
}

type effects struct {
	db string // the PostgreSQL database of the insert

	mu       sync.Mutex
	receipts map[string]int      // run → executions of the MCP tool
	requests map[string]int      // run → requests the HTTP sink received
	keys     map[string][]string // run → the distinct Idempotency-Keys of its requests
}

// effectSteps is the extension's YAML; setup gives the addresses in the
// environment.
const effectSteps = `      - set-body:
          starlang: '{"run": header("HelixRunId")}'
      - to: mcp://${env:HELIX_KILLTEST_MCP}/record
      - set-body:
          starlang: '{"run": header("HelixRunId")}'
      - to: ${env:HELIX_KILLTEST_PG}
      - set-body:
          starlang: '{"run": header("HelixRunId")}'
      - to: ${env:HELIX_KILLTEST_SINK}/effect
`

func (e *effects) setup(t *testing.T, h *Harness) {
	t.Helper()
	e.receipts, e.requests, e.keys = map[string]int{}, map[string]int{}, map[string][]string{}
	e.db = testtools.PostgresDatabase(t)
	testtools.PostgresExec(t, e.db, "CREATE TABLE killtest_effects (id serial PRIMARY KEY, run text NOT NULL)")
	mcpAddr := e.startMCP(t)
	sink := e.startSink(t)
	h.Env = append(h.Env, "HELIX_KILLTEST_MCP="+mcpAddr,
		"HELIX_KILLTEST_PG="+withQuery(e.db, "operation=insert&table=killtest_effects"), "HELIX_KILLTEST_SINK="+sink)
}

func withQuery(url, q string) string {
	for _, c := range url {
		if c == '?' {
			return url + "&" + q
		}
	}
	return url + "?" + q
}

// startMCP serves the tool "record" on a Helix MCP server and returns its address.
func (e *effects) startMCP(t *testing.T) string {
	t.Helper()
	hc := engine.NewContext("killtest-receipts")
	hc.SetLogger(slog.New(slog.DiscardHandler))
	if err := hc.AddWorkflow(&engine.Workflow{ID: "record", FromURI: "direct://record", Processors: []engine.Processor{
		engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
			args, _ := ex.In().Body().(map[string]any)
			run, _ := args["run"].(string)
			// A tool takes its time: kills land while calls run.
			time.Sleep(time.Duration(2+rand.IntN(10)) * time.Millisecond)
			e.mu.Lock()
			e.receipts[run]++
			n := e.receipts[run]
			e.mu.Unlock()
			ex.In().SetBody(fmt.Sprintf("receipt %d of %s", n, run))
			return nil
		})}}); err != nil {
		t.Fatal(err)
	}
	sc := mcpserver.New(hc)
	hc.AddComponent("mcp-server", sc)
	if err := sc.AddServer(mcpserver.Options{ID: "receipts", Addr: "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	if err := hc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hc.Stop(context.Background()) })
	return sc.Addr("receipts").String()
}

// startSink starts the HTTP sink and returns its URL.
func (e *effects) startSink(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		var body struct{ Run string }
		_ = json.Unmarshal(data, &body)
		key := r.Header.Get("Idempotency-Key")
		// A server takes its time: kills land while requests run.
		time.Sleep(time.Duration(2+rand.IntN(10)) * time.Millisecond)
		e.mu.Lock()
		e.requests[body.Run]++
		known := false
		for _, k := range e.keys[body.Run] {
			known = known || k == key
		}
		if !known {
			e.keys[body.Run] = append(e.keys[body.Run], key)
		}
		e.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func (e *effects) check(t *testing.T, _ *Harness, runIDs []string) {
	conn, err := pgx.Connect(context.Background(), e.db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), "SELECT run, count(*) FROM killtest_effects GROUP BY run")
	if err != nil {
		t.Fatal(err)
	}
	inserted := map[string]int64{}
	for rows.Next() {
		var run string
		var n int64
		if err := rows.Scan(&run, &n); err != nil {
			t.Fatal(err)
		}
		inserted[run] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	repeats := 0
	for _, id := range runIDs {
		if n := e.receipts[id]; n != 1 {
			t.Errorf("run %s: the MCP tool ran %d times, want once", id, n)
		}
		if n := inserted[id]; n != 1 {
			t.Errorf("run %s: %d rows inserted, want 1", id, n)
		}
		if keys := e.keys[id]; len(keys) != 1 || keys[0] == "" {
			t.Errorf("run %s: the HTTP sink got the keys %q, want one", id, keys)
		}
		repeats += e.requests[id] - 1
	}
	if len(inserted) != len(runIDs) || len(e.receipts) != len(runIDs) || len(e.keys) != len(runIDs) {
		t.Errorf("side effects of %d, %d and %d runs, want %d: some came from no run of the test", len(e.receipts), len(inserted), len(e.keys), len(runIDs))
	}
	t.Logf("the HTTP sink got %d repeated requests (answered once each by their key)", repeats)
}
