package killtest

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "modernc.org/sqlite" // reads the embedded durable store

	"github.com/arvenza/helix/internal/agent/agenttest"
)

// agentYAML is a durable agent with one tool, a workflow whose http:// step is
// the side effect: the model asks for three parallel calls of it in its first
// turn and answers with their results in its second.
const agentYAML = `helix:
  data_dir: %[1]s
  shutdown_timeout: 1s
  management:
    enabled: false
workflows:
  - id: stamp
    description: "Stamps one part of an order"
    trigger: direct://stamp
    input:
      order: { type: integer, required: true }
      part: { type: integer, required: true }
    steps:
      - to: %[4]s/stamp
agents:
  - id: concierge
    durable: true
    trigger: http-server://%[2]s/ask
    model: {provider: openai, model: m, api_key: k, base_url: %[3]s}
    tools: [stamp]
`

// agentRuns is how many questions the agent kill test asks.
const agentRuns = 100

// A durable agent with three tool calls per run, killed (SIGKILL) at random
// points under load and restarted: every question gets its answer, every run
// is completed once in the store, each tool call's side effect happens once
// (the sink does the work once per Idempotency-Key and every call has a key of
// its own), and the model is asked again for a turn, or a tool runs again, only
// for a run a kill cut off in that turn or call: a resumed agent takes the
// turns and results it had from its journal.
func TestKillNineDurableAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts helix processes")
	}
	t.Parallel()
	var mu sync.Mutex
	turns := map[string]int{}            // question → model requests
	stamps := map[string]int{}           // order/part → requests to the sink
	keys := map[string]map[string]bool{} // order/part → the keys it came with
	model := agenttest.NewOpenAIFunc(t, func(r agenttest.Request) agenttest.Reply {
		// A model takes its time: runs are in flight, in a turn, when kills land.
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		turns[r.UserMessage]++
		mu.Unlock()
		n := strings.TrimPrefix(r.UserMessage, "order ")
		if len(r.ToolResults) == 0 {
			var calls []agenttest.Call
			for i := range 3 {
				calls = append(calls, agenttest.Call{ID: "c" + strconv.Itoa(i), Name: "stamp", Args: fmt.Sprintf(`{"order": %s, "part": %d}`, n, i)})
			}
			return agenttest.Reply{Calls: calls}
		}
		var got []string
		for _, tr := range r.ToolResults {
			got = append(got, tr.Text)
		}
		return agenttest.Reply{Text: "done " + n + ": " + strings.Join(got, ",")}
	})
	// A kill cuts requests off halfway: the model (which checks every request
	// it gets) sees only whole ones, as a provider would.
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), r.Method, model.URL+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			return
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(front.Close)
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Order, Part int }
		data, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(data, &body)
		id := fmt.Sprintf("%d/%d", body.Order, body.Part)
		// A tool takes its time too: kills land while calls run.
		time.Sleep(time.Duration(5+rand.IntN(20)) * time.Millisecond)
		mu.Lock()
		stamps[id]++
		if keys[id] == nil {
			keys[id] = map[string]bool{}
		}
		keys[id][r.Header.Get("Idempotency-Key")] = true
		mu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "stamped "+id)
	}))
	t.Cleanup(sink.Close)

	dir := t.TempDir()
	h := &Harness{t: t, Dir: dir, Addr: freeAddr(t), config: filepath.Join(dir, "helix.yaml")}
	if err := os.WriteFile(h.config, []byte(fmt.Sprintf(agentYAML, dir, h.Addr, front.URL+strings.TrimPrefix(model.BaseURL(), model.URL), sink.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.Kill()
		if t.Failed() {
			t.Logf("helix output (last incarnations):\n%s", tail(h.logs.String(), 8000))
		}
	})
	h.Start()

	// A bound for a broken case, not an expectation: a loaded machine makes every
	// incarnation slow (a clean-clone run beside six builds took over three
	// minutes); a stuck incarnation fails the test at this bound.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	replies := make([]string, agentRuns)
	var done atomic.Int32
	errs := make(chan error, agentRuns)
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for n := range next {
				reply, err := h.ask(ctx, n)
				if err != nil {
					errs <- err
					continue
				}
				replies[n] = reply
				done.Add(1)
			}
		})
	}
	go func() {
		for n := range agentRuns {
			next <- n
			time.Sleep(25 * time.Millisecond)
		}
		close(next)
	}()
	// The killer: SIGKILL and restart 50–250 ms after each incarnation answered
	// its first question (a slow start, as of a -race build, still makes
	// progress), until every question is answered.
	kills := 0
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	answered := done.Load()
loop:
	for {
		select {
		case <-finished:
			break loop
		case <-time.After(time.Duration(50+rand.IntN(200)) * time.Millisecond):
			if n := done.Load(); n >= agentRuns || n == answered {
				continue
			}
			h.Kill()
			kills++
			h.Start()
			answered = done.Load()
		}
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	if kills < 3 {
		t.Fatalf("only %d kills: the test did not test recovery", kills)
	}
	states := h.Runs()
	recoveries := h.recoveries()
	mu.Lock()
	defer mu.Unlock()
	reasked, rerun := 0, 0
	for n := range agentRuns {
		want := fmt.Sprintf("done %d: stamped %d/0,stamped %d/1,stamped %d/2", n, n, n, n)
		if replies[n] != want {
			t.Errorf("question %d answered %q, want %q", n, replies[n], want)
		}
		if s := states["concierge:ask-"+strconv.Itoa(n)]; s != "completed" {
			t.Errorf("run of question %d is %q in the store", n, s)
		}
		if turns["order "+strconv.Itoa(n)] < 2 {
			t.Errorf("question %d: %d model turns, want 2", n, turns["order "+strconv.Itoa(n)])
		}
		// Each recovery of the run takes up one turn where the kill left it:
		// it asks the model again for that turn at most, and runs again only
		// that turn's calls (a journal-less agent would start over).
		again := turns["order "+strconv.Itoa(n)] - 2
		reasked += again
		rec := recoveries["concierge:ask-"+strconv.Itoa(n)]
		if again > rec {
			t.Errorf("question %d: the model was asked %d turns again in %d recoveries", n, again, rec)
		}
		calls := 0
		for i := range 3 {
			id := fmt.Sprintf("%d/%d", n, i)
			if len(keys[id]) != 1 || keys[id][""] {
				t.Errorf("call %s came with the keys %v, want one", id, keys[id])
			}
			calls += stamps[id] - 1
		}
		if calls > 3*rec {
			t.Errorf("question %d: tools ran %d times again in %d recoveries", n, calls, rec)
		}
		rerun += calls
	}
	if len(states) != agentRuns {
		t.Errorf("%d runs in the store, want %d", len(states), agentRuns)
	}
	recovered := 0
	for _, r := range recoveries {
		if r > 0 {
			recovered++
		}
	}
	if recovered == 0 {
		t.Fatalf("no run was cut off by the %d kills: the test did not test resuming", kills)
	}
	t.Logf("%d runs, %d kills, %d runs recovered, %d model turns asked again, %d tool calls sent again (each with its key)", agentRuns, kills, recovered, reasked, rerun)
}

