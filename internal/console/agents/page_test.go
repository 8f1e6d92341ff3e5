package agents_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/arvenza/helix/internal/agent"
	"github.com/arvenza/helix/internal/console"
	"github.com/arvenza/helix/internal/console/agents"
	"github.com/arvenza/helix/internal/console/browsertest"
	"github.com/arvenza/helix/internal/testtools"
)

type fixedAgents []agents.AgentInfo

func (f fixedAgents) Agents() []agents.AgentInfo { return f }

func serve(t *testing.T, rec *agents.Recorder, src agents.Source) *httptest.Server {
	t.Helper()
	m := console.NewMux(console.Options{Auth: console.AuthenticatorFunc(func(r *http.Request) (console.Principal, error) {
		return console.Principal{Name: "tester", Role: console.RoleViewer}, nil
	}), Pages: []console.Page{agents.NewPage(src, rec)}})
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	return srv
}

// noErrors fails t on what the browser reported as an error, but a missing
// /favicon.ico: a mux of one page (without the console's frame around it)
// has none, and a fresh browser asks for it.
func noErrors(t *testing.T, b *browsertest.Browser, page string) {
	t.Helper()
	for _, e := range b.WaitErrors(1) {
		if !strings.Contains(e, "favicon.ico") {
			t.Errorf("%s: the browser reported %s", page, e)
		}
	}
}

// liveText is the text of the element with id as the page has it now ("" when
// it has none): the live transcript replaces its elements, so a query that
// holds a node could find it gone.
func liveText(t *testing.T, b *browsertest.Browser, id string) string {
	t.Helper()
	s, err := browsertest.Get(b, 10*time.Second, chromedp.Evaluate[string](`(function(){var e=document.getElementById(`+strconv.Quote(id)+`);return e?e.innerText:""})()`))
	if err != nil {
		t.Fatalf("text of #%s: %v", id, err)
	}
	return s
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A transcript page opened while the run is in progress follows it: new turns
// and the end appear without reloading.
func TestRunPageIsLive(t *testing.T) {
	t.Parallel()
	rec := agents.NewRecorder(agents.Limits{})
	srv := serve(t, rec, fixedAgents{{ID: "helper"}})
	o := rec.StartRun(context.Background(), agent.RunStart{Agent: "helper", Input: "what is the weather?", Started: time.Now()})
	b := browsertest.New(t, 1280, 800)
	b.Visit(srv.URL + "/console/agents/runs/1")
	if st := liveText(t, b, "run-state"); !strings.Contains(st, "running") {
		t.Fatalf("state = %q", st)
	}
	o.ModelTurn(agent.TurnEvent{Iteration: 1, ToolCalls: []agent.ToolCall{{ID: "c1", Name: "weather", Arguments: json.RawMessage(`{"city":"Oslo"}`)}},
		Usage: agent.Usage{InputTokens: 5, OutputTokens: 2}, Latency: 3 * time.Millisecond, StopReason: "tool_calls"})
	testtools.Eventually(t, "the tool call to show", func() bool { return strings.Contains(liveText(t, b, "transcript"), "Tool call weather") })
	if tr := liveText(t, b, "transcript"); !strings.Contains(tr, "Result: waiting") {
		t.Fatalf("transcript = %s", tr)
	}
	o.ToolResult(agent.ToolEvent{CallID: "c1", Name: "weather", Text: "rain in Oslo", Latency: time.Millisecond})
	o.ModelTurn(agent.TurnEvent{Iteration: 2, Text: "It rains in Oslo.", Usage: agent.Usage{InputTokens: 9, OutputTokens: 4}})
	o.End(agent.RunEnd{Result: &agent.Result{Text: "It rains in Oslo.", Usage: agent.Usage{InputTokens: 14, OutputTokens: 6}, Iterations: 2, ToolCalls: 1}, Latency: 10 * time.Millisecond})
	testtools.Eventually(t, "the run to end on the page", func() bool { return strings.Contains(liveText(t, b, "run-state"), "done") })
	tr := liveText(t, b, "transcript")
	for _, want := range []string{"rain in Oslo", "Answer", "It rains in Oslo.", "14 in, 6 out"} {
		if !strings.Contains(tr, want) {
			t.Errorf("transcript lacks %q:\n%s", want, tr)
		}
	}
	noErrors(t, b, "live run page")
}

// Hostile or stale query strings and paths get a page that says what is
// wrong, never a crash or markup of the caller's.
func TestPagesResistBadInput(t *testing.T) {
	t.Parallel()
	rec := agents.NewRecorder(agents.Limits{})
	fakeRun(rec, "<script>alert(1)</script>", 1, "<img src=x onerror=alert(2)>")
	srv := serve(t, rec, fixedAgents{{ID: "helper", Tools: []string{"<b>t</b>"}}})
	for _, path := range []string{"/console/agents?page=-3&agent=%3Cscript%3E", "/console/agents?page=99999999999999999999",
		"/console/agents?page=abc", "/console/agents/runs/1", "/console/agents"} {
		code, body := get(t, srv.URL+path)
		if code != 200 {
			t.Errorf("%s: %d", path, code)
		}
		if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src=x") || strings.Contains(body, "<b>t</b>") {
			t.Errorf("%s: unescaped input in the page", path)
		}
	}
	code, body := get(t, srv.URL+"/console/agents/runs/%3Cx%3E")
	if code != 200 || !strings.Contains(body, "is not kept") || strings.Contains(body, "<x>") {
		t.Errorf("missing run: %d %s", code, body)
	}
	if code, body := get(t, srv.URL+"/console/agents/runs/424242/events"); code != 404 || !strings.Contains(body, "424242") {
		t.Errorf("events of a missing run: %d %s", code, body)
	}
	// A finished run's stream sends the transcript and ends at once.
	code, body = get(t, srv.URL+"/console/agents/runs/1/events")
	if code != 200 || !strings.Contains(body, "event: transcript") || !strings.Contains(body, "event: end\ndata: done") {
		t.Errorf("events of a finished run: %d %s", code, body)
	}
}

// The list is capped: a page shows at most 50 runs, says so, and links to
// the older ones; the agent filter keeps only that agent's runs.
func TestRunListIsPaginated(t *testing.T) {
	t.Parallel()
	rec := agents.NewRecorder(agents.Limits{})
	for range 120 {
		fakeRun(rec, "hello", 1, "x")
	}
	o := rec.StartRun(context.Background(), agent.RunStart{Agent: "other", Input: "other's", Started: time.Now()})
	o.End(agent.RunEnd{})
	srv := serve(t, rec, fixedAgents{})
	_, body := get(t, srv.URL+"/console/agents")
	if !strings.Contains(body, "Showing runs 1–50 of 121") || !strings.Contains(body, "Older runs") || strings.Count(body, "/console/agents/runs/") != 50 {
		t.Errorf("first page:\n%s", body)
	}
	_, body = get(t, srv.URL+"/console/agents?page=2")
	if !strings.Contains(body, "Showing runs 101–121 of 121") || strings.Contains(body, "Older runs") || !strings.Contains(body, "Newer runs") {
		t.Errorf("last page:\n%s", body)
	}
	_, body = get(t, srv.URL+"/console/agents?agent=other")
	if !strings.Contains(body, "Showing runs 1–1 of 1") || !strings.Contains(body, "other&#39;s") {
		t.Errorf("filtered:\n%s", body)
	}
	if !strings.Contains(body, "no agents") {
		t.Errorf("no agents note missing")
	}
}
