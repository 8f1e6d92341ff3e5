package app_test

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/chromedp/chromedp"

	"github.com/arvenza/helix/internal/agent/agenttest"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/console/browsertest"
	"github.com/arvenza/helix/pkg/app"
)

// consoleAgentsYAML is the quickstart's greet workflows (traced) and an agent
// that calls greet as a tool, on a fake model.
const consoleAgentsYAML = `
helix:
  tracing:
    exporter: otlp
workflows:
  - id: greet-http
    trigger: http-server://127.0.0.1:0/greet?httpMethod=POST&consumes=application/json
    steps:
      - log:
          message: "greeting ${body.name}"
          level: debug
      - target: direct://greet
  - id: greet
    description: "Greet a person by name"
    trigger: direct://greet
    input:
      name: {type: string}
    steps:
      - transform:
          starlang: |
            name = payload.get("name", "World")
            {"greeting": "Hello, " ++ name ++ "!", "length": len(name)}
agents:
  - id: helper
    trigger: http-server://127.0.0.1:0/ask
    model:
      provider: openai
      model: gpt-test
      api_key: sk-console-agents-secret-5d1e
      base_url: FAKE_URL
    tools: [{name: greet, type: workflow}]
`

// consoleLink signs the browser in through the one-time link and returns the
// console's base URL ("http://addr/console").
func consoleLink(t *testing.T, b *browsertest.Browser, a *app.App) string {
	t.Helper()
	link := a.ConsoleURL()
	if link == "" {
		t.Fatal("the console is off")
	}
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	base := u.Scheme + "://" + u.Host + strings.TrimSuffix(u.Path, "/")
	b.Visit(link) // the printed link signs the browser in (a cookie) and lands on the overview
	b.NoErrors("signing in")
	return base
}

// An agent run against a fake model shows on the Agents page and as a
// transcript (the tool call with its arguments and result, tokens); the
// quickstart exchange it made is traced and its waterfall shows the steps.
// Both pages load without browser errors at 1280 and 390 px, and the model's
// API key never shows.
func TestConsoleAgentsAndTracesPages(t *testing.T) {
	t.Parallel()
	fake := agenttest.NewOpenAIFunc(t, func(r agenttest.Request) agenttest.Reply {
		if len(r.ToolResults) == 0 {
			return agenttest.Reply{Calls: []agenttest.Call{{ID: "call-1", Name: "greet", Args: `{"name":"Ada"}`}}, InputTokens: 41, OutputTokens: 9}
		}
		return agenttest.Reply{Text: "The tool says: " + r.ToolResults[0].Text, InputTokens: 77, OutputTokens: 13}
	})
	cfg, err := config.LoadBytes("helix.yaml", []byte(strings.ReplaceAll(consoleAgentsYAML, "FAKE_URL", fake.BaseURL())))
	if err != nil {
		t.Fatal(err)
	}
	opts := quiet
	opts.SpanExporter = tracetest.NewInMemoryExporter()
	a, err := app.Build(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	base := httpBase(t, a, "127.0.0.1:0")
	if code, got := post(t, base+"/ask", `{"message":"Greet Ada, please"}`); code != 200 || !strings.Contains(got, "Hello, Ada!") {
		t.Fatalf("ask: %d %q", code, got)
	}
	if code, got := post(t, base+"/greet", `{"name":"Grace"}`); code != 200 || !strings.Contains(got, "Hello, Grace!") {
		t.Fatalf("greet: %d %q", code, got)
	}

	shots := os.Getenv("HELIX_CONSOLE_SCREENSHOTS") == "1"
	b := browsertest.New(t, 1280, 900)
	console := consoleLink(t, b, a)

	// /agents: the agent with its counters, and the run.
	b.Visit(console + "/agents")
	agentsTable := b.Text("#agents")
	for _, want := range []string{"helper", "openai", "gpt-test", "greet"} {
		if !strings.Contains(agentsTable, want) {
			t.Errorf("agents table lacks %q:\n%s", want, agentsTable)
		}
	}
	runs := b.Text("#runs")
	if !strings.Contains(runs, "done") || !strings.Contains(runs, "Greet Ada, please") || !strings.Contains(runs, "118 / 22") {
		t.Errorf("runs table:\n%s", runs)
	}
	b.NoErrors("/agents")
	if shots {
		b.Screenshot(filepath.Join("..", "..", "docs", "console", "agents.png"))
	}

	// The transcript (Text waits for the new page's element): the tool call with its arguments and result, tokens.
	if err := b.Run(10*time.Second, chromedp.Click(chromedp.CSS("#runs a"))); err != nil {
		t.Fatal(err)
	}
	tr := b.Text("#transcript")
	for _, want := range []string{"Turn 1", "Tool call greet", `"name": "Ada"`, "Hello, Ada!", "41 tokens in, 9 out", "stopped: tool_calls",
		"Turn 2", "118 in, 22 out", "The tool says:"} {
		if !strings.Contains(tr, want) {
			t.Errorf("transcript lacks %q:\n%s", want, tr)
		}
	}
	b.NoErrors("/agents/runs/1")

	// /traces: the greet-http exchange's trace, and its waterfall with the steps.
	b.Visit(console + "/traces")
	list := b.Text("#traces")
	if !strings.Contains(list, "workflow greet-http") {
		t.Fatalf("traces list:\n%s", list)
	}
	b.NoErrors("/traces")
	if err := b.Run(10*time.Second, chromedp.Click(chromedp.CSS(`#traces a`))); err != nil {
		t.Fatal(err)
	}
	wf := b.Text("#waterfall")
	for _, want := range []string{"step log", "step target", "workflow greet"} {
		if !strings.Contains(wf, want) {
			t.Errorf("waterfall lacks %q:\n%s", want, wf)
		}
	}
	b.NoErrors("/traces/{id}")
	if shots {
		// Open the first step for the screenshot, as a user would.
		_ = b.Run(5*time.Second, chromedp.Click(chromedp.CSS(`#waterfall li:nth-child(2) summary`)))
		b.Screenshot(filepath.Join("..", "..", "docs", "console", "traces.png"))
	}
	if strings.Contains(b.HTML(), "sk-console-agents-secret-5d1e") {
		t.Error("the API key shows in a page")
	}

	// A phone.
	p := browsertest.New(t, 390, 844)
	consoleLink(t, p, a)
	for _, path := range []string{"/agents", "/agents/runs/1", "/traces"} {
		p.Visit(console + path)
		if strings.Contains(p.HTML(), "sk-console-agents-secret-5d1e") {
			t.Errorf("%s: the API key shows", path)
		}
		p.NoErrors(path + " at 390 px")
	}
}