// ask asks question n with its idempotency key until helix answers (a kill
// cuts the connection: the question is asked again, as a client would).
func (h *Harness) ask(ctx context.Context, n int) (string, error) {
	client := &http.Client{Timeout: 20 * time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+h.Addr+"/ask",
			strings.NewReader(fmt.Sprintf(`{"message": "order %d"}`, n)))
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "ask-"+strconv.Itoa(n))
		resp, err := client.Do(req)
		if err == nil {
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return string(data), nil
			}
			// 404: the process listens but its agent is not started yet.
			if resp.StatusCode < 500 && resp.StatusCode != http.StatusNotFound {
				return "", fmt.Errorf("question %d: %s: %s", n, resp.Status, data)
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("question %d: %w (last: %v)", n, ctx.Err(), err)
		case <-time.After(time.Duration(20+rand.IntN(30)) * time.Millisecond):
		}
	}
}

// recoveries returns, by run id, how many times a restart took the run up where
// a kill had left it.
func (h *Harness) recoveries() map[string]int {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(h.Dir, "durable.db")+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		h.t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT workflow_uuid, recovery_attempts FROM workflow_status`)
	if err != nil {
		h.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var attempts int
		if err := rows.Scan(&id, &attempts); err != nil {
			h.t.Fatal(err)
		}
		out[id] = max(attempts-1, 0)
	}
	if err := rows.Err(); err != nil {
		h.t.Fatal(err)
	}
	return out
}
