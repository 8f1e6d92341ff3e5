package client_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/exchange"
)

// sourcesYAML is one Helix node with three MCP servers (spec §12.4's scholar-ai,
// web-search and knowledge-base), each exposing one tool. The tool names are the
// workflow ids sanitized by the server ('-' becomes '_').
const sourcesYAML = `
helix:
  mcp:
    servers:
      - { enabled: true, transport: http, addr: "127.0.0.1:0", name: scholar-ai, workflows: [search-papers] }
      - { enabled: true, transport: http, addr: "127.0.0.1:0", name: web-search, workflows: [search] }
      - { enabled: true, transport: http, addr: "127.0.0.1:0", name: knowledge-base, workflows: [query] }
workflows:
  - id: search-papers
    description: "Search scholarly papers"
    trigger: { uri: direct://search-papers }
    steps:
      - set-body:
          starlang: '"3 papers on " ++ payload["topic"]'
  - id: search
    description: "Search the web"
    trigger: { uri: direct://search }
    steps:
      - set-body:
          starlang: '"12 web pages on " ++ payload["topic"]'
  - id: query
    description: "Query the knowledge base"
    trigger: { uri: direct://query }
    steps:
      - set-body:
          starlang: '"1 internal note on " ++ payload["topic"]'
`

// orchestratorYAML is spec §12.4 as written (the orchestrator server, multicast,
// aggregate, report), with the three source addresses filled in.
const orchestratorYAML = `
helix:
  mcp:
    servers:
      - enabled: true
        transport: http
        addr: "127.0.0.1:0"
        name: "orchestrator"

workflows:
  - id: research-topic
    description: "Research a topic using multiple AI sources and compile results"
    trigger:
      uri: direct://research-topic
    steps:
      # Fan out to multiple MCP AI servers in parallel
      - multicast:
          strategy: parallel
          steps:
            - target: mcp://%s/search_papers?transport=http
            - target: mcp://%s/search?transport=http
            - target: mcp://%s/query?transport=http

      # Aggregate results
      - aggregate:
          strategy: collect
          completion:
            size: 3
            timeout: 30s

      # Compile final report
      - transform:
          starlang: |
            results = payload  # list of 3 results
            report = "# Research Report\n\n"
            for i, r in enumerate(results):
                report = report ++ "## Source " ++ str(i+1) ++ "\n" ++ str(r) ++ "\n\n"
            report
`

func startYAMLApp(t *testing.T, text string) *app.App {
	t.Helper()
	a, _, err := app.Load(app.Options{Logger: slog.New(slog.DiscardHandler)}, writeYAML(t, text))
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := a.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return a
}

func serverAddr(t *testing.T, a *app.App, id string) string {
	t.Helper()
	addr := a.MCPServerAddr(id)
	if addr == nil {
		t.Fatalf("mcp server %s is not running", id)
	}
	return addr.String()
}

// TestBidirectionalMCP runs spec §12.4 for real: one Helix node serves three tools over
// MCP; a second node's research-topic workflow multicasts to them through mcp://,
// aggregates the three answers and compiles a report, and is itself exposed by the
// orchestrator MCP server — called here over MCP too.
func TestBidirectionalMCP(t *testing.T) {
	t.Parallel()
	sources := startYAMLApp(t, sourcesYAML)
	orch := startYAMLApp(t, fmt.Sprintf(orchestratorYAML,
		serverAddr(t, sources, "scholar-ai"), serverAddr(t, sources, "web-search"), serverAddr(t, sources, "knowledge-base")))

	want := "# Research Report\n\n" +
		"## Source 1\n3 papers on helix\n\n" +
		"## Source 2\n12 web pages on helix\n\n" +
		"## Source 3\n1 internal note on helix\n\n"

	// Inside the orchestrator node: a direct call of the workflow.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"topic": "helix"})
	if err := orch.Context().Send(ctx, "direct://research-topic", ex); err != nil {
		t.Fatalf("research-topic: %v", err)
	}
	if got := ex.In().Body(); got != want {
		t.Fatalf("report:\n%v\nwant:\n%s", got, want)
	}

	// From outside, over MCP: the orchestrator's tool, whose workflow calls the three
	// sources over MCP in turn.
	conn, err := mcpclient.NewConn(mcpclient.Config{Endpoint: "http://" + serverAddr(t, orch, "orchestrator") + "/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	res, err := conn.CallTool(ctx, "research_topic", map[string]any{"topic": "helix"})
	if err != nil {
		t.Fatalf("call research_topic over MCP: %v", err)
	}
	got, err := mcpclient.BodyFromResult(res)
	if err != nil || res.IsError || got != want {
		t.Fatalf("research_topic over MCP: isError=%v err=%v\n%s\nwant:\n%s", res.IsError, err, got, want)
	}

	// Concurrent research requests share the three client sessions.
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			topic := fmt.Sprintf("t%d", i)
			ex := exchange.NewWithBody(exchange.InOut, map[string]any{"topic": topic})
			if err := orch.Context().Send(ctx, "direct://research-topic", ex); err != nil {
				errs <- err
				return
			}
			body := exchange.Stringify(ex.In().Body())
			if !strings.Contains(body, "3 papers on "+topic+"\n") || !strings.Contains(body, "1 internal note on "+topic+"\n") {
				errs <- fmt.Errorf("topic %s: report %q", topic, body)
				return
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
