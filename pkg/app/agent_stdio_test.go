package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/agent/agenttest"
	"github.com/arvenza/helix/pkg/exchange"
)

// agentStdioHelperEnv, when set, makes TestAgentStdioHelperServer a stdio MCP
// server (this test binary run as a subprocess) instead of a test.
const agentStdioHelperEnv = "HELIX_TEST_APP_AGENT_STDIO_SERVER"

// TestAgentStdioHelperServer is not a test: run as a subprocess by the stdio tests
// with agentStdioHelperEnv set, it serves one tool, shout, over stdin/stdout.
func TestAgentStdioHelperServer(t *testing.T) {
	t.Parallel()
	if os.Getenv(agentStdioHelperEnv) == "" {
		t.Skip("helper process for the agent stdio test")
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "shouter", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "shout", Description: "Upper-cases text", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var args struct{ Text string }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.ToUpper(args.Text)}}}, nil
		})
	_ = srv.Run(context.Background(), &sdk.StdioTransport{})
	os.Exit(0) // nothing of the test framework may reach stdout
}

// helperChildren lists this process's children running the helper.
func helperChildren(t *testing.T, run string) []int {
	t.Helper()
	out, err := exec.Command("ps", "-o", "pid=,args=", "--ppid", strconv.Itoa(syscall.Getpid())).Output()
	if err != nil {
		t.Skipf("ps: %v", err)
	}
	var pids []int
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[len(f)-1] != run {
			continue
		}
		if pid, err := strconv.Atoi(f[0]); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// §4.8: a stdio MCP server of an agent is spawned when the app starts (building,
// and so helix validate, spawns nothing), its tools reach the model, and the
// subprocess ends when the app stops.
func TestAgentStdioServerLivesWithTheApp(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const run = "-test.run=^TestAgentStdioHelperServer$"
	fake := agenttest.NewOpenAI(t,
		agenttest.Reply{Calls: []agenttest.Call{{ID: "c1", Name: "shout", Args: `{"text":"hello"}`}}},
		agenttest.Reply{Text: "done"})
	cfgYAML, _ := json.Marshal(exe)
	a, err := buildYAML(t, agentYAML(`
agents:
  - id: loud
    model: {provider: openai, model: gpt-4o, api_key: k, base_url: FAKE_URL}
    tools:
      - name: shouter
        type: mcp
        mcp_server:
          command: `+string(cfgYAML)+`
          args: ["`+run+`"]
          env: {`+agentStdioHelperEnv+`: "1"}
          transport: stdio
`, fake))
	if err != nil {
		t.Fatal(err)
	}
	if pids := helperChildren(t, run); len(pids) != 0 {
		t.Fatalf("building spawned %v", pids)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = a.Stop(context.Background())
		}
	}()
	pids := helperChildren(t, run)
	if len(pids) != 1 {
		t.Fatalf("after Start: helper processes %v, want one", pids)
	}
	ex := exchange.NewWithBody(exchange.InOut, "make it loud")
	if err := a.Context().Run(ctx, "loud", ex); err != nil {
		t.Fatal(err)
	}
	if msgs, _ := json.Marshal(fake.Requests()[1]["messages"]); !strings.Contains(string(msgs), "HELLO") {
		t.Errorf("the stdio tool's result did not reach the model: %s", msgs)
	}
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	stopped = true
	for _, p := range pids {
		if err := syscall.Kill(p, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("helper %d still exists after Stop (kill -0: %v)", p, err)
		}
	}
}
