package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/security"
	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/pkg/engine"
)

// taskUpstream is an upstream that runs its tool "job" as a task for
// 2026-07-28 requests declaring the tasks extension (answered here as raw
// JSON-RPC: the go-sdk serves no tasks), and counts the tasks/get requests
// that reach it.
func taskUpstream(t *testing.T) (url string, gets *atomic.Int32) {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "up", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "job", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done at once"}}}, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	gets = &atomic.Int32{}
	var n atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") != "2026-07-28" {
			h.ServeHTTP(w, r)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name   string `json:"name"`
				TaskID string `json:"taskId"`
			} `json:"params"`
		}
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var result string
		switch {
		case req.Method == "tools/call" && req.Params.Name == "job":
			result = fmt.Sprintf(`{"resultType":"task","taskId":"task-%d","status":"working","ttlMs":60000,`+
				`"createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z"}`, n.Add(1))
		case req.Method == "tasks/get":
			gets.Add(1)
			result = fmt.Sprintf(`{"resultType":"complete","taskId":%q,"status":"completed","result":{"content":[{"type":"text","text":"secret of the owner"}]}}`, req.Params.TaskID)
		default:
			http.Error(w, "unexpected "+req.Method, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, result)
	}))
	t.Cleanup(hs.Close)
	return hs.URL, gets
}

// A task one caller created through the gateway is unknown to another: bob's
// tasks/get of alice's task answers exactly as one of a task that does not
// exist, and never reaches the upstream (which sees the gateway's credentials
// for both and could not tell them apart); alice reads her task. A request
// that does not declare the tasks extension is refused with -32021, and a
// call that does not declare it runs as a plain call.
// taskGateway starts a gateway in front of url behind API keys alice-key and
// bob-key; post sends one 2026-07-28 request with a key, meta the request's
// _meta with extra members.
func taskGateway(t *testing.T, url string, opts gateway.Options) (post func(key, method, name, params string) map[string]json.RawMessage, meta func(extra string) string) {
	t.Helper()
	stack, err := security.New(security.Config{ServerID: "gw", APIKeys: []string{"alice-key", "bob-key"},
		APIKeyPrincipals: []security.KeyPrincipal{{Name: "alice"}, {Name: "bob"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stack.Close)
	hc := engine.NewContext("gw")
	hc.SetLogger(slog.New(slog.DiscardHandler))
	opts.ServerID, opts.Logger = "gw", slog.New(slog.DiscardHandler)
	opts.Upstreams = []config.UpstreamConfig{{ID: "up", URL: url, Prefix: str("up.")}}
	g, err := gateway.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	comp := mcpserver.New(hc)
	hc.AddComponent("mcp-server", comp)
	if err := comp.AddServer(mcpserver.Options{ID: "gw", Addr: "127.0.0.1:0", Extension: g, HTTPMiddleware: stack.Middleware}); err != nil {
		t.Fatal(err)
	}
	if err := hc.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hc.Stop(context.Background()) })
	endpoint := "http://" + comp.Addr("gw").String() + "/mcp"
	post = func(key, method, name, params string) map[string]json.RawMessage {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":` + params + `}`
		req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, endpoint, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		if name != "" {
			req.Header.Set("Mcp-Name", name)
		}
		req.Header.Set("X-Api-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out map[string]json.RawMessage
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s: %v: %s", method, err, b)
		}
		return out
	}
	meta = func(extra string) string {
		return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}` + extra + `}`
	}
	return post, meta
}

// declaresTasks are the _meta members declaring the tasks extension.
const declaresTasks = `,"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}`

func TestRelayedTasksStayWithTheirCaller(t *testing.T) {
	t.Parallel()
	url, gets := taskUpstream(t)
	post, meta := taskGateway(t, url, gateway.Options{})
	created := post("alice-key", "tools/call", "up.job", `{"name":"up.job","arguments":{},`+meta(declaresTasks)+`}`)
	var task struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
	}
	if err := json.Unmarshal(created["result"], &task); err != nil || task.ResultType != "task" || task.TaskID == "" {
		t.Fatalf("alice's task-augmented call: %s %s", created["result"], created["error"])
	}
	get := func(key, id string) map[string]json.RawMessage {
		return post(key, "tasks/get", id, `{"taskId":"`+id+`",`+meta(declaresTasks)+`}`)
	}
	foreign, missing := get("bob-key", task.TaskID), get("bob-key", "task-none")
	var e struct {
		Code int `json:"code"`
	}
	if err := json.Unmarshal(foreign["error"], &e); err != nil || e.Code != -32602 {
		t.Fatalf("bob's tasks/get of alice's task: %s %s", foreign["result"], foreign["error"])
	}
	if a, b := strings.ReplaceAll(string(foreign["error"]), task.TaskID, "ID"), strings.ReplaceAll(string(missing["error"]), "task-none", "ID"); a != b {
		t.Errorf("bob's tasks/get of alice's task answers\n%s\nand of a missing task\n%s", a, b)
	}
	if gets.Load() != 0 {
		t.Errorf("bob's tasks/get reached the upstream")
	}
	if mine := get("alice-key", task.TaskID); !strings.Contains(string(mine["result"]), "secret of the owner") {
		t.Errorf("alice's tasks/get of her task: %s %s", mine["result"], mine["error"])
	}
	if gets.Load() != 1 {
		t.Errorf("the upstream saw %d tasks/get, want alice's one", gets.Load())
	}

	undeclared := post("alice-key", "tasks/get", task.TaskID, `{"taskId":"`+task.TaskID+`",`+meta("")+`}`)
	if err := json.Unmarshal(undeclared["error"], &e); err != nil || e.Code != -32021 {
		t.Errorf("tasks/get without the tasks extension: %s %s", undeclared["result"], undeclared["error"])
	}
	plain := post("alice-key", "tools/call", "up.job", `{"name":"up.job","arguments":{},`+meta(`,"io.modelcontextprotocol/clientCapabilities":{}`)+`}`)
	if !strings.Contains(string(plain["result"]), "done at once") {
		t.Errorf("a call without the tasks extension: %s %s", plain["result"], plain["error"])
	}
}

