package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/agent/agenttest"
	"github.com/arvenza/helix/internal/testtools"
)

// examples/agent.yaml runs as its comment says against an OpenAI-compatible
// endpoint named by OPENAI_BASE_URL (here a fake speaking Chat Completions): the
// agent answers a POST to /chat and an MCP call, calling the file's calculate_vat
// tool on the way, and the model sees the key, model and tools the file gives it.
func TestRunAgentExample(t *testing.T) {
	model := agenttest.NewOpenAIFunc(t, func(r agenttest.Request) agenttest.Reply {
		if len(r.ToolResults) == 0 {
			return agenttest.Reply{Calls: []agenttest.Call{{ID: "c1", Name: "calculate_vat", Args: `{"amount":240,"rate":17}`}}}
		}
		return agenttest.Reply{Text: "calculate_vat says " + r.ToolResults[0].Text}
	})
	httpPort, mcpPort := testtools.FreePort(t), testtools.FreePort(t)
	t.Setenv("OPENAI_BASE_URL", model.BaseURL())
	t.Setenv("OPENAI_API_KEY", "sk-example-test")
	t.Setenv("OPENAI_MODEL", "example-model")
	t.Setenv("AGENT_HTTP_PORT", fmt.Sprint(httpPort))
	t.Setenv("AGENT_MCP_PORT", fmt.Sprint(mcpPort))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr testtools.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- ExecuteContext(ctx, []string{"run", "../../examples/agent.yaml"}, strings.NewReader(""), &stdout, &stderr)
	}()
	httpAddr, mcpAddr := fmt.Sprintf("127.0.0.1:%d", httpPort), fmt.Sprintf("127.0.0.1:%d", mcpPort)
	testtools.WaitForTCP(t, httpAddr, testtools.StartupBound)
	testtools.WaitForTCP(t, mcpAddr, testtools.StartupBound)

	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Post("http://"+httpAddr+"/chat", "text/plain", strings.NewReader("What is 17% VAT on 240 EUR?"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"tax":40.8`) {
		t.Errorf("POST /chat = %d %s", resp.StatusCode, body)
	}

	code, out, errOut := execute(t, "mcp", "call", mcpAddr, "assistant", "message=What is 17% VAT on 240 EUR?")
	if code != ExitOK || !strings.Contains(out, `"gross":280.8`) {
		t.Errorf("mcp call: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	reqs := model.Requests()
	if len(reqs) != 4 {
		t.Fatalf("the model got %d requests, want 4 (two runs of two turns)", len(reqs))
	}
	if reqs[0]["model"] != "example-model" || !strings.Contains(fmt.Sprint(reqs[0]["tools"]), "utc_now") {
		t.Errorf("first request: model %v, tools %v", reqs[0]["model"], reqs[0]["tools"])
	}
	if got := model.Headers()[0].Get("Authorization"); got != "Bearer sk-example-test" {
		t.Errorf("Authorization %q", got)
	}

	cancel()
	select {
	case code := <-done:
		if code != ExitOK {
			t.Errorf("exit code %d; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(testtools.StartupBound):
		t.Fatal("helix run did not stop after cancellation")
	}
	if strings.Contains(stderr.String(), "sk-example-test") {
		t.Errorf("the API key is in the logs:\n%s", stderr.String())
	}
}