// countingGuard allows everything and counts Before per method; it wants the
// result of the tools named guarded.
type countingGuard struct {
	guarded string
	mu      sync.Mutex
	before  map[string]int
}

func (g *countingGuard) Visible(context.Context, *gateway.Principal, gateway.Kind, string) bool {
	return true
}

func (g *countingGuard) Before(_ context.Context, c *gateway.Call) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.before[c.Method]++
	return nil
}

func (g *countingGuard) WantsResult(c *gateway.Call) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return c.Name == g.guarded
}

func (g *countingGuard) After(_ context.Context, _ *gateway.Call, res json.RawMessage) (json.RawMessage, error) {
	return res, nil
}

func (g *countingGuard) Timeout(*gateway.Call) time.Duration { return 0 }

// methodAuditor keeps the methods and outcomes it is given.
type methodAuditor struct {
	mu   sync.Mutex
	recs []string
}

func (a *methodAuditor) Record(_ context.Context, r *gateway.Record) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.recs = append(a.recs, r.Method+" "+r.Outcome)
}

func (a *methodAuditor) Close(context.Context) error { return nil }

// The policy judges the call that creates a task, not the polls that follow
// it (they must not spend the tool's rate limit); every request is audited;
// a tool whose result a policy reads runs without a task.
func TestRelayedTasksAreGoverned(t *testing.T) {
	t.Parallel()
	url, _ := taskUpstream(t)
	guard := &countingGuard{before: map[string]int{}}
	audit := &methodAuditor{}
	post, meta := taskGateway(t, url, gateway.Options{Guard: guard, Auditor: audit})
	created := post("alice-key", "tools/call", "up.job", `{"name":"up.job","arguments":{},`+meta(declaresTasks)+`}`)
	var task struct {
		TaskID string `json:"taskId"`
	}
	if err := json.Unmarshal(created["result"], &task); err != nil || task.TaskID == "" {
		t.Fatalf("a task-augmented call: %s %s", created["result"], created["error"])
	}
	for range 2 {
		if got := post("alice-key", "tasks/get", task.TaskID, `{"taskId":"`+task.TaskID+`",`+meta(declaresTasks)+`}`); got["result"] == nil {
			t.Fatalf("tasks/get: %s", got["error"])
		}
	}
	guard.mu.Lock()
	if guard.before["tools/call"] != 1 || guard.before["tasks/get"] != 0 {
		t.Errorf("the policy judged %v, want the one tools/call", guard.before)
	}
	guard.mu.Unlock()
	audit.mu.Lock()
	if want := []string{"tools/call ok", "tasks/get ok", "tasks/get ok"}; !slices.Equal(audit.recs, want) {
		t.Errorf("audit records %v, want %v", audit.recs, want)
	}
	audit.mu.Unlock()

	guard.mu.Lock()
	guard.guarded = "up.job"
	guard.mu.Unlock()
	plain := post("alice-key", "tools/call", "up.job", `{"name":"up.job","arguments":{},`+meta(declaresTasks)+`}`)
	if !strings.Contains(string(plain["result"]), "done at once") {
		t.Errorf("a call of a tool whose result a policy reads: %s %s", plain["result"], plain["error"])
	}
}
